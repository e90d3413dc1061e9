// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/merge.h
 * \brief Internal: merging a partial over a partial (positions, parameter names, outputs), for
 *        the closure (partial_apply.cc) and the module (partial_module.cc), and one level's checks.
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

/*! \brief One level's checks: CheckAgainstSignature, then CheckOutputs (which makes a dimension
 *         read from a bound tensor static). What passes, the loader accepts.
 * \throws IndexError / ValueError naming the position or output. */
Level CheckLevel(Level level, const std::string& who);

/*!
 * \brief Flatten `outer`, bound on a partial recording `inner`, into one level over the function
 *        that partial wraps; O(n + m) besides the outputs, in checked 64-bit arithmetic.
 *
 * `outer` counts (and its `param_names` name) the inner partial's free arguments; it is checked
 * as given first, so errors are in the caller's terms. The result is checked as by CheckLevel.
 *
 * \param original The wrapped function's full parameter list (Python's signature=), used when
 *        `inner` recorded no names: it must cover every position the inner partial takes and
 *        agree with `outer.param_names` elsewhere. Empty: unknown.
 * \return Inner bindings plus outer ones at their merged positions; inner outputs, then outer;
 *         names from `inner`, else `original`, else `outer.param_names` with "arg<i>" at the
 *         positions the inner partial takes.
 * \throws IndexError naming the outer position and where it lands, when past the parameters or
 *         a call's reach; ValueError when `original` does not fit.
 */
Level Merge(const Level& inner, Level outer, const ffi::Array<ffi::String>& original,
            const std::string& who);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_MERGE_H_
