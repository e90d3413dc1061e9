// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file fuzz_loader.cc
 * \brief libFuzzer target: arbitrary bytes through the registered loader
 *        `ffi.Module.load_from_bytes.partial_apply` and `tvm_partial.Describe` of bytes.
 *
 * Built with -DTVM_PARTIAL_FUZZING (checksums not enforced, so mutations reach the structural
 * checks behind them). Oracle: no crash, hang or sanitizer report; every refusal is an ffi::Error;
 * an accepted input (its tensors built on first use: the save) re-saves to bytes that load and
 * re-save identically (the format is canonical).
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ffi = tvm::ffi;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ffi::Function load =
      *ffi::Function::GetGlobal("ffi.Module.load_from_bytes.partial_apply");
  static const ffi::Function save = *ffi::Function::GetGlobal("tvm_partial.SaveToBytes");
  static const ffi::Function describe = *ffi::Function::GetGlobal("tvm_partial.Describe");
  ffi::Bytes input(reinterpret_cast<const char*>(data), size);
  try {
    describe(input, ffi::String(""));
  } catch (const ffi::Error&) {
  }
  ffi::Any loaded;
  try {
    loaded = load(input);
  } catch (const ffi::Error&) {
    return 0;  // refused: fine
  }
  ffi::Bytes once;
  try {
    once = save(loaded).cast<ffi::Bytes>();
  } catch (const ffi::Error&) {
    return 0;  // payloads that lie in a library's file: no library here to read them from
  }
  ffi::Bytes twice = save(load(once)).cast<ffi::Bytes>();
  if (once.size() != twice.size() || std::memcmp(once.data(), twice.data(), once.size()) != 0) {
    std::abort();  // a loaded module must re-save to a fixed point
  }
  return 0;
}
