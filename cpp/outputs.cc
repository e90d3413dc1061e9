// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file outputs.cc
 * \brief Outputs a partial allocates per call and returns: checks, merging, the call's plan, and
 *        the global `tvm_partial.Outputs` (introspection).
 */
#include "outputs.h"

#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <climits>
#include <sstream>
#include <string>
#include <utility>

namespace tvm_partial {
namespace detail {

namespace {

std::string Label(int64_t position, const ffi::Array<ffi::String>& names) {
  if (position >= 0 && position < static_cast<int64_t>(names.size())) {
    return "'" + std::string(names[position]) + "' (position " + std::to_string(position) + ")";
  }
  return "position " + std::to_string(position);
}

const ffi::Any* FindBound(const BoundList& bound, int64_t position) {
  auto it = std::lower_bound(bound.begin(), bound.end(), position,
                             [](const auto& entry, int64_t p) { return entry.first < p; });
  return it != bound.end() && it->first == position ? &it->second : nullptr;
}

bool IsOutput(const Outputs& outputs, int64_t position) {
  for (const Output& o : outputs) {
    if (o.position == position) return true;
  }
  return false;
}

/*! \brief Sorted positions taken by bindings and outputs. */
std::vector<int64_t> Taken(const BoundList& bound, const Outputs& outputs) {
  std::vector<int64_t> taken;
  taken.reserve(bound.size() + outputs.size());
  for (const auto& entry : bound) taken.push_back(entry.first);
  for (const Output& o : outputs) taken.push_back(o.position);
  std::sort(taken.begin(), taken.end());
  return taken;
}

/*! \brief The wrapped function's position of argument `q` of a partial taking `taken`. */
int64_t ToWrapped(const std::vector<int64_t>& taken, int64_t q) {
  int64_t position = q;
  for (int64_t t : taken) {
    if (t > position) break;
    ++position;
  }
  return position;
}

/*! \brief The caller argument index of free `position` of a partial taking `taken`. */
int64_t ToCaller(const std::vector<int64_t>& taken, int64_t position) {
  return position - (std::lower_bound(taken.begin(), taken.end(), position) - taken.begin());
}

/*! \brief Checks of one level that need neither bound values nor names. */
void CheckShapes(const Outputs& outputs, const std::string& who,
                 const ffi::Array<ffi::String>& names) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Output& o = outputs[k];
    if (o.position < 0 || o.position >= INT32_MAX) {
      TVM_FFI_THROW(ValueError) << who << ": output position " << o.position
                                << " is out of range (0 <= position < 2^31 - 1)";
    }
    const std::string label = "output " + Label(o.position, names);
    for (size_t j = 0; j < k; ++j) {
      if (outputs[j].position == o.position) {
        TVM_FFI_THROW(ValueError) << who << ": " << label << " is given twice";
      }
    }
    if (o.dtype.bits == 0 || o.dtype.lanes == 0) {
      TVM_FFI_THROW(ValueError) << who << ": " << label << " has an invalid dtype";
    }
    if (static_cast<int64_t>(o.shape.size()) > kMaxOutputNdim) {
      TVM_FFI_THROW(ValueError) << who << ": " << label << " has " << o.shape.size()
                                << " dimensions, more than " << kMaxOutputNdim;
    }
    for (size_t d = 0; d < o.shape.size(); ++d) {
      const OutputDim& dim = o.shape[d];
      if (dim.arg == -1 && dim.value < 0) {
        TVM_FFI_THROW(ValueError) << who << ": " << label << " dimension " << d
                                  << " has the negative extent " << dim.value;
      }
      if (dim.arg < -1 || dim.arg >= INT32_MAX ||
          (dim.arg >= 0 && (dim.value < 0 || dim.value >= kMaxOutputNdim))) {
        TVM_FFI_THROW(ValueError) << who << ": " << label << " dimension " << d
                                  << " refers to axis " << dim.value << " of position " << dim.arg
                                  << ", which no call can have";
      }
    }
  }
}

/*! \brief Position checks shared by binding and loading; `bound(p)` tells whether p is bound. */
template <typename IsBound>
void CheckPositions(const Outputs& outputs, IsBound is_bound, size_t num_names,
                    const ffi::Array<ffi::String>& names, const std::string& who, bool loading) {
  for (const Output& o : outputs) {
    const std::string label = "output " + Label(o.position, names);
    if (is_bound(o.position)) {
      TVM_FFI_THROW(ValueError) << who << ": " << label
                                << " is also bound; a parameter is either bound or an output";
    }
    if (num_names > 0 && o.position >= static_cast<int64_t>(num_names)) {
      if (loading) {
        TVM_FFI_THROW(ValueError) << who << ": " << label << " is past its " << num_names
                                  << " parameters";
      }
      TVM_FFI_THROW(IndexError) << who << ": " << label << " is out of range for a function of "
                                << num_names << " parameters";
    }
    for (size_t d = 0; d < o.shape.size(); ++d) {
      const OutputDim& dim = o.shape[d];
      if (dim.arg < 0) continue;
      const std::string where = who + ": " + label + " dimension " + std::to_string(d) +
                                " refers to axis " + std::to_string(dim.value) + " of " +
                                Label(dim.arg, names);
      if (IsOutput(outputs, dim.arg)) {
        TVM_FFI_THROW(ValueError) << where << ", which is an output, not an input";
      }
      if (is_bound(dim.arg)) {
        TVM_FFI_THROW(ValueError) << where << ", which is bound (record its extent instead)";
      }
      if (num_names > 0 && dim.arg >= static_cast<int64_t>(num_names)) {
        TVM_FFI_THROW(ValueError) << where << ", past the " << num_names << " parameters";
      }
    }
  }
}

}  // namespace

