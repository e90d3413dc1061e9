// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/output_plan.cc
 * \brief What the closure does per call for its outputs, planned at bind time (outputs.h).
 */
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bind/aligned_tensor.h"
#include "bind/merge.h"
#include "bind/outputs.h"
#include "out_of_memory.h"

namespace tvm_partial {
namespace detail {

OutputPlan::OutputPlan(const Level& level, const ffi::String& name)
    : name_(name.empty() ? std::string("PartialApply") : std::string(name)),
      names_(level.param_names) {
  for (const auto& entry : level.bound) {
    if (auto tensor = entry.second.try_cast<ffi::Tensor>()) {
      default_device_ = tensor->GetDLTensorPtr()->device;
      break;
    }
  }
  taken_ = TakenPositions(level.bound, level.outputs);
  for (const Output& o : level.outputs) {
    Spec spec{o.position, o.dtype, {}, std::nullopt};
    for (const OutputDim& dim : o.shape) {  // a static extent is >= 0 (CheckOutputs)
      spec.dims.push_back(dim.arg < 0 ? Dim{dim.value, -1, 0}
                                      : Dim{-1, static_cast<int32_t>(ToCaller(taken_, dim.arg)),
                                            static_cast<int32_t>(dim.value)});
    }
    // All static: checked once; every call reuses the shape.
    if (std::all_of(spec.dims.begin(), spec.dims.end(),
                    [](const Dim& d) { return d.extent >= 0; })) {
      spec.shape = ResolveShape(spec, nullptr, 0);
    }
    specs_.push_back(std::move(spec));
  }
}

namespace {
const DLTensor* AsDLTensor(const TVMFFIAny& a) {
  if (a.type_index == kTVMFFITensor) return TVMFFITensorGetDLTensorPtr(a.v_obj);
  if (a.type_index == kTVMFFIDLTensorPtr) return static_cast<const DLTensor*>(a.v_ptr);
  return nullptr;
}
}  // namespace

std::string OutputPlan::Label(int64_t position) const { return ParamLabel(position, names_); }

void OutputPlan::ThrowDim(const Spec& spec, size_t d, const std::string& what) const {
  TVM_FFI_THROW(ValueError) << name_ << "(): output " << Label(spec.position) << " dimension " << d
                            << " " << what;
  TVM_FFI_UNREACHABLE();
}

void OutputPlan::ThrowSource(const Spec& spec, size_t d, const DLTensor* t,
                             int32_t num_args) const {
  const Dim& dim = spec.dims[d];
  const std::string source = "(axis " + std::to_string(dim.axis) + " of argument " +
                             Label(ToWrapped(taken_, dim.arg)) + ")";
  if (dim.arg >= num_args) {
    ThrowDim(spec, d, source + " has no argument to read: " + std::to_string(num_args) + " given");
  }
  if (t == nullptr) {
    TVM_FFI_THROW(TypeError) << name_ << "(): output " << Label(spec.position) << " dimension " << d
                             << " " << source << ": the argument is not a tensor";
  }
  if (dim.axis >= t->ndim) {
    ThrowDim(spec, d, source + ": the argument has ndim " + std::to_string(t->ndim));
  }
  ThrowDim(spec, d, source + " is negative (" + std::to_string(t->shape[dim.axis]) + ")");
}

ffi::Shape OutputPlan::ResolveShape(const Spec& spec, const TVMFFIAny* caller,
                                    int32_t num_args) const {
  // Sizes in 64 bits: the element count and the byte size (not the bits) must fit in int64.
  int64_t numel = 1;
  int64_t extents[kMaxOutputNdim];  // no heap on the call path
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    const Dim& dim = spec.dims[d];
    int64_t extent = dim.extent;
    if (extent < 0) {
      const DLTensor* t = dim.arg < num_args ? AsDLTensor(caller[dim.arg]) : nullptr;
      if (t == nullptr || dim.axis >= t->ndim || t->shape[dim.axis] < 0) {
        ThrowSource(spec, d, t, num_args);
      }
      extent = t->shape[dim.axis];
    }
    if (__builtin_mul_overflow(numel, extent, &numel)) {
      ThrowDim(spec, d, "makes the element count overflow 64 bits");
    }
    extents[d] = extent;
  }
  uint64_t bytes;
  if (!TensorBytes(static_cast<uint64_t>(numel), spec.dtype, &bytes)) {
    TVM_FFI_THROW(ValueError) << name_ << "(): output " << Label(spec.position) << " of " << numel
                              << " elements of " << ffi::DLDataTypeToString(spec.dtype)
                              << " takes 2^63 bytes or more, more than a tensor can hold";
  }
  return ffi::Shape(extents, extents + spec.dims.size());
}

void OutputPlan::Allocate(const TVMFFIAny* caller, int32_t num_args, ffi::Any* out) const {
  DLDevice device = default_device_;
  for (int32_t i = 0; i < num_args; ++i) {
    if (const DLTensor* t = AsDLTensor(caller[i])) {
      device = t->device;
      break;
    }
  }
  for (size_t k = 0; k < specs_.size(); ++k) {
    const Spec& spec = specs_[k];
    ffi::Shape shape = spec.shape.has_value() ? *spec.shape : ResolveShape(spec, caller, num_args);
    std::string why;
    try {
      out[k] = AlignedEmpty(std::move(shape), spec.dtype, device);
      continue;
    } catch (const ffi::Error& err) {
      if (!IsOutOfMemory(err)) {
        // Not memory (a dead RPC server, a vanished device): pass on its kind and words.
        throw ffi::Error(
            err.kind(),
            name_ + "(): allocating output " + Label(spec.position) + ": " + err.message(),
            err.backtrace());
      }
      why = err.message();
    } catch (const std::bad_alloc& err) {
      why = err.what();
    } catch (const std::length_error& err) {
      why = err.what();
    }
    TVM_FFI_THROW(MemoryError) << name_ << "(): cannot allocate output " << Label(spec.position)
                               << ": " << why;
  }
}

void OutputPlan::Return(ffi::Any* outs, ffi::Any* result) const {
  if (specs_.size() == 1) {
    *result = std::move(outs[0]);
    return;
  }
  OutOfMemoryAsMemoryError(
      [&] {
        ffi::Array<ffi::Any> all;
        all.reserve(specs_.size());
        for (size_t k = 0; k < specs_.size(); ++k) all.push_back(std::move(outs[k]));
        *result = std::move(all);
      },
      [this] { return name_ + "()"; });
}

}  // namespace detail
}  // namespace tvm_partial
