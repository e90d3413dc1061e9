// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/merge.h
 * \brief Internal: the one merge of a partial over a partial (positions, parameter names,
 *        outputs), which the closure (partial_apply.cc) and the module kind (partial_module.cc)
 *        both call, and the checks of one level that it ends with.
 */
#ifndef TVM_PARTIAL_BIND_MERGE_H_
#define TVM_PARTIAL_BIND_MERGE_H_

#include <tvm_partial/partial_apply.h>

#include <string>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

/*! \brief One level of a partial. Positions count in the argument list of the function it wraps. */
struct Level {
  BoundList bound;                      // sorted, unique, each in [0, kMaxPosition]
  ffi::Array<ffi::String> param_names;  // every parameter of that function; empty: unknown
  Outputs outputs;                      // allocated per call, in the order the call returns them
};

/*!
 * \brief The checks of one level: bound positions against the parameter names
 *        (CheckAgainstSignature), then the outputs (CheckOutputs, which also turns a dimension
 *        read from a bound tensor into its static extent). What passes, the loader accepts.
 * \throws IndexError / ValueError naming the position or output.
 */
Level CheckLevel(Level level, const std::string& who);

/*!
 * \brief Flatten `outer`, bound on top of a partial that records `inner`, into one level over the
 *        function that partial wraps. One pass over the positions (O(n + m) besides the outputs),
 *        in checked 64-bit arithmetic.
 *
 * `outer` is first checked as given (CheckLevel, so errors are in the caller's terms): its
 * positions count the inner partial's free arguments and its `param_names`, when given, name
 * those. The merged positions are checked against the merged parameter names and the reach of a
 * call, and the result is checked as CheckLevel checks, so what Merge returns the loader accepts.
 *
 * \param original The wrapped function's full parameter list (Python's signature=, the positions
 *        the inner partial takes included), used when `inner` recorded no names: it must cover
 *        every position the inner partial takes and agree with `outer.param_names` at the others.
 *        Empty: not known.
 * \return The inner bindings and the outer ones at their merged positions; the inner outputs
 *         first, then the outer ones; the recorded names (inner's, else from `original` or
 *         `outer.param_names` with "arg<i>" at the positions the inner partial takes).
 * \throws IndexError naming the outer position and where it lands when that is past the
 *         parameters or past what a call can reach; ValueError when `original` does not fit.
 */
Level Merge(const Level& inner, Level outer, const ffi::Array<ffi::String>& original,
            const std::string& who);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_MERGE_H_
