// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file outputs.h
 * \brief Internal: outputs that a partial allocates per call and returns (`partial(...,
 *        outputs=...)`): their validation, how two levels merge, and the plan the call follows.
 *
 * Records (`Output`, public header) count positions in the wrapped function's argument list; a
 * dimension is a static extent or (argument position, axis). At bind time `OutputPlan` turns the
 * references into caller argument indexes, so the call does no lookups.
 */
#ifndef TVM_PARTIAL_OUTPUTS_H_
#define TVM_PARTIAL_OUTPUTS_H_

#include <tvm_partial/partial_apply.h>

#include <string>
#include <vector>

#include "bindings.h"

namespace tvm_partial {
namespace detail {

/*! \brief Outputs never have more dimensions than this (as bound tensors in the format). */
constexpr int64_t kMaxOutputNdim = 64;

/*!
 * \brief Check outputs against the bindings and parameter names of the same level, turning a
 *        dimension that refers to a bound tensor into its static extent.
 * \throws ValueError for a position that is negative, repeated, bound, or a reference to another
 *         output or to a bound value that is not a tensor of enough axes; IndexError past the
 *         parameters. Messages name the output (by parameter name when known) and the dimension.
 */
Outputs CheckOutputs(Outputs outputs, const BoundList& bound, const ffi::Array<ffi::String>& names,
                     const std::string& who);

/*!
 * \brief The checks the loader applies to a recorded function: as CheckOutputs, and a reference
 *        to a bound position is refused (the writer never records one). Throws ValueError.
 */
void ValidateRecordedOutputs(const Outputs& outputs, const std::vector<int64_t>& bound_positions,
                             size_t num_names, const std::string& who);

/*!
 * \brief Flatten a partial of a partial that has outputs. On entry `bound`, `outputs` and
 *        `names` are the outer level's (positions in the inner partial's argument list); on
 *        exit they are merged with `inner`'s, in the wrapped function's positions. The inner
 *        outputs come first in the returned order.
 */
void MergeLevels(const PartialParts& inner, BoundList* bound, ffi::Array<ffi::String>* names,
                 Outputs* outputs, const std::string& who);
/*! \brief The same for records of a partial module (bound, names, outputs per function). */
void MergeLevels(const BoundList& inner_bound, const Outputs& inner_outputs,
                 const ffi::Array<ffi::String>& inner_names, BoundList* bound,
                 ffi::Array<ffi::String>* names, Outputs* outputs, const std::string& who);

/*! \brief Outputs from what Python passes: [[position, dtype, [[arg or -1, axis or
 * extent]...]]...]. */
Outputs OutputsFromAny(const ffi::Any& raw, const std::string& who);
/*! \brief For introspection: [{"position", "dtype", "shape": [extent | [arg, axis]]}]. */
ffi::Array<ffi::Any> OutputsToAny(const Outputs& outputs);

/*!
 * \brief What the call does for outputs, planned at bind time: shapes static or read from caller
 *        argument (index, axis), dtype, default device.
 */
class OutputPlan {
 public:
  OutputPlan() = default;
  /*! \param outputs Checked records. \param bound The bindings of the same closure. */
  OutputPlan(const Outputs& outputs, const BoundList& bound, const ffi::String& name,
             const ffi::Array<ffi::String>& names);

  size_t size() const { return specs_.size(); }

  /*! \brief Allocate every output of a call into out[0..size()), in the order given. */
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

  std::vector<Spec> specs_;
  DLDevice default_device_{kDLCPU, 0};  // of the first bound tensor, else the CPU
  std::string name_;
  ffi::Array<ffi::String> names_;
  std::vector<int64_t> taken_;  // sorted positions of bindings and outputs (for messages)
};

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_OUTPUTS_H_
