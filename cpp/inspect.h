// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file inspect.h
 * \brief Internal: what inspect and verify share between an artifact (inspect.cc) and a weights
 *        file or index (open_weights.cc), and the weights half that `tvm_partial.Inspect` and
 *        `tvm_partial.Verify` call.
 */
#ifndef TVM_PARTIAL_INSPECT_H_
#define TVM_PARTIAL_INSPECT_H_

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <functional>

#include "storage/file.h"

namespace tvm_partial {

namespace ffi = ::tvm::ffi;
using Dict = ffi::Map<ffi::String, ffi::Any>;

/*! \brief Each entry ({"file_offset", "bytes", ...}) hashed where it lies in `file` (one
 *         progress(done, total) over them all) and marked "intact" when the hash is
 *         `expected(entry)`. */
ffi::Array<ffi::Any> CheckEntries(const ffi::Array<ffi::Any>& entries, const storage::File& file,
                                  const ffi::Optional<ffi::Function>& progress,
                                  const std::function<uint64_t(const Dict&)>& expected);

/*! \brief verify's report: {"path", "intact", "checked", "bytes", "payloads", "damaged"}. */
Dict Report(const ffi::String& path, const ffi::Array<ffi::Any>& payloads);

/*! \brief inspect of a safetensors weights file or an index of several: the keys of an
 *         artifact's description (payloads "weights file"), each tensor with its key and hash. */
Dict InspectWeights(const ffi::String& path);

/*! \brief verify of a weights file written by save_weights (or each file of an index): every
 *         payload against the hash its header records. */
Dict VerifyWeights(const ffi::String& path, const ffi::Optional<ffi::Function>& progress);

/*! \brief tvm_partial.inspect: what the file at `path` (open at `fd`) holds, without loading
 *         it; None for an ONNX model. `as_weights`: read it as a weights file whatever it is. */
ffi::Any Inspect(const ffi::String& path, int64_t fd, bool as_weights);

}  // namespace tvm_partial

#endif  // TVM_PARTIAL_INSPECT_H_
