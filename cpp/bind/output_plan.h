// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/output_plan.h
 * \brief Internal: the closure's per-call output allocation, planned at bind time (no lookups
 *        per call).
 */
#ifndef TVM_PARTIAL_BIND_OUTPUT_PLAN_H_
#define TVM_PARTIAL_BIND_OUTPUT_PLAN_H_

#include <tvm/ffi/error.h>
#include <tvm_partial/partial_apply.h>

#include <string>
#include <vector>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

/*! \brief Per output: dtype and shape (static, or read from caller argument, axis); and the
 *         default device. */
class OutputPlan {
 public:
  OutputPlan() = default;
  /*! \param outputs Checked records (CheckOutputs). \param bound The same closure's bindings. */
  OutputPlan(const Outputs& outputs, const BoundList& bound, const ffi::String& name,
             const ffi::Array<ffi::String>& names);

  size_t size() const { return specs_.size(); }

  /*! \brief Allocate a call's outputs into out[0..size()), in order.
   * \throws MemoryError naming the output when memory runs out. */
  void Allocate(const TVMFFIAny* caller, int32_t num_args, ffi::Any* out) const;

  /*! \brief The call's return value: the output (one) or an Array of them (several). */
  void Return(ffi::Any* outs, ffi::Any* result) const;

 private:
  struct Dim {
    int64_t extent;  // static extent, or -1 when read from the call
    int32_t arg;     // caller argument index (when extent == -1)
    int32_t axis;
  };
  struct Spec {
    int64_t position;  // in the wrapped function (for messages)
    DLDataType dtype;
    std::vector<Dim> dims;
    ffi::Optional<ffi::Shape> shape;  // set when every dimension is static: reused by each call
  };

  ffi::Shape ResolveShape(const Spec& spec, const TVMFFIAny* caller, int32_t num_args) const;
  [[noreturn]] TVM_FFI_NO_INLINE void ThrowDim(const Spec& spec, size_t d,
                                               const std::string& what) const;
  [[noreturn]] TVM_FFI_NO_INLINE void ThrowSource(const Spec& spec, size_t d, const DLTensor* t,
                                                  int32_t num_args) const;
  std::string Label(int64_t position) const;
  /*! \brief MemoryError naming the output, and why. */
  [[noreturn]] TVM_FFI_NO_INLINE void ThrowNoMemory(const Spec& spec, const std::string& why) const;

  std::vector<Spec> specs_;
  DLDevice default_device_{kDLCPU, 0};  // of the first bound tensor, else the CPU
  std::string name_;
  ffi::Array<ffi::String> names_;
  std::vector<int64_t> taken_;  // sorted positions of bindings and outputs (for messages)
};

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_OUTPUT_PLAN_H_
