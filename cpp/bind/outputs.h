// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/outputs.h
 * \brief Internal: checks and conversions of outputs `partial(..., outputs=)` allocates per call.
 */
#ifndef TVM_PARTIAL_BIND_OUTPUTS_H_
#define TVM_PARTIAL_BIND_OUTPUTS_H_

#include <tvm_partial/partial_apply.h>

#include <string>
#include <vector>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

// The most dimensions an output has (as for bound tensors in the format).
constexpr int64_t kMaxOutputNdim = 64;

// Checks against this level's bindings and names; a dimension of a bound tensor becomes static.
Outputs CheckOutputs(Outputs outputs, const BoundList& bound, const ffi::Array<ffi::String>& names,
                     const std::string& who);

// The loader's CheckOutputs, also refusing a bound position (the writer never records one).
void ValidateRecordedOutputs(const Outputs& outputs, const std::vector<int64_t>& bound_positions,
                             size_t num_names, const std::string& who);

// From Python's [[position, dtype, [[arg or -1, axis or extent], ...]], ...].
Outputs OutputsFromAny(const ffi::Any& raw, const std::string& who);
// For introspection: [{"position", "dtype", "shape": [extent | [arg, axis]]}].
ffi::Array<ffi::Any> OutputsToAny(const Outputs& outputs);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_OUTPUTS_H_
