// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/merge.h
 * \brief Internal: what binding a function (partial_apply.cc) and a module (bind_module.cc)
 *        share: one level of a partial, its checks, the merge of a partial over a partial, a
 *        closure's parts, and reading a packed global's arguments.
 */
#ifndef TVM_PARTIAL_BIND_MERGE_H_
#define TVM_PARTIAL_BIND_MERGE_H_

#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>

#include <string>
#include <utility>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

// One level of a partial. Positions count in the argument list of the function it wraps.
struct Level {
  BoundList bound;                      // sorted, unique, each in [0, kMaxPosition]
  ffi::Array<ffi::String> param_names;  // every parameter of that function; empty: unknown
  Outputs outputs;                      // allocated per call, in the order the call returns them
};

// CheckAgainstSignature, then CheckOutputs (which makes a dimension read from a bound tensor
// static). What passes, the loader accepts.
Level CheckLevel(Level level, const std::string& who);

// Flatten `outer`, bound on a partial recording `inner`, into one level over the function that
// partial wraps (O(n + m) besides the outputs, in checked 64-bit arithmetic). `outer` counts (and
// names) the inner partial's free arguments and is checked as given first, so errors are in the
// caller's terms; the result is checked as by CheckLevel. `original`: the wrapped function's full
// parameter list (Python's signature=) for when `inner` recorded no names; it must cover every
// position the inner partial takes and agree with `outer.param_names` elsewhere (empty: unknown).
// Names come from `inner`, else `original`, else `outer.param_names` with "arg<i>" at the
// positions the inner partial takes.
Level Merge(const Level& inner, Level outer, const ffi::Array<ffi::String>& original,
            const std::string& who);

// What a partial function of this copy wraps and records.
struct PartialParts {
  ffi::Function target;
  ffi::String name;
  Level level;
};

// `f`'s parts if it is a partial function of this copy (they live as long as `f`), else nullptr.
const PartialParts* GetPartialParts(const ffi::Function& f);

// Refuse a call with fewer than `min` or more than `max` arguments; `usage` shows them.
inline void CheckArgCount(const ffi::PackedArgs& args, int min, int max, const char* usage) {
  if (args.size() < min || args.size() > max) {
    TVM_FFI_THROW(TypeError) << usage << " takes " << min << " to " << max << " arguments, "
                             << args.size() << " given";
  }
}

// Argument `i` as a T, else TypeError "WHO: argument NAME must be WHAT, got TYPE".
template <typename T>
T RequiredArg(const ffi::PackedArgs& args, int i, const char* who, const char* name,
              const char* what) {
  auto value = args[i].try_cast<T>();
  if (!value.has_value()) {
    TVM_FFI_THROW(TypeError) << who << ": argument " << name << " must be " << what << ", got "
                             << args[i].GetTypeKey();
  }
  return *std::move(value);
}

// Argument `i` as a T when it is given and not None, else T().
template <typename T>
T OptionalArg(const ffi::PackedArgs& args, int i) {
  return args.size() > i && args[i] != nullptr ? args[i].cast<T>() : T();
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_MERGE_H_
