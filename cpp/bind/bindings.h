// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/bindings.h
 * \brief Internal: validated, sorted bindings (position -> value), the positions' range, and how
 *        a partial's free arguments map to positions of the function it wraps.
 */
#ifndef TVM_PARTIAL_BIND_BINDINGS_H_
#define TVM_PARTIAL_BIND_BINDINGS_H_

#include <tvm_partial/partial_apply.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tvm_partial {
namespace detail {

/*! \brief The most arguments one call carries, bound included (the FFI counts in an int32_t). */
constexpr int64_t kMaxCallArgs = INT32_MAX;
/*! \brief The largest position a call can reach: position p needs p + 1 arguments in all. */
constexpr int64_t kMaxPosition = kMaxCallArgs - 1;

/*!
 * \brief Refuse a position no call can use (also Python's, via global tvm_partial.CheckPosition).
 * \param who Prefix of error messages ("" for none).
 * \param shown The position as written when `index` is not it (a Python int past int64, clamped).
 * \throws ValueError for a negative position, IndexError for one past kMaxPosition; both name it.
 */
void CheckPosition(int64_t index, const std::string& who, const std::string& shown = "");

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

/*! \brief Check bound positions against the parameter names (when known) and that a call can pass
 *         that many.
 * \throws IndexError naming the position and the count; ValueError for an uncallable count. */
void CheckAgainstSignature(const BoundList& bound, const ffi::Array<ffi::String>& names,
                           const std::string& who);

/*! \brief The sorted positions a partial takes: those it binds and those it allocates (outputs). */
std::vector<int64_t> TakenPositions(const BoundList& bound, const Outputs& outputs);

/*! \brief The wrapped position of argument `q` of a partial taking `taken` (sorted). Linear. */
int64_t ToWrapped(const std::vector<int64_t>& taken, int64_t q);

/*! \brief The inverse: the caller argument index of free `position` of a partial taking `taken`. */
int64_t ToCaller(const std::vector<int64_t>& taken, int64_t position);

/*! \brief The wrapped positions of the free arguments, in order, of a partial taking `taken`
 *         (sorted, each below `count`) of a function of `count` parameters. */
std::vector<int64_t> FreePositions(const std::vector<int64_t>& taken, int64_t count);

/*! \brief "'w' (position 1)" when `names` names the position, else "position 1" (messages). */
std::string ParamLabel(int64_t position, const ffi::Array<ffi::String>& names);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_BINDINGS_H_