Outputs CheckOutputs(Outputs outputs, const BoundList& bound, const ffi::Array<ffi::String>& names,
                     const std::string& who) {
  if (outputs.empty()) return outputs;
  CheckShapes(outputs, who, names);
  // A dimension read from an argument that is now bound has a known extent: record it.
  for (Output& o : outputs) {
    for (size_t d = 0; d < o.shape.size(); ++d) {
      OutputDim& dim = o.shape[d];
      const ffi::Any* value = dim.arg >= 0 ? FindBound(bound, dim.arg) : nullptr;
      if (value == nullptr) continue;
      auto tensor = value->try_cast<ffi::Tensor>();
      if (!tensor.has_value() || dim.value >= tensor->GetDLTensorPtr()->ndim) {
        TVM_FFI_THROW(ValueError) << who << ": output " << Label(o.position, names) << " dimension "
                                  << d << " is axis " << dim.value << " of "
                                  << Label(dim.arg, names) << ", which is bound to "
                                  << (tensor.has_value() ? "a tensor of fewer axes"
                                                         : "a value that is not a tensor");
      }
      dim = OutputDim::Static(tensor->GetDLTensorPtr()->shape[dim.value]);
    }
  }
  CheckPositions(
      outputs, [&](int64_t p) { return FindBound(bound, p) != nullptr; }, names.size(), names, who,
      /*loading=*/false);
  return outputs;
}

void ValidateRecordedOutputs(const Outputs& outputs, const std::vector<int64_t>& bound_positions,
                             size_t num_names, const std::string& who) {
  CheckShapes(outputs, who, {});
  CheckPositions(
      outputs,
      [&](int64_t p) {
        return std::binary_search(bound_positions.begin(), bound_positions.end(), p);
      },
      num_names, {}, who, /*loading=*/true);
}

void MergeLevels(const BoundList& inner_bound, const Outputs& inner_outputs,
                 const ffi::Array<ffi::String>& inner_names, BoundList* bound,
                 ffi::Array<ffi::String>* names, Outputs* outputs, const std::string& who) {
  // Positions are checked before they are mapped (a negative one would map anywhere).
  CheckShapes(*outputs, who, {});
  const std::vector<int64_t> taken = Taken(inner_bound, inner_outputs);
  // The inner outputs take positions like bindings: merge with placeholders there, then drop them.
  BoundList taken_list = inner_bound;
  for (const Output& o : inner_outputs) taken_list.emplace_back(o.position, ffi::Any());
  std::sort(taken_list.begin(), taken_list.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  *names = MergeNames(taken_list, inner_names, *names);
  BoundList merged = Merge(taken_list, *bound, who);
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [&](const auto& e) { return IsOutput(inner_outputs, e.first); }),
               merged.end());
  *bound = std::move(merged);
  Outputs all = inner_outputs;
  for (Output o : *outputs) {
    o.position = ToWrapped(taken, o.position);
    for (OutputDim& dim : o.shape) {
      if (dim.arg >= 0) dim.arg = ToWrapped(taken, dim.arg);
    }
    all.push_back(std::move(o));
  }
  *outputs = std::move(all);
}

void MergeLevels(const PartialParts& inner, BoundList* bound, ffi::Array<ffi::String>* names,
                 Outputs* outputs, const std::string& who) {
  MergeLevels(inner.bound, inner.outputs, inner.param_names, bound, names, outputs, who);
}

