// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind_module.cc
 * \brief Binding a module: `runtime.PartialApplyModule` (a partial module over a module, merged
 *        into one level over a partial module through the one merge, bind/merge.h) and the
 *        introspection of partials (`runtime.PartialApplyBindings`, `tvm_partial.Describe`). The
 *        module kind itself is in partial_module.cc, the shard rules in format/shard.h.
 */
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bind/bindings.h"
#include "bind/merge.h"
#include "bind/outputs.h"
#include "format/format.h"
#include "packed_args.h"
#include "partial_function.h"
#include "partial_module.h"
#include "registry.h"

namespace tvm_partial {

namespace {

using detail::BoundList;

/*! \param originals Per function, its full parameter list for when the inner partial module
 *         recorded none (see detail::Merge). */
ffi::Module MakePartialModule(
    ffi::Module mod, std::vector<format::FunctionRecord> functions,
    const ffi::Map<ffi::String, ffi::Array<ffi::String>>& originals = {}) {
  const std::vector<format::FunctionRecord>* inner = detail::PartialModuleRecords(mod);
  // The compiled code the bindings will apply to (a partial module's wrapped module; absent for
  // one restored from bytes alone, whose functions are checked at lookup).
  ffi::Optional<ffi::Module> code =
      inner == nullptr ? ffi::Optional<ffi::Module>(mod) : detail::PartialModuleCode(mod);
  for (const format::FunctionRecord& r : functions) {
    if (code.has_value() && !(*code)->GetFunction(r.name, /*query_imports=*/true).has_value()) {
      TVM_FFI_THROW(AttributeError) << "PartialApplyModule: the module (" << (*code)->kind()
                                    << ") has no function '" << r.name << "' to bind";
    }
  }
  if (inner != nullptr) {
    const bool sharded =
        std::any_of(inner->begin(), inner->end(),
                    [](const format::FunctionRecord& r) { return !r.shards.empty(); }) ||
        std::any_of(functions.begin(), functions.end(),
                    [](const format::FunctionRecord& r) { return !r.shards.empty(); });
    if (sharded) {
      TVM_FFI_THROW(ValueError)
          << "PartialApplyModule: a partial module with shards cannot be bound again (its "
          << "levels would merge): bind every value, with shards= and world=, in one partial() "
          << "of the compiled module";
    }
    // Merge into one level over the same compiled code.
    std::vector<format::FunctionRecord> merged = *inner;
    std::unordered_map<std::string, size_t> index;  // name -> its record: O(1) each
    for (size_t i = 0; i < merged.size(); ++i) index.emplace(std::string(merged[i].name), i);
    for (format::FunctionRecord& outer : functions) {
      auto existing = index.find(std::string(outer.name));
      if (existing == index.end()) {
        merged.push_back(std::move(outer));
        continue;
      }
      format::FunctionRecord* it = &merged[existing->second];
      const std::string who = "PartialApplyModule('" + std::string(outer.name) + "')";
      detail::Level level = detail::Merge(
          detail::Level{std::move(it->bound), std::move(it->param_names), std::move(it->outputs)},
          detail::Level{std::move(outer.bound), std::move(outer.param_names),
                        std::move(outer.outputs)},
          originals.Get(outer.name).value_or(ffi::Array<ffi::String>()), who);
      it->bound = std::move(level.bound);
      it->param_names = std::move(level.param_names);
      it->outputs = std::move(level.outputs);
    }
    return detail::NewPartialModule(std::move(merged), code);
  }
  return detail::NewPartialModule(std::move(functions), mod);
}

/*! \brief One function's record, its positions checked against its names (when given). */
format::FunctionRecord MakeRecord(const ffi::String& name,
                                  const ffi::Map<ffi::String, ffi::Array<ffi::String>>& names,
                                  BoundList bound, Outputs outputs = {}) {
  format::FunctionRecord r{name, names.Get(name).value_or(ffi::Array<ffi::String>()),
                           std::move(bound)};
  // Checked here against this level's bindings (as given); merged with an inner module's later.
  r.outputs = std::move(outputs);
  if (!r.outputs.empty()) {
    r.outputs = detail::CheckOutputs(std::move(r.outputs), r.bound, r.param_names,
                                     "PartialApplyModule('" + std::string(name) + "')");
  }
  detail::CheckAgainstSignature(r.bound, r.param_names,
                                "PartialApplyModule('" + std::string(name) + "')");
  return r;
}

/*! \brief How messages name the binding at `position`: "parameter 'w' (position 1)". */
std::string Label(const format::FunctionRecord& r, int64_t position) {
  if (position >= 0 && position < static_cast<int64_t>(r.param_names.size())) {
    return "parameter '" + std::string(r.param_names[position]) + "' (position " +
           std::to_string(position) + ")";
  }
  return "position " + std::to_string(position);
}

/*! \brief Shards from Python ([[position, dim, world(, segments)]...]; a negative dim counts from
 * the end), checked against the bound tensors of `r` (format::ShardProblem), sorted by position. */
std::vector<format::Shard> CheckShards(const format::FunctionRecord& r,
                                       const ffi::Array<ffi::Array<int64_t>>& raw,
                                       const std::string& who) {
  std::vector<format::Shard> out;
  for (const ffi::Array<int64_t>& entry : raw) {
    if (entry.size() != 3 && entry.size() != 4) {
      TVM_FFI_THROW(ValueError) << who << ": a shard is [position, dim, world(, segments)]";
    }
    format::Shard s{entry[0], entry[1], entry[2], entry.size() == 4 ? entry[3] : 1};
    const ffi::Any* value = nullptr;
    for (const auto& [index, v] : r.bound) {
      if (index == s.position) value = &v;
    }
    const std::string label = Label(r, s.position);
    if (value == nullptr) {
      TVM_FFI_THROW(ValueError) << who << ": cannot shard " << label << ": it is not bound here";
    }
    auto tensor = value->try_cast<ffi::Tensor>();
    if (!tensor.has_value()) {
      TVM_FFI_THROW(TypeError) << who << ": cannot shard " << label << ": its bound value is a "
                               << value->GetTypeKey() << ", not a tensor";
    }
    if (!tensor->IsContiguous()) {
      TVM_FFI_THROW(ValueError) << who << ": cannot shard " << label
                                << ": the bound tensor is not contiguous";
    }
    const std::vector<int64_t> shape(tensor->shape().begin(), tensor->shape().end());
    const int64_t ndim = static_cast<int64_t>(shape.size());
    if (s.dim < 0 && s.dim >= -ndim) s.dim += ndim;  // counted from the end, as numpy counts axes
    const std::string problem =
        format::ShardProblem(shape, tensor->dtype(), s.dim, s.world, s.segments);
    if (!problem.empty()) {
      TVM_FFI_THROW(ValueError) << who << ": cannot shard " << label << " over world " << s.world
                                << ": " << problem;
    }
    s.layout = format::ShardLayout(shape, s.dim, s.segments);
    for (const format::Shard& seen : out) {
      if (seen.position == s.position) {
        TVM_FFI_THROW(ValueError) << who << ": " << label << " is sharded twice";
      }
    }
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(),
            [](const format::Shard& a, const format::Shard& b) { return a.position < b.position; });
  return out;
}

/*!
 * \brief The records of a partial function (one, named "") or of a partial_apply module made by
 *        this copy of the code; nullopt for anything else.
 */
std::optional<std::vector<format::FunctionRecord>> RecordsOf(const ffi::Any& obj) {
  if (auto f = obj.try_cast<ffi::Function>()) {
    detail::PartialParts parts;
    if (!detail::GetPartialParts(*f, &parts)) return std::nullopt;
    format::FunctionRecord record{"", parts.param_names, std::move(parts.bound)};
    record.outputs = std::move(parts.outputs);
    return std::vector<format::FunctionRecord>{std::move(record)};
  }
  if (auto m = obj.try_cast<ffi::Module>()) {
    if (const auto* records = detail::PartialModuleRecords(*m)) return *records;
  }
  return std::nullopt;
}

/*! \brief A module of our kind that this copy of the code did not make: say so. */
std::string ForeignCopyHint(const ffi::Any& obj) {
  auto m = obj.try_cast<ffi::Module>();
  if (m.has_value() && detail::IsForeignPartialModule(*m)) {
    return " (a partial_apply module made by another copy of tvm-partial, such as the one inside a "
           "self-contained artifact, whose bindings this copy cannot read)";
  }
  return "";
}
}  // namespace

std::vector<format::FunctionRecord> detail::PartialRecords(const ffi::Any& obj, const char* who) {
  auto records = RecordsOf(obj);
  if (!records.has_value()) {
    const int32_t type = obj.type_index();
    const bool str = type == ffi::TypeIndex::kTVMFFIStr || type == ffi::TypeIndex::kTVMFFISmallStr;
    const bool bytes =
        type == ffi::TypeIndex::kTVMFFIBytes || type == ffi::TypeIndex::kTVMFFISmallBytes;
    TVM_FFI_THROW(TypeError) << who
                             << ": expected a partial function or a partial_apply module, got "
                             << (str     ? "str"
                                 : bytes ? "bytes"
                                         : obj.GetTypeKey())
                             << (bytes ? " (load saved bytes with load_from_bytes first)" : "")
                             << ForeignCopyHint(obj);
  }
  return *std::move(records);
}

ffi::Module PartialApplyModule(ffi::Module mod, ffi::Map<ffi::String, Bindings> bindings,
                               ffi::Map<ffi::String, ffi::Array<ffi::String>> param_names) {
  std::vector<format::FunctionRecord> functions;
  for (const auto& [name, bound] : bindings) {
    functions.push_back(
        MakeRecord(name, param_names,
                   detail::FromBindings(bound, "PartialApplyModule('" + std::string(name) + "')")));
  }
  return MakePartialModule(std::move(mod), std::move(functions));
}

ffi::Map<ffi::String, Bindings> PartialApplyBindings(const ffi::Any& obj) {
  const std::vector<format::FunctionRecord> records =
      detail::PartialRecords(obj, "PartialApplyBindings");
  ffi::Map<ffi::String, Bindings> out;
  for (const auto& r : records) out.Set(r.name, detail::ToBindings(r.bound));
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::String>> PartialApplyParamNames(const ffi::Any& obj) {
  const std::vector<format::FunctionRecord> records =
      detail::PartialRecords(obj, "PartialApplyParamNames");
  ffi::Map<ffi::String, ffi::Array<ffi::String>> out;
  for (const auto& r : records) {
    if (!r.param_names.empty()) out.Set(r.name, r.param_names);
  }
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::Any>> PartialApplyOutputs(const ffi::Any& obj) {
  const std::vector<format::FunctionRecord> records =
      detail::PartialRecords(obj, "PartialApplyOutputs");
  ffi::Map<ffi::String, ffi::Array<ffi::Any>> out;
  for (const auto& r : records) {
    if (!r.outputs.empty()) out.Set(r.name, detail::OutputsToAny(r.outputs));
  }
  return out;
}

namespace {

/*!
 * \brief tvm_partial.Describe: what a partial function (key "") or a partial module of this copy
 *        holds, in one answer; for anything else None, or with `who` (the caller's name) a
 *        TypeError that says what was given. {"code": the compiled module bound (a module's;
 *        None without one), "bindings": {function: {position: value}} (as
 *        runtime.PartialApplyBindings), "names": {function: [parameter names]} (where
 *        recorded), "outputs": {function: [{"position", "dtype", "shape"}]}, "shards":
 *        {function: [[position, dim, world, segments]]}, "shard_rank": the rank whose view it
 *        holds (load(path, shard=)) or -1, "payloads": {function: {position: n}} (n numbers
 *        the distinct tensors, each stored once: format::TensorNumbers), "constant_bytes":
 *        their bytes as the format stores them (what decides a zero-copy export)}. Given bytes
 *        (save_to_bytes) and no `who`, the format's own description of them
 *        (format::Describe), checked as the loader parses them.
 */
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

// runtime.PartialApplyModule(mod, {name: {position: value}}, param_names={}, outputs={},
// original_names={}, shards={}) from Python; outputs per function as detail::OutputsFromAny
// reads them; original_names as MakePartialModule takes them; shards per function
// [[position, dim, world(, segments)]...] (bound tensors split for tensor parallelism,
// CheckShards).
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
    functions.push_back(MakeRecord(name, names, detail::FromAnyMap(bound, who), std::move(outs)));
    if (shards.count(name)) {
      functions.back().shards = CheckShards(functions.back(), shards.at(name), who);
    }
  }
  for (const auto& [name, _] : shards) {
    if (!raw.count(name)) {
      TVM_FFI_THROW(ValueError) << "PartialApplyModule: shards for function '" << name
                                << "', which has no entry in bindings";
    }
  }
  for (const auto& [name, _] : outputs) {
    if (!raw.count(name)) {
      TVM_FFI_THROW(ValueError) << "PartialApplyModule: outputs for function '" << name
                                << "', which has no entry in bindings (give it {} there)";
    }
  }
  *rv = MakePartialModule(
      mod, std::move(functions),
      detail::OptionalArg<ffi::Map<ffi::String, ffi::Array<ffi::String>>>(args, 4));
}

/*! \brief "[0, 2]": the positions of `r` that hold a value. */
std::string BoundPositions(const format::FunctionRecord& r) {
  std::string out = "[";
  for (const auto& [position, _] : r.bound) {
    out += (out.size() > 1 ? ", " : "") + std::to_string(position);
  }
  return out + "]";
}

/*!
 * \brief tvm_partial.rebind: a partial module over the code of `mod` (a partial module of this
 *        copy, not a rank's view of shards) whose values at `values`' positions of `function` are
 *        replaced, every other record kept (names, outputs, shards, and the file a loader of ours
 *        loaded the code from). A tensor bound in several places is one tensor: each place that
 *        held it gets its replacement, unless `values` gives that place its own. A replacement
 *        is of the kind it replaces: a tensor of the same dtype and shape (Python converts values
 *        to that), or a scalar; None where Python found no value bound (refused here).
 */
ffi::Module Rebind(ffi::Module mod, ffi::String function, ffi::Map<int64_t, ffi::Any> values) {
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
  std::vector<std::pair<size_t, size_t>> places;  // (function, binding) of each value given
  for (const auto& [position, value] : values) {
    auto at = std::find_if(fn->bound.begin(), fn->bound.end(),
                           [position = position](const auto& b) { return b.first == position; });
    if (at == fn->bound.end() || value.type_index() == ffi::TypeIndex::kTVMFFINone) {
      TVM_FFI_THROW(IndexError) << "rebind: position " << position << " of " << function
                                << "() is not bound (bound: " << BoundPositions(*fn)
                                << "); rebind replaces bound values";
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
    places.emplace_back(f, at - fn->bound.begin());
  }
  auto given = [&](size_t g, size_t b) {
    return std::find(places.begin(), places.end(), std::make_pair(g, b)) != places.end();
  };
  for (const auto& [g, b] : places) {  // tied places first, so a given value wins over a tie
    const int64_t number = numbers[g][b];
    for (size_t h = 0; number >= 0 && h < records.size(); ++h) {
      for (size_t c = 0; c < records[h].bound.size(); ++c) {
        if (numbers[h][c] == number && !given(h, c)) {
          records[h].bound[c].second = values.at(records[g].bound[b].first);
        }
      }
    }
  }
  for (const auto& [g, b] : places) {
    records[g].bound[b].second = values.at(records[g].bound[b].first);
  }
  ffi::Module out = detail::NewPartialModule(std::move(records), code);
  detail::InheritLibraryFile(out, mod);
  return out;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterPackedGlobalOnce<ffi::Module>("runtime.PartialApplyModule",
                                                &PartialApplyModulePacked);
  detail::RegisterGlobalOnce("runtime.PartialApplyBindings", PartialApplyBindings);
  detail::RegisterGlobalOnce("tvm_partial.Describe", Describe);
  detail::RegisterGlobalOnce("tvm_partial.Rebind", Rebind);
}

}  // namespace tvm_partial
