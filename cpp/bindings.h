// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bindings.h
 * \brief Internal: validated, sorted bindings and how two levels of bindings merge.
 *        Shared by the closure (partial_apply.cc) and the module kind (partial_module.cc).
 */
#ifndef TVM_PARTIAL_BINDINGS_H_
#define TVM_PARTIAL_BINDINGS_H_

#include <tvm_partial/partial_apply.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tvm_partial {
namespace detail {

/*! \brief The most arguments one call carries (the FFI counts them in an int32_t), bound included.
 */
constexpr int64_t kMaxCallArgs = INT32_MAX;
/*! \brief The largest position a call can reach: position p needs p + 1 arguments in all. */
constexpr int64_t kMaxPosition = kMaxCallArgs - 1;

/*!
 * \brief Refuse a position no call can use.
 * \throws ValueError for a negative position, IndexError for one past kMaxPosition; both name it.
 */
void CheckPosition(int64_t index, const std::string& who);

/*! \brief Bound values sorted by position; positions are unique and non-negative. */
using BoundList = std::vector<std::pair<int64_t, ffi::Any>>;

/*!
 * \brief Check the keys of an untyped map (as it arrives from Python) and sort them.
 * \param who Prefix of error messages, e.g. "PartialApply" or "PartialApplyModule('main')".
 * \throws TypeError for a key that is not an integer; see CheckPosition for the range.
 */
BoundList FromAnyMap(const ffi::Map<ffi::Any, ffi::Any>& raw, const std::string& who);

/*! \brief Sort a typed map, refusing positions outside [0, kMaxPosition]. */
BoundList FromBindings(const Bindings& bound, const std::string& who);

/*! \brief Back to a map (for introspection and the module's records). */
Bindings ToBindings(const BoundList& list);

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
 * \brief Check bound positions against a function's parameter names (when known): every one is
 *        below their count, and the count is one a call can pass.
 * \throws IndexError naming the position and the count; ValueError for an uncallable count.
 */
void CheckAgainstSignature(const BoundList& bound, const ffi::Array<ffi::String>& names,
                           const std::string& who);

/*! \brief Whether `f` is a partial function made by this copy of the code. */
bool IsPartialFunction(const ffi::Function& f);

/*! \brief Whether `f` is a partial function of this library, and its parts if so. */
struct PartialParts {
  ffi::Function target;
  BoundList bound;
  ffi::String name;
  ffi::Array<ffi::String> param_names;
  Outputs outputs;  // allocated per call and returned (outputs.h)
};
bool GetPartialParts(const ffi::Function& f, PartialParts* out);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BINDINGS_H_