Outputs OutputsFromAny(const ffi::Any& raw, const std::string& who) {
  Outputs outputs;
  if (raw == nullptr) return outputs;
  auto list = raw.try_cast<ffi::Array<ffi::Any>>();
  const char* expected =
      "outputs must be a list of [position, dtype, [[arg or -1, axis or extent], ...]]";
  if (!list.has_value()) TVM_FFI_THROW(TypeError) << who << ": " << expected;
  for (const ffi::Any& item : *list) {
    auto entry = item.try_cast<ffi::Array<ffi::Any>>();
    if (!entry.has_value() || entry->size() != 3)
      TVM_FFI_THROW(TypeError) << who << ": " << expected;
    auto position = (*entry)[0].try_cast<int64_t>();
    auto dtype = (*entry)[1].try_cast<ffi::String>();
    auto dims = (*entry)[2].try_cast<ffi::Array<ffi::Array<int64_t>>>();
    if (!position.has_value() || !dtype.has_value() || !dims.has_value()) {
      TVM_FFI_THROW(TypeError) << who << ": " << expected;
    }
    Output o{*position, ffi::StringToDLDataType(*dtype), {}};
    for (const ffi::Array<int64_t>& dim : *dims) {
      if (dim.size() != 2) TVM_FFI_THROW(TypeError) << who << ": " << expected;
      o.shape.push_back(OutputDim{dim[0], dim[1]});
    }
    outputs.push_back(std::move(o));
  }
  return outputs;
}

ffi::Array<ffi::Any> OutputsToAny(const Outputs& outputs) {
  ffi::Array<ffi::Any> out;
  for (const Output& o : outputs) {
    ffi::Array<ffi::Any> shape;
    for (const OutputDim& dim : o.shape) {
      if (dim.arg < 0) {
        shape.push_back(dim.value);
      } else {
        shape.push_back(ffi::Array<int64_t>{dim.arg, dim.value});
      }
    }
    ffi::Map<ffi::String, ffi::Any> entry;
    entry.Set("position", o.position);
    entry.Set("dtype", ffi::DLDataTypeToString(o.dtype));
    entry.Set("shape", shape);
    out.push_back(entry);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
OutputPlan::OutputPlan(const Outputs& outputs, const BoundList& bound, const ffi::String& name,
                       const ffi::Array<ffi::String>& names)
    : name_(name.empty() ? std::string("PartialApply") : std::string(name)), names_(names) {
  for (const auto& entry : bound) {
    if (auto tensor = entry.second.try_cast<ffi::Tensor>()) {
      default_device_ = tensor->GetDLTensorPtr()->device;
      break;
    }
  }
  taken_ = Taken(bound, outputs);
  for (const Output& o : outputs) {
    Spec spec{o.position, o.dtype, {}, std::nullopt};
    bool all_static = true;
    std::vector<int64_t> extents;
    for (const OutputDim& dim : o.shape) {
      if (dim.arg < 0) {
        spec.dims.push_back(Dim{dim.value, -1, 0});
        extents.push_back(dim.value);
      } else {
        spec.dims.push_back(Dim{-1, static_cast<int32_t>(ToCaller(taken_, dim.arg)),
                                static_cast<int32_t>(dim.value)});
        all_static = false;
      }
    }
    if (all_static) {
      // Checked once here; every call reuses the shape.
      spec.shape = ffi::Shape(extents);
      ResolveShape(spec, nullptr, 0);
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

std::string OutputPlan::Label(int64_t position) const { return detail::Label(position, names_); }

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
  // Sizes in 64 bits: the element count and the byte size must fit in int64.
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
  int64_t bits;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(spec.dtype.bits) * spec.dtype.lanes,
                             &bits)) {
    TVM_FFI_THROW(ValueError) << name_ << "(): output " << Label(spec.position) << " of " << numel
                              << " elements overflows 64 bits in bytes";
  }
  if (spec.shape.has_value()) return *spec.shape;
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
    try {
      out[k] = AlignedEmpty(std::move(shape), spec.dtype, device);
    } catch (const ffi::Error& err) {
      TVM_FFI_THROW(RuntimeError) << name_ << "(): cannot allocate output " << Label(spec.position)
                                  << ": " << err.message();
    }
  }
}

void OutputPlan::Return(ffi::Any* outs, ffi::Any* result) const {
  if (specs_.size() == 1) {
    *result = std::move(outs[0]);
    return;
  }
  ffi::Array<ffi::Any> all;
  all.reserve(specs_.size());
  for (size_t k = 0; k < specs_.size(); ++k) all.push_back(std::move(outs[k]));
  *result = std::move(all);
}

}  // namespace detail
}  // namespace tvm_partial
