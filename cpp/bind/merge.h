// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/merge.h
 * \brief Internal: how a partial of a partial flattens into one level over the wrapped function
 *        (positions, parameter names, outputs).
 */
#ifndef TVM_PARTIAL_BIND_MERGE_H_
#define TVM_PARTIAL_BIND_MERGE_H_

#include <tvm_partial/partial_apply.h>

#include <string>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

/*!
 * \brief Merge two levels: `outer` binds positions of the argument list of a partial that holds
 *        `inner`; the result binds the same values at positions of the wrapped function.
 *        One pass over both lists (O(n + m)), in checked 64-bit arithmetic.
 * \throws IndexError naming the outer position when its merged position no call can reach.
 */
BoundList Merge(const BoundList& inner, const BoundList& outer, const std::string& who);

/*!
 * \brief Parameter names of the wrapped function after a merge: `inner_names` when known; else,
 *        when `outer_names` names the inner partial's arguments, those with "arg<i>" for the
 *        positions `inner` binds; else empty.
 */
ffi::Array<ffi::String> MergeNames(const BoundList& inner,
                                   const ffi::Array<ffi::String>& inner_names,
                                   const ffi::Array<ffi::String>& outer_names);

/*!
 * \brief The parameter names to merge with when the inner partial recorded none (`inner_names`
 *        empty) but the caller knows the wrapped function's full list (`original`: Python's
 *        signature=, the positions the inner partial binds or allocates included). `original`
 *        must cover each of those positions and, where `outer_names` (the names of the inner
 * partial's free arguments) is given, agree with it at the free positions. Otherwise `inner_names`.
 * \throws ValueError naming the disagreement.
 */
ffi::Array<ffi::String> InnerNames(const BoundList& inner_bound, const Outputs& inner_outputs,
                                   const ffi::Array<ffi::String>& inner_names,
                                   const ffi::Array<ffi::String>& outer_names,
                                   const ffi::Array<ffi::String>& original, const std::string& who);

/*!
 * \brief Flatten a partial of a partial that has outputs. On entry `bound`, `outputs` and
 *        `names` are the outer level's (positions in the inner partial's argument list); on
 *        exit they are merged with the inner level's, in the wrapped function's positions. The
 *        inner outputs come first in the returned order.
 */
void MergeLevels(const BoundList& inner_bound, const Outputs& inner_outputs,
                 const ffi::Array<ffi::String>& inner_names, BoundList* bound,
                 ffi::Array<ffi::String>* names, Outputs* outputs, const std::string& who);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_MERGE_H_
