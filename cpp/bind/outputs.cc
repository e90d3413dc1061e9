// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/outputs.cc
 * \brief Output records: checks at bind and load time, conversions (outputs.h).
 */
#include "bind/outputs.h"

#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <utility>

namespace tvm_partial {
namespace detail {

namespace {

const ffi::Any* FindBound(const BoundList& bound, int64_t position) {
  auto it = std::lower_bound(bound.begin(), bound.end(), position,
                             [](const auto& entry, int64_t p) { return entry.first < p; });
  return it != bound.end() && it->first == position ? &it->second : nullptr;
}

// Checks of one level that need no bound values.
void CheckShapes(const Outputs& outputs, const std::string& who,
                 const ffi::Array<ffi::String>& names) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Output& o = outputs[k];
    if (o.position < 0 || o.position >= INT32_MAX) {
      TVM_FFI_THROW(ValueError) << who << ": output position " << o.position
                                << " is out of range (0 <= position < 2^31 - 1)";
    }
    const std::string label = "output " + ParamLabel(o.position, names);
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

// Position checks shared by binding and loading; `is_bound(p)`: whether p is bound.
template <typename IsBound>
void CheckPositions(const Outputs& outputs, IsBound is_bound, size_t num_names,
                    const ffi::Array<ffi::String>& names, const std::string& who, bool loading) {
  for (const Output& o : outputs) {
    const std::string label = "output " + ParamLabel(o.position, names);
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
                                ParamLabel(dim.arg, names);
      if (std::any_of(outputs.begin(), outputs.end(),
                      [&](const Output& other) { return other.position == dim.arg; })) {
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
        TVM_FFI_THROW(ValueError) << who << ": output " << ParamLabel(o.position, names)
                                  << " dimension " << d << " is axis " << dim.value << " of "
                                  << ParamLabel(dim.arg, names) << ", which is bound to "
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

Outputs OutputsFromAny(const ffi::Any& raw, const std::string& who) {
  Outputs outputs;
  if (raw == nullptr) return outputs;
  auto refuse = [&] {
    TVM_FFI_THROW(TypeError)
        << who
        << ": outputs must be a list of [position, dtype, [[arg or -1, axis or extent], ...]]";
  };
  auto list = raw.try_cast<ffi::Array<ffi::Any>>();
  if (!list.has_value()) refuse();
  for (const ffi::Any& item : *list) {
    auto entry = item.try_cast<ffi::Array<ffi::Any>>();
    if (!entry.has_value() || entry->size() != 3) refuse();
    auto position = (*entry)[0].try_cast<int64_t>();
    auto dtype = (*entry)[1].try_cast<ffi::String>();
    auto dims = (*entry)[2].try_cast<ffi::Array<ffi::Array<int64_t>>>();
    if (!position.has_value() || !dtype.has_value() || !dims.has_value()) refuse();
    Output o{*position, ffi::StringToDLDataType(*dtype), {}};
    for (const ffi::Array<int64_t>& dim : *dims) {
      if (dim.size() != 2) refuse();
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
      shape.push_back(dim.arg < 0 ? ffi::Any(dim.value)
                                  : ffi::Any(ffi::Array<int64_t>{dim.arg, dim.value}));
    }
    out.push_back(ffi::Map<ffi::String, ffi::Any>{
        {"position", o.position}, {"dtype", ffi::DLDataTypeToString(o.dtype)}, {"shape", shape}});
  }
  return out;
}

}  // namespace detail
}  // namespace tvm_partial
