// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_function.h
 * \brief Internal: the parts of a partial function this copy of the code made (partial_apply.cc).
 */
#ifndef TVM_PARTIAL_PARTIAL_FUNCTION_H_
#define TVM_PARTIAL_PARTIAL_FUNCTION_H_

#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

/*! \brief The parts of a partial function: what it wraps and what it records. */
struct PartialParts {
  ffi::Function target;
  BoundList bound;
  ffi::String name;
  ffi::Array<ffi::String> param_names;
  Outputs outputs;  // allocated per call and returned (bind/outputs.h)
};

/*! \brief Whether `f` is a partial function of this copy, and its parts in `out` if so. */
bool GetPartialParts(const ffi::Function& f, PartialParts* out);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PARTIAL_FUNCTION_H_
