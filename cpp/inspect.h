// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file inspect.h
 * \brief Internal: inspect of an open file, for export's own checks of what it wrote.
 */
#ifndef TVM_PARTIAL_INSPECT_H_
#define TVM_PARTIAL_INSPECT_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/string.h>

#include <memory>

#include "storage/file.h"

namespace tvm_partial {

namespace ffi = ::tvm::ffi;
using Dict = ffi::Map<ffi::String, ffi::Any>;

// tvm_partial.inspect: what the open `file` (all reads go through it; `path` names it) holds, not
// loading it; None for ONNX (Python reads it). `as_weights`: a weights file whatever its magic.
ffi::Any InspectFile(const ffi::String& path, std::shared_ptr<storage::File> file, bool as_weights);

}  // namespace tvm_partial

#endif  // TVM_PARTIAL_INSPECT_H_
