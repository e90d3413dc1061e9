// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file zero_copy.cc
 * \brief The zero-copy export's globals (python/tvm_partial/zero_copy.py calls them): a copy of a
 *        partial_apply module that saves its payloads to a region of the library, or to a
 *        safetensors weights file beside it, and the writer of that region.
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "format.h"
#include "partial_module.h"
#include "registry.h"

namespace tvm_partial {

namespace {

/*!
 * \brief A copy of the partial_apply module `mod` whose SaveToBytes leaves the payloads to the
 *        region `symbol` of the library (and, with `weights_file`, to that file beside it).
 * \throws TypeError for another module, ValueError for a bad symbol or an empty file name.
 */
ffi::Module WithRegion(const char* who, const ffi::Module& mod, const ffi::String& symbol,
                       int64_t link, const std::optional<std::string>& weights_file) {
  if (detail::PartialModuleRecords(mod) == nullptr)
    TVM_FFI_THROW(TypeError) << who << ": not a partial_apply module";
  if (std::string(symbol).rfind(format::kRegionSymbolPrefix, 0) != 0) {
    TVM_FFI_THROW(ValueError) << who << ": the symbol must start with "
                              << format::kRegionSymbolPrefix;
  }
  if (weights_file.has_value() && weights_file->empty())
    TVM_FFI_THROW(ValueError) << who << ": empty weights file name";
  format::ExternalRegion region{std::string(symbol), static_cast<uint64_t>(link),
                                weights_file.value_or("")};
  return detail::WithExternalRegion(mod, std::move(region));
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // Zero-copy export: a copy of `mod` whose SaveToBytes leaves the payloads to a region that
  // WritePayloadRegion writes and the export links into the library under `symbol`.
  detail::RegisterGlobalOnce(
      "tvm_partial.WithExternalPayloads", [](ffi::Module mod, ffi::String symbol, int64_t link) {
        return WithRegion("WithExternalPayloads", mod, symbol, link, std::nullopt);
      });
  // The same, with the payloads in a safetensors weights file beside the library (flag 2): the
  // library's region then holds only the region header; `weights_file` is relative to its folder.
  detail::RegisterGlobalOnce(
      "tvm_partial.WithExternalWeights",
      [](ffi::Module mod, ffi::String symbol, int64_t link, ffi::String weights_file) {
        return WithRegion("WithExternalWeights", mod, symbol, link, std::string(weights_file));
      });
  detail::RegisterGlobalOnce("tvm_partial.WritePayloadRegion", [](ffi::Module mod, ffi::String path,
                                                                  int64_t lead) {
    const format::ExternalRegion* region = detail::PartialModuleRegion(mod);
    if (region == nullptr) {
      TVM_FFI_THROW(TypeError) << "WritePayloadRegion: needs a module from WithExternalPayloads";
    }
    if (lead < 0 || lead % static_cast<int64_t>(format::kPayloadAlignment) != 0) {
      TVM_FFI_THROW(ValueError) << "WritePayloadRegion: lead must be a multiple of 64, got "
                                << lead;
    }
    format::WriteRegion(*detail::PartialModuleRecords(mod), *region, std::string(path),
                        static_cast<size_t>(lead));
  });
}

}  // namespace tvm_partial
