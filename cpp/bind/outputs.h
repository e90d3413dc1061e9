// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/outputs.h
 * \brief Internal: outputs that a partial allocates per call and returns (`partial(...,
 *        outputs=...)`): their checks at bind time and at load time, and how they arrive from
 *        Python and show in introspection.
 *
 * Records (`Output`, public header) count positions in the wrapped function's argument list; a
 * dimension is a static extent or (argument position, axis). What the call does with them is
 * planned once at bind time (output_plan.h).
 */
#ifndef TVM_PARTIAL_BIND_OUTPUTS_H_
#define TVM_PARTIAL_BIND_OUTPUTS_H_

#include <tvm_partial/partial_apply.h>

#include <string>
#include <vector>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

/*! \brief Outputs never have more dimensions than this (as bound tensors in the format). */
constexpr int64_t kMaxOutputNdim = 64;

/*!
 * \brief Check outputs against the bindings and parameter names of the same level, turning a
 *        dimension that refers to a bound tensor into its static extent.
 * \throws ValueError for a position that is negative, repeated, bound, or a reference to another
 *         output or to a bound value that is not a tensor of enough axes; IndexError past the
 *         parameters. Messages name the output (by parameter name when known) and the dimension.
 */
Outputs CheckOutputs(Outputs outputs, const BoundList& bound, const ffi::Array<ffi::String>& names,
                     const std::string& who);

/*!
 * \brief The checks the loader applies to a recorded function: as CheckOutputs, and a reference
 *        to a bound position is refused (the writer never records one). Throws ValueError.
 */
void ValidateRecordedOutputs(const Outputs& outputs, const std::vector<int64_t>& bound_positions,
                             size_t num_names, const std::string& who);

/*! \brief Outputs from what Python passes: [[position, dtype, [[arg or -1, axis or
 * extent]...]]...]. */
Outputs OutputsFromAny(const ffi::Any& raw, const std::string& who);
/*! \brief For introspection: [{"position", "dtype", "shape": [extent | [arg, axis]]}]. */
ffi::Array<ffi::Any> OutputsToAny(const Outputs& outputs);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_OUTPUTS_H_
