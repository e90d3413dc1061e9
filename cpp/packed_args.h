// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file packed_args.h
 * \brief Internal: reading a packed global's arguments, with TypeErrors naming the argument.
 */
#ifndef TVM_PARTIAL_PACKED_ARGS_H_
#define TVM_PARTIAL_PACKED_ARGS_H_

#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <utility>

namespace tvm_partial {
namespace detail {

/*! \brief Refuse a call with fewer than `min` or more than `max` arguments; `usage` shows them. */
inline void CheckArgCount(const ffi::PackedArgs& args, int min, int max, const char* usage) {
  if (args.size() < min || args.size() > max) {
    TVM_FFI_THROW(TypeError) << usage << " takes " << min << " to " << max << " arguments, "
                             << args.size() << " given";
  }
}

/*! \brief Argument `i` as a T. \throws TypeError "WHO: argument NAME must be WHAT, got TYPE". */
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

/*! \brief Argument `i` as a T when it is given and not None, else T(). */
template <typename T>
T OptionalArg(const ffi::PackedArgs& args, int i) {
  return args.size() > i && args[i] != nullptr ? args[i].cast<T>() : T();
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PACKED_ARGS_H_
