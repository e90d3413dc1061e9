// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind_module.cc
 * \brief PartialApplyModule (over a partial module: one merged level), Hold, rebind and
 *        introspection (PartialApplyBindings, Describe); the module kind: partial_module.cc.
 */
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bind/aligned_tensor.h"
#include "bind/bindings.h"
#include "bind/merge.h"
#include "bind/outputs.h"
#include "device.h"
#include "format/format.h"
#include "format/shard.h"
#include "out_of_memory.h"
#include "partial_module.h"
#include "registry.h"

namespace tvm_partial {

namespace {

// `originals`: each function's full parameter list, where the inner partial module recorded none.
ffi::Module MakePartialModule(
    ffi::Module mod, std::vector<format::FunctionRecord> functions,
    const ffi::Map<ffi::String, ffi::Array<ffi::String>>& originals = {}) {
  const std::vector<format::FunctionRecord>* inner = detail::PartialModuleRecords(mod);
  // A partial module's code is absent when restored from bytes alone: checked at lookup then.
  ffi::Optional<ffi::Module> code =
      inner == nullptr ? ffi::Optional<ffi::Module>(mod) : detail::PartialModuleCode(mod);
  for (const format::FunctionRecord& r : functions) {
    if (code.has_value() && !(*code)->GetFunction(r.name, /*query_imports=*/true).has_value()) {
      TVM_FFI_THROW(AttributeError) << "PartialApplyModule: the module (" << (*code)->kind()
                                    << ") has no function '" << r.name << "' to bind";
    }
  }
  if (inner == nullptr) return detail::NewPartialModule(std::move(functions), mod);
  auto sharded = [](const format::FunctionRecord& r) { return !r.shards.empty(); };
  if (std::any_of(inner->begin(), inner->end(), sharded) ||
      std::any_of(functions.begin(), functions.end(), sharded)) {
    TVM_FFI_THROW(ValueError)
        << "PartialApplyModule: a partial module with shards cannot be bound again (its "
        << "levels would merge): bind every value, with shards= and world=, in one partial() "
        << "of the compiled module";
  }
  std::vector<format::FunctionRecord> merged = *inner;
  std::unordered_map<std::string, size_t> index;  // by name: a module may bind 100k+ functions
  for (size_t i = 0; i < merged.size(); ++i) index.emplace(std::string(merged[i].name), i);
  for (format::FunctionRecord& outer : functions) {
    auto found = index.find(std::string(outer.name));
    if (found == index.end()) {
      merged.push_back(std::move(outer));
      continue;
    }
    auto it = merged.begin() + found->second;
    const std::string who = "PartialApplyModule('" + std::string(outer.name) + "')";
    detail::Level level = detail::Merge(
        {std::move(it->bound), std::move(it->param_names), std::move(it->outputs)},
        {std::move(outer.bound), std::move(outer.param_names), std::move(outer.outputs)},
        originals.Get(outer.name).value_or(ffi::Array<ffi::String>()), who);
    it->bound = std::move(level.bound);
    it->param_names = std::move(level.param_names);
    it->outputs = std::move(level.outputs);
  }
  return detail::NewPartialModule(std::move(merged), code);
}

// One function's record, its positions checked against its names (when given).
format::FunctionRecord MakeRecord(const ffi::String& name,
                                  const ffi::Map<ffi::String, ffi::Array<ffi::String>>& names,
                                  detail::BoundList bound, const std::string& who,
                                  Outputs outputs = {}) {
  format::FunctionRecord r{name, names.Get(name).value_or(ffi::Array<ffi::String>()),
                           std::move(bound)};
  // Checked here against this level's bindings (as given); merged with an inner module's later.
  r.outputs = detail::CheckOutputs(std::move(outputs), r.bound, r.param_names, who);
  detail::CheckAgainstSignature(r.bound, r.param_names, who);
  return r;
}

// How messages name the binding at `position`: "parameter 'w' (position 1)".
std::string Label(const format::FunctionRecord& r, int64_t position) {
  const bool named = position >= 0 && position < static_cast<int64_t>(r.param_names.size());
  return (named ? "parameter " : "") + detail::ParamLabel(position, r.param_names);
}

// Python's [[position, dim, world(, segments)]...] (dim < 0 counts from the end), checked, sorted.
std::vector<format::Shard> CheckShards(const format::FunctionRecord& r,
                                       const ffi::Array<ffi::Array<int64_t>>& raw,
                                       const std::string& who) {
  std::vector<format::Shard> out;
  for (const ffi::Array<int64_t>& entry : raw) {
    if (entry.size() != 3 && entry.size() != 4) {
      TVM_FFI_THROW(ValueError) << who << ": a shard is [position, dim, world(, segments)]";
    }
    format::Shard s{entry[0], entry[1], entry[2], entry.size() == 4 ? entry[3] : 1};
    auto at = std::find_if(r.bound.begin(), r.bound.end(),
                           [&](const auto& b) { return b.first == s.position; });
    const std::string label = Label(r, s.position);
    if (at == r.bound.end()) {
      TVM_FFI_THROW(ValueError) << who << ": cannot shard " << label << ": it is not bound here";
    }
    auto tensor = at->second.try_cast<ffi::Tensor>();
    if (!tensor.has_value()) {
      TVM_FFI_THROW(TypeError) << who << ": cannot shard " << label << ": its bound value is a "
                               << at->second.GetTypeKey() << ", not a tensor";
    }
    if (!tensor->IsContiguous()) {
      TVM_FFI_THROW(ValueError) << who << ": cannot shard " << label
                                << ": the bound tensor is not contiguous";
    }
    const std::vector<int64_t> shape(tensor->shape().begin(), tensor->shape().end());
    const int64_t ndim = static_cast<int64_t>(shape.size());
    if (s.dim < 0 && s.dim >= -ndim) s.dim += ndim;
    const std::string problem =
        format::ShardProblem(shape, tensor->dtype(), s.dim, s.world, s.segments);
    if (!problem.empty()) {
      TVM_FFI_THROW(ValueError) << who << ": cannot shard " << label << " over world " << s.world
                                << ": " << problem;
    }
    s.layout = format::ShardLayout(shape, s.dim, s.segments);
    if (std::any_of(out.begin(), out.end(),
                    [&](const auto& o) { return o.position == s.position; })) {
      TVM_FFI_THROW(ValueError) << who << ": " << label << " is sharded twice";
    }
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(),
            [](const format::Shard& a, const format::Shard& b) { return a.position < b.position; });
  return out;
}

// What PartialRecords (partial_module.h) returns, or nullopt where it throws.
std::optional<std::vector<format::FunctionRecord>> RecordsOf(const ffi::Any& obj) {
  if (auto f = obj.try_cast<ffi::Function>()) {
    const detail::PartialParts* parts = detail::GetPartialParts(*f);
    if (parts == nullptr) return std::nullopt;
    const detail::Level& level = parts->level;
    return std::vector<format::FunctionRecord>{{"", level.param_names, level.bound, level.outputs}};
  }
  if (auto m = obj.try_cast<ffi::Module>()) {
    if (const auto* records = detail::PartialModuleRecords(*m)) return *records;
  }
  return std::nullopt;
}

// tvm_partial.Describe: all a partial function (key "") or module of this copy holds; "payloads"
// numbers distinct tensors, "constant_bytes" is their stored size (decides zero-copy export).
// Else None, or a TypeError naming the caller `who`. Bytes without `who`: format::Describe.
ffi::Optional<ffi::Map<ffi::String, ffi::Any>> Describe(const ffi::Any& obj,
                                                        const ffi::String& who) {
  if (std::optional<ffi::Bytes> bytes = obj.try_cast<ffi::Bytes>(); bytes && who.empty()) {
    return format::Describe(format::Parse(bytes->data(), bytes->size()));
  }
  std::optional<std::vector<format::FunctionRecord>> records = RecordsOf(obj);
  if (!records.has_value()) {
    if (!who.empty()) detail::PartialRecords(obj, who.c_str());  // throws, naming what was given
    return std::nullopt;
  }
  ffi::Map<ffi::String, Bindings> bindings;
  ffi::Map<ffi::String, ffi::Array<ffi::String>> names;
  ffi::Map<ffi::String, ffi::Array<ffi::Any>> outputs;
  ffi::Map<ffi::String, ffi::Array<ffi::Array<int64_t>>> shards;
  ffi::Map<ffi::String, ffi::Map<int64_t, int64_t>> payloads;
  const std::vector<std::vector<int64_t>> numbers = format::TensorNumbers(*records);
  for (size_t f = 0; f < records->size(); ++f) {
    const format::FunctionRecord& r = (*records)[f];
    bindings.Set(r.name, detail::ToBindings(r.bound));
    if (!r.param_names.empty()) names.Set(r.name, r.param_names);
    if (!r.outputs.empty()) outputs.Set(r.name, detail::OutputsToAny(r.outputs));
    ffi::Array<ffi::Array<int64_t>> split;
    for (const format::Shard& sh : r.shards)
      split.push_back({sh.position, sh.dim, sh.world, sh.segments});
    if (!split.empty()) shards.Set(r.name, split);
    ffi::Map<int64_t, int64_t> fn;
    for (size_t b = 0; b < r.bound.size(); ++b) {
      if (numbers[f][b] >= 0) fn.Set(r.bound[b].first, numbers[f][b]);
    }
    if (!fn.empty()) payloads.Set(r.name, fn);
  }
  uint64_t bytes = 0;
  for (const ffi::Tensor& t : format::PayloadTensors(*records)) {
    bytes += format::PayloadBytes(*t.GetDLTensorPtr());
  }
  ffi::Optional<ffi::Module> code;
  if (auto m = obj.try_cast<ffi::Module>()) code = detail::PartialModuleCode(*m);
  return ffi::Map<ffi::String, ffi::Any>{
      {"code", code},         {"bindings", bindings},
      {"names", names},       {"outputs", outputs},
      {"shards", shards},     {"shard_rank", detail::ShardRankOf(obj)},
      {"payloads", payloads}, {"constant_bytes", static_cast<int64_t>(bytes)}};
}

// runtime.PartialApplyModule from Python; bindings are {name: {position: value}}.
void PartialApplyModulePacked(ffi::PackedArgs args, ffi::Any* rv) {
  detail::CheckArgCount(args, 2, 6,
                        "runtime.PartialApplyModule(mod, bindings, param_names={}, outputs={}, "
                        "original_names={}, shards={})");
  auto mod = detail::RequiredArg<ffi::Module>(args, 0, "PartialApplyModule", "mod", "a Module");
  auto raw = detail::RequiredArg<ffi::Map<ffi::String, ffi::Map<ffi::Any, ffi::Any>>>(
      args, 1, "PartialApplyModule", "bindings", "a map of function names to {position: value}");
  auto names = detail::OptionalArg<ffi::Map<ffi::String, ffi::Array<ffi::String>>>(args, 2);
  auto outputs = detail::OptionalArg<ffi::Map<ffi::String, ffi::Any>>(args, 3);
  auto shards =
      detail::OptionalArg<ffi::Map<ffi::String, ffi::Array<ffi::Array<int64_t>>>>(args, 5);
  std::vector<format::FunctionRecord> functions;
  for (const auto& [name, bound] : raw) {
    const std::string who = "PartialApplyModule('" + std::string(name) + "')";
    Outputs outs = outputs.count(name) ? detail::OutputsFromAny(outputs.at(name), who) : Outputs();
    functions.push_back(
        MakeRecord(name, names, detail::FromAnyMap(bound, who), who, std::move(outs)));
    if (shards.count(name)) {
      functions.back().shards = CheckShards(functions.back(), shards.at(name), who);
    }
  }
  auto refuse_unbound = [&raw](const auto& map, const char* what, const char* hint) {
    for (const auto& [name, _] : map) {
      if (!raw.count(name)) {
        TVM_FFI_THROW(ValueError) << "PartialApplyModule: " << what << " for function '" << name
                                  << "', which has no entry in bindings" << hint;
      }
    }
  };
  refuse_unbound(shards, "shards", "");
  refuse_unbound(outputs, "outputs", " (give it {} there)");
  *rv = MakePartialModule(
      mod, std::move(functions),
      detail::OptionalArg<ffi::Map<ffi::String, ffi::Array<ffi::String>>>(args, 4));
}

// tvm_partial.Rebind: `mod` over the same code, `function`'s values at `values`' positions
// replaced, all else kept; a tied tensor in every place `values` gives no value of its own.
ffi::Module RebindAt(ffi::Module mod, ffi::String function, ffi::Map<int64_t, ffi::Any> values) {
  const std::vector<format::FunctionRecord>* held = detail::PartialModuleRecords(mod);
  if (held == nullptr) {
    TVM_FFI_THROW(TypeError) << "rebind needs a partial module, got a module of kind "
                             << mod->kind();
  }
  if (const int64_t rank = detail::ShardRankOf(mod); rank >= 0) {
    TVM_FFI_THROW(ValueError)
        << "rebind: this partial module is rank " << rank << "'s view of sharded tensors (loaded "
        << "with shard=); rebind the whole module (load(path) without shard=, or the one "
        << "partial() made), export it, and load the rank again";
  }
  ffi::Optional<ffi::Module> code = detail::PartialModuleCode(mod);
  if (!code.has_value()) {
    TVM_FFI_THROW(ValueError)
        << "rebind: this partial module wraps no compiled code (it was restored from bytes "
        << "alone); give it its code when loading: tvm_partial.load_from_bytes(data, wrapped=exe)";
  }
  std::vector<format::FunctionRecord> records = *held;
  auto fn = std::find_if(records.begin(), records.end(),
                         [&](const format::FunctionRecord& r) { return r.name == function; });
  if (fn == records.end() || fn->bound.empty()) {
    std::string names;
    for (const format::FunctionRecord& r : records) {
      if (!r.bound.empty()) names += (names.empty() ? "" : ", ") + std::string(r.name);
    }
    TVM_FFI_THROW(KeyError) << "rebind: function '" << function
                            << "' has no bindings (bound: " << (names.empty() ? "none" : names)
                            << ")";
  }
  const size_t f = fn - records.begin();
  const std::vector<std::vector<int64_t>> numbers = format::TensorNumbers(records);
  std::vector<size_t> places;  // the binding of `fn` each value given replaces
  for (const auto& [position, value] : values) {
    auto at = std::find_if(fn->bound.begin(), fn->bound.end(),
                           [position = position](const auto& b) { return b.first == position; });
    if (at == fn->bound.end() || value.type_index() == ffi::TypeIndex::kTVMFFINone) {
      std::string bound;
      for (const auto& b : fn->bound)
        bound += (bound.empty() ? "" : ", ") + std::to_string(b.first);
      TVM_FFI_THROW(IndexError) << "rebind: position " << position << " of " << function
                                << "() is not bound (bound: [" << bound
                                << "]); rebind replaces bound values";
    }
    const auto old = at->second.try_cast<ffi::Tensor>();
    const auto now = value.try_cast<ffi::Tensor>();
    auto same = [](const DLTensor& a, const DLTensor& b) {
      return a.dtype == b.dtype && a.ndim == b.ndim &&
             std::equal(a.shape, a.shape + a.ndim, b.shape);
    };
    if (old.has_value() != now.has_value() ||
        (old.has_value() && !same(*old->GetDLTensorPtr(), *now->GetDLTensorPtr()))) {
      TVM_FFI_THROW(TypeError) << "rebind: " << Label(*fn, position)
                               << " takes a value of the kind bound there (a tensor of the same "
                               << "dtype and shape, or a scalar)";
    }
    if (old.has_value() && (old->device().device_type != now->device().device_type ||
                            old->device().device_id != now->device().device_id)) {
      const DLDevice was = old->device(), is = now->device();  // a kernel reads only its own
      TVM_FFI_THROW(ValueError) << "rebind: " << Label(*fn, position) << " is bound on "
                                << detail::DeviceString(was.device_type, was.device_id)
                                << ", the replacement is on "
                                << detail::DeviceString(is.device_type, is.device_id)
                                << ": give a tensor there (Python: device=)";
    }
    places.push_back(at - fn->bound.begin());
  }
  for (size_t b : places) {  // tied places first, then the given ones: a given value wins
    const int64_t number = numbers[f][b];
    for (size_t h = 0; number >= 0 && h < records.size(); ++h) {
      for (size_t c = 0; c < records[h].bound.size(); ++c) {
        if (numbers[h][c] == number) records[h].bound[c].second = values.at(fn->bound[b].first);
      }
    }
  }
  for (size_t b : places) fn->bound[b].second = values.at(fn->bound[b].first);
  const bool same = mod->imports()[0].cast<ffi::Module>().same_as(*code);
  return detail::NewPartialModule(std::move(records), code,
                                  same ? detail::LibraryFile(mod) : nullptr);
}

// Views with equal keys share one copy (strides empty when contiguous; last two: the target).
using MemoryKey = std::tuple<uintptr_t, uint32_t, std::vector<int64_t>, std::vector<int64_t>,
                             int32_t, int32_t, int32_t, int32_t>;

MemoryKey KeyOf(const ffi::Tensor& t, DLDevice to) {
  const DLTensor& d = *t.GetDLTensorPtr();
  std::vector<int64_t> strides;
  if (!t.IsContiguous()) strides.assign(t.strides().begin(), t.strides().end());
  return std::make_tuple(
      reinterpret_cast<uintptr_t>(d.data) + d.byte_offset,
      uint32_t{d.dtype.code} << 24 | uint32_t{d.dtype.bits} << 16 | d.dtype.lanes,
      std::vector<int64_t>(t.shape().begin(), t.shape().end()), std::move(strides),
      d.device.device_type, d.device.device_id, to.device_type, to.device_id);
}

// Whether a tvm Tensor given is held as is: contiguous and aligned, or remote (its server aligns).
bool HeldAsIs(const ffi::Tensor& t) {
  const DLTensor& d = *t.GetDLTensorPtr();
  return t.IsContiguous() &&
         (d.device.device_type >= detail::kRPCSessMask ||
          (reinterpret_cast<uintptr_t>(d.data) + d.byte_offset) % detail::kTensorAlignment == 0);
}

// "cannot VERB LABEL", how Hold's errors about `item` begin.
std::string Where(const ffi::Array<ffi::Any>& item, const ffi::String& verb) {
  return "cannot " + std::string(verb) + " " + std::string(item[5].cast<ffi::String>());
}

// Refuse a view whose dtype or shape differs from its parameter's (None: any); a split (item[6])
// is checked by one rank's shard, as the kernel gets it; a bad split is for the bind to explain.
void CheckAgainstParam(const ffi::Array<ffi::Any>& item, const ffi::String& verb) {
  const auto t = item[0].cast<ffi::Tensor>();
  if (t.dtype().code == kDLComplex) {
    TVM_FFI_THROW(TypeError) << Where(item, verb) << ": complex" << int{t.dtype().bits}
                             << " tensors cannot be bound: TVM has no complex dtypes; bind the "
                                "real and imaginary parts as a float tensor "
                                "(torch.view_as_real(t), or a numpy array's .view(float32 or "
                                "float64))";
  }
  std::string name;
  try {
    name = ffi::DLDataTypeToString(t.dtype());
  } catch (const ffi::Error& err) {
    TVM_FFI_THROW(TypeError) << Where(item, verb) << ": TVM has no dtype for this tensor ("
                             << err.message() << ")";
  }
  const ffi::Any& dtype = item[2];
  if (dtype != nullptr && name != dtype.cast<ffi::String>()) {
    TVM_FFI_THROW(TypeError) << Where(item, verb) << ": dtype " << name << " does not match "
                             << item[4].cast<ffi::String>();
  }
  if (item[3] == nullptr) return;
  std::vector<int64_t> shape(t.shape().begin(), t.shape().end());
  std::string whole;
  if (item.size() > 6 && item[6] != nullptr) {
    const auto split = item[6].cast<ffi::Array<int64_t>>();
    if (split.size() != 3) TVM_FFI_THROW(ValueError) << "Hold: a split is [dim, world, segments]";
    const int64_t ndim = static_cast<int64_t>(shape.size());
    const int64_t dim = split[0] < 0 && split[0] >= -ndim ? split[0] + ndim : split[0];
    if (!format::ShardProblem(shape, t.dtype(), dim, split[1], split[2]).empty()) return;
    whole = " (one rank's shard of " + detail::ShapeString(ffi::Shape(t.shape())) + ")";
    shape = format::ShardShape(shape, dim, split[1]);
  }
  const auto want = item[3].cast<ffi::Array<ffi::Any>>();
  if (!std::equal(
          want.begin(), want.end(), shape.begin(), shape.end(),
          [](const ffi::Any& w, int64_t n) { return w == nullptr || w.cast<int64_t>() == n; })) {
    TVM_FFI_THROW(ValueError) << Where(item, verb) << whole << ": shape "
                              << detail::ShapeString(ffi::Shape(shape)) << " does not match "
                              << item[4].cast<ffi::String>();
  }
}

// tvm_partial.Hold: views of the caller's memory (numpy, torch, DLPack), checked, then copied into
// aligned memory on `device`, once per memory (tied weights); a tvm Tensor given (`keep`) is held
// as is where HeldAsIs, else copied on its own device. Item: [view, keep, dtype|None, shape (ints
// or None)|None, the parameter as errors name it, the value's label(, its split or None)].
ffi::Array<ffi::Tensor> Hold(const ffi::Array<ffi::Array<ffi::Any>>& items, DLDevice device,
                             const ffi::String& verb) {
  for (const auto& item : items) CheckAgainstParam(item, verb);
  std::map<MemoryKey, ffi::Tensor> made;
  ffi::Array<ffi::Tensor> out;
  for (const auto& item : items) {
    auto view = item[0].cast<ffi::Tensor>();
    const DLTensor& d = *view.GetDLTensorPtr();
    const bool keep = item[1].cast<bool>();
    const DLDevice to = keep ? d.device : device;
    if (keep && HeldAsIs(view)) {
      out.push_back(view);
      continue;
    }
    const bool shared = d.data != nullptr && view.numel() > 0;
    const MemoryKey key = shared ? KeyOf(view, to) : MemoryKey{};
    if (auto found = made.find(key); shared && found != made.end()) {
      out.push_back(found->second);
      continue;
    }
    ffi::Tensor copy;
    try {
      copy = AlignedCopy(view, to);
    } catch (const ffi::Error& err) {
      uint64_t bytes = 0;
      if (!detail::IsOutOfMemory(err)) {
        TVM_FFI_THROW(TypeError) << Where(item, verb) << ": not a usable tensor (" << err.message()
                                 << ")";
      }
      detail::TensorBytes(view.numel(), d.dtype, &bytes);
      TVM_FFI_THROW(MemoryError) << Where(item, verb) << ": out of memory copying " << bytes
                                 << " bytes into an aligned tensor on "
                                 << detail::DeviceString(to.device_type, to.device_id) << " ("
                                 << err.message() << "); free memory or bind a smaller tensor";
    }
    if (shared) made.emplace(key, copy);
    out.push_back(copy);
  }
  return out;
}

}  // namespace

std::vector<format::FunctionRecord> detail::PartialRecords(const ffi::Any& obj, const char* who) {
  auto records = RecordsOf(obj);
  if (!records.has_value()) {
    const int32_t type = obj.type_index();
    const bool str = type == ffi::TypeIndex::kTVMFFIStr || type == ffi::TypeIndex::kTVMFFISmallStr;
    const bool bytes =
        type == ffi::TypeIndex::kTVMFFIBytes || type == ffi::TypeIndex::kTVMFFISmallBytes;
    // A module of our kind whose records RecordsOf could not read: another copy made it.
    auto m = obj.try_cast<ffi::Module>();
    TVM_FFI_THROW(TypeError) << who
                             << ": expected a partial function or a partial_apply module, got "
                             << (str     ? "str"
                                 : bytes ? "bytes"
                                         : obj.GetTypeKey())
                             << (bytes ? " (load saved bytes with load_from_bytes first)" : "")
                             << (m && std::strcmp((*m)->kind(), "partial_apply") == 0
                                     ? " (a partial_apply module made by another copy of "
                                       "tvm-partial, such as the one inside a self-contained "
                                       "artifact, whose bindings this copy cannot read)"
                                     : "");
  }
  return *std::move(records);
}

ffi::Module PartialApplyModule(ffi::Module mod, ffi::Map<ffi::String, Bindings> bindings,
                               ffi::Map<ffi::String, ffi::Array<ffi::String>> param_names) {
  std::vector<format::FunctionRecord> functions;
  for (const auto& [name, bound] : bindings) {
    const std::string who = "PartialApplyModule('" + std::string(name) + "')";
    functions.push_back(MakeRecord(name, param_names, detail::FromBindings(bound, who), who));
  }
  return MakePartialModule(std::move(mod), std::move(functions));
}

ffi::Map<ffi::String, Bindings> PartialApplyBindings(const ffi::Any& obj) {
  ffi::Map<ffi::String, Bindings> out;
  for (const auto& r : detail::PartialRecords(obj, "PartialApplyBindings")) {
    out.Set(r.name, detail::ToBindings(r.bound));
  }
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::String>> PartialApplyParamNames(const ffi::Any& obj) {
  ffi::Map<ffi::String, ffi::Array<ffi::String>> out;
  for (const auto& r : detail::PartialRecords(obj, "PartialApplyParamNames")) {
    if (!r.param_names.empty()) out.Set(r.name, r.param_names);
  }
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::Any>> PartialApplyOutputs(const ffi::Any& obj) {
  ffi::Map<ffi::String, ffi::Array<ffi::Any>> out;
  for (const auto& r : detail::PartialRecords(obj, "PartialApplyOutputs")) {
    if (!r.outputs.empty()) out.Set(r.name, detail::OutputsToAny(r.outputs));
  }
  return out;
}

ffi::Module Rebind(const ffi::Module& pm, const ffi::String& function,
                   const ffi::Map<ffi::Any, ffi::Any>& values) {
  const std::vector<format::FunctionRecord> records = detail::PartialRecords(pm, "rebind");
  const auto fn = std::find_if(records.begin(), records.end(),
                               [&](const format::FunctionRecord& r) { return r.name == function; });
  const ffi::Array<ffi::String> names =
      fn == records.end() ? ffi::Array<ffi::String>{} : fn->param_names;
  ffi::Map<int64_t, ffi::Any> at;
  for (auto [key, value] : values) {
    int64_t position = -1;
    if (auto name = key.try_cast<ffi::String>()) {
      const auto it = std::find(names.begin(), names.end(), *name);
      if (it == names.end()) {
        TVM_FFI_THROW(KeyError) << "rebind: " << function << "() records no parameter named '"
                                << *name << "'; give its position";
      }
      position = it - names.begin();
    } else {
      position = key.cast<int64_t>();
    }
    if (auto t = value.try_cast<ffi::Tensor>(); t && !HeldAsIs(*t)) {  // as Hold keeps a tvm one
      value = AlignedCopy(*t, t->GetDLTensorPtr()->device);
    }
    if (at.count(position)) {
      TVM_FFI_THROW(ValueError) << "rebind: position " << position << " of " << function
                                << "() is given twice";
    }
    at.Set(position, value);
  }
  return RebindAt(pm, function, at);
}

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterPackedGlobalOnce<ffi::Module>("runtime.PartialApplyModule",
                                                &PartialApplyModulePacked);
  detail::RegisterGlobalOnce("runtime.PartialApplyBindings", PartialApplyBindings);
  detail::RegisterGlobalOnce("tvm_partial.Describe", Describe);
  detail::RegisterGlobalOnce("tvm_partial.Rebind", RebindAt);
  detail::RegisterGlobalOnce("tvm_partial.Hold", Hold);
}

}  // namespace tvm_partial
