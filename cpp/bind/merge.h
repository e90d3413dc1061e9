// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/merge.h
 * \brief Internal: what partial_apply.cc and bind_module.cc share (levels, checks, merge, args).
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

// Flatten `outer`, bound on a partial recording `inner`, into one level over what it wraps
// (O(n + m) besides outputs, checked 64-bit math). `outer` counts and names the inner free
// arguments and is checked first, so errors are in the caller's terms; the result as by CheckLevel.
// `original` (signature=; empty: unknown): the wrapped function's parameters if `inner` has no
// names; it must cover the inner positions and agree with `outer.param_names` elsewhere. Names come
// from `inner`, else `original`, else `outer.param_names` with "arg<i>" at inner positions.
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

inline void CheckArgCount(const ffi::PackedArgs& args, int min, int max, const char* usage) {
  if (args.size() < min || args.size() > max) {
    TVM_FFI_THROW(TypeError) << usage << " takes " << min << " to " << max << " arguments, "
                             << args.size() << " given";
  }
}

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

template <typename T>
T OptionalArg(const ffi::PackedArgs& args, int i) {
  return args.size() > i && args[i] != nullptr ? args[i].cast<T>() : T();
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_MERGE_H_
