// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/outputs.h
 * \brief Internal: outputs a partial allocates per call and returns (`partial(..., outputs=)`):
 *        checks at bind and load time, conversions, and the closure's per-call plan.
 */
#ifndef TVM_PARTIAL_BIND_OUTPUTS_H_
#define TVM_PARTIAL_BIND_OUTPUTS_H_

#include <tvm/ffi/error.h>
#include <tvm_partial/partial_apply.h>

#include <string>
#include <vector>

#include "bind/bindings.h"

namespace tvm_partial {
namespace detail {

// The most dimensions an output has (as for bound tensors in the format).
constexpr int64_t kMaxOutputNdim = 64;

// Check outputs against the same level's bindings and names, making a dimension that refers to a
// bound tensor static.
Outputs CheckOutputs(Outputs outputs, const BoundList& bound, const ffi::Array<ffi::String>& names,
                     const std::string& who);

// The loader's checks: as CheckOutputs, also refusing a reference to a bound position (the writer
// never records one).
void ValidateRecordedOutputs(const Outputs& outputs, const std::vector<int64_t>& bound_positions,
                             size_t num_names, const std::string& who);

// From Python's [[position, dtype, [[arg or -1, axis or extent], ...]], ...].
Outputs OutputsFromAny(const ffi::Any& raw, const std::string& who);
// For introspection: [{"position", "dtype", "shape": [extent | [arg, axis]]}].
ffi::Array<ffi::Any> OutputsToAny(const Outputs& outputs);

struct Level;

// A closure's output allocation, planned at bind time (no lookups per call).
class OutputPlan {
 public:
  OutputPlan() = default;
  // `level`: checked (CheckLevel), with outputs.
  OutputPlan(const Level& level, const ffi::String& name);

  // Allocate a call's outputs into out[0..), in order; MemoryError when memory runs out.
  void Allocate(const TVMFFIAny* caller, int32_t num_args, ffi::Any* out) const;

  // The call's return value: the output (one) or an Array of them (several).
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

  std::vector<Spec> specs_;
  DLDevice default_device_{kDLCPU, 0};  // of the first bound tensor, else the CPU
  std::string name_;
  ffi::Array<ffi::String> names_;
  std::vector<int64_t> taken_;  // sorted positions of bindings and outputs (for messages)
};

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_OUTPUTS_H_
