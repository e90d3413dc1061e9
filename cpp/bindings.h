/*!
 * \file bindings.h
 * \brief Internal: validated, sorted bindings and how two levels of bindings merge.
 *        Shared by the closure (partial_apply.cc) and the module kind (partial_module.cc).
 */
#ifndef TVM_PARTIAL_BINDINGS_H_
#define TVM_PARTIAL_BINDINGS_H_

#include <tvm_partial/partial_apply.h>

#include <utility>
#include <vector>

namespace tvm_partial {
namespace detail {

/*! \brief Bound values sorted by position; positions are unique and non-negative. */
using BoundList = std::vector<std::pair<int64_t, ffi::Any>>;

/*!
 * \brief Check the keys of an untyped map (as it arrives from Python) and sort them.
 * \param who Prefix of error messages, e.g. "PartialApply" or "PartialApplyModule('main')".
 * \throws TypeError for a key that is not an integer, ValueError for a negative one.
 */
BoundList FromAnyMap(const ffi::Map<ffi::Any, ffi::Any>& raw, const std::string& who);

/*! \brief Sort a typed map, refusing negative positions. */
BoundList FromBindings(const Bindings& bound, const std::string& who);

/*! \brief Back to a map (for introspection and the module's records). */
Bindings ToBindings(const BoundList& list);

/*!
 * \brief Merge two levels: `outer` binds positions of the argument list of a partial that holds
 *        `inner`; the result binds the same values at positions of the wrapped function.
 */
BoundList Merge(const BoundList& inner, const BoundList& outer);

/*!
 * \brief Parameter names of the wrapped function after a merge: `inner_names` when known; else,
 *        when `outer_names` names the inner partial's arguments, those with "arg<i>" for the
 *        positions `inner` binds; else empty.
 */
ffi::Array<ffi::String> MergeNames(const BoundList& inner, const ffi::Array<ffi::String>& inner_names,
                                   const ffi::Array<ffi::String>& outer_names);

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
