// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file inspect.h
 * \brief Internal: what inspect and verify share between artifacts (inspect.cc) and weights
 *        files or indexes (open_weights.cc).
 */
#ifndef TVM_PARTIAL_INSPECT_H_
#define TVM_PARTIAL_INSPECT_H_

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "storage/file.h"

namespace tvm_partial {

namespace ffi = ::tvm::ffi;
using Dict = ffi::Map<ffi::String, ffi::Any>;

/*! \brief Each entry ({"file_offset", "bytes", ...}) hashed where it lies in `file` (one
 *         progress(done, total) over all), marked "intact" when the hash is `expected[i]`. */
ffi::Array<ffi::Any> CheckEntries(const ffi::Array<ffi::Any>& entries,
                                  const std::vector<uint64_t>& expected, const storage::File& file,
                                  const ffi::Optional<ffi::Function>& progress);

/*! \brief verify's report: {"path", "intact", "checked", "bytes", "payloads", "damaged"}. */
Dict Report(const ffi::String& path, const ffi::Array<ffi::Any>& payloads);

/*! \brief inspect of a safetensors file or an index, `file` (open; `path` names it): an artifact
 *         description's keys (payloads "weights file"), each tensor with its key and hash. */
Dict InspectWeights(const ffi::String& path, std::shared_ptr<storage::File> file);

/*! \brief verify of a save_weights file (or each of an index's), `file` (open; `path` names
 *         it): payloads against header hashes. */
Dict VerifyWeights(const ffi::String& path, std::shared_ptr<storage::File> file,
                   const ffi::Optional<ffi::Function>& progress);

/*! \brief tvm_partial.inspect: what `file` (open: every read is of it; `path` names it) holds,
 *         without loading it; None for an ONNX model (Python reads its protobuf).
 *         `as_weights`: read it as a weights file whatever its first bytes say. */
ffi::Any InspectFile(const ffi::String& path, std::shared_ptr<storage::File> file, bool as_weights);

}  // namespace tvm_partial

#endif  // TVM_PARTIAL_INSPECT_H_
