// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_module.cc
 * \brief The `partial_apply` module kind: a module with bindings for some of its functions,
 *        its loader `ffi.Module.load_from_bytes.partial_apply`, and the module globals.
 */
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/memory.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bindings.h"
#include "format.h"
#include "outputs.h"
#include "registry.h"

namespace tvm_partial {

namespace {

using detail::BoundList;

/*! \brief The kind; its address also identifies modules of this library (TVM is built without
 *         RTTI, so dynamic_cast cannot be used on its modules). */
constexpr const char kKind[] = "partial_apply";

class PartialModuleObj final : public ffi::ModuleObj {
 public:
  /*! \param functions Bindings per function; `wrapped` becomes the first import (null: added later
   *         by the library loader, which rebuilds the import tree after LoadFromBytes). */
  PartialModuleObj(std::vector<format::FunctionRecord> functions,
                   ffi::Optional<ffi::Module> wrapped,
                   std::optional<format::ExternalRegion> external = std::nullopt)
      : functions_(std::move(functions)),
        index_(IndexByName(functions_)),
        external_(std::move(external)) {
    if (wrapped.has_value()) imports_.push_back(*wrapped);
  }

  const char* kind() const final { return kKind; }

  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    const format::FunctionRecord* record = Find(name);
    if (record == nullptr) {
      if (imports_.empty()) return std::nullopt;
      return Wrapped()->GetFunction(name, /*query_imports=*/true);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(std::string(name));
    if (it != cache_.end()) return it->second;
    if (imports_.empty()) {
      TVM_FFI_THROW(RuntimeError) << "partial_apply module: function '" << name
                                  << "' is bound but the module wraps no compiled code; import "
                                     "the module it was made from";
    }
    ffi::Optional<ffi::Function> f = Wrapped()->GetFunction(name, /*query_imports=*/true);
    if (!f.has_value()) {
      TVM_FFI_THROW(AttributeError) << "partial_apply module: function '" << name
                                    << "' is bound but the wrapped module has no such function";
    }
    ffi::Function closure = PartialApply(*f, detail::ToBindings(record->bound), record->name,
                                         record->param_names, record->outputs);
    cache_.emplace(std::string(name), closure);
    return closure;
  }

  ffi::Bytes SaveToBytes() const final {
    return ffi::Bytes(format::Encode(functions_, external_ ? &*external_ : nullptr));
  }

  static ffi::Module LoadFromBytes(const ffi::Bytes& bytes) {
    return ffi::Module(ffi::make_object<PartialModuleObj>(
        format::Decode(bytes.data(), bytes.size()), std::nullopt));
  }

  int GetPropertyMask() const final {
    return ffi::Module::kBinarySerializable | ffi::Module::kRunnable;
  }

  const format::FunctionRecord* Find(const ffi::String& name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &functions_[it->second];
  }

  /*! \brief Name -> position in `functions`; names are unique (the loader and the merge ensure it).
   */
  static std::unordered_map<std::string, size_t> IndexByName(
      const std::vector<format::FunctionRecord>& functions) {
    std::unordered_map<std::string, size_t> index;
    index.reserve(functions.size());
    for (size_t i = 0; i < functions.size(); ++i) index.emplace(std::string(functions[i].name), i);
    return index;
  }

  bool HasWrapped() const { return !imports_.empty(); }
  ffi::Module Wrapped() const { return imports_[0].cast<ffi::Module>(); }

  /*! \brief Bindings and recorded parameter names per function; immutable after construction. */
  const std::vector<format::FunctionRecord> functions_;
  /*! \brief Where each name's record is in functions_: lookups in O(1), not a scan. */
  const std::unordered_map<std::string, size_t> index_;
  /*! \brief Set for a zero-copy export: SaveToBytes writes metadata referring to this region. */
  const std::optional<format::ExternalRegion> external_;
  /*! \brief Guards cache_. */
  std::mutex mutex_;
  /*! \brief Bound closures built on first lookup. */
  std::unordered_map<std::string, ffi::Function> cache_;
};

PartialModuleObj* AsPartialModule(const ffi::Module& mod) {
  ffi::ModuleObj* obj = const_cast<ffi::ModuleObj*>(mod.operator->());
  return obj->kind() == kKind ? static_cast<PartialModuleObj*>(obj) : nullptr;
}

ffi::Module MakePartialModule(ffi::Module mod, std::vector<format::FunctionRecord> functions) {
  PartialModuleObj* inner = AsPartialModule(mod);
  // The compiled code the bindings will apply to (a partial module's wrapped module; absent for
  // one restored from bytes alone, whose functions are checked at lookup).
  ffi::Optional<ffi::Module> code = inner == nullptr ? ffi::Optional<ffi::Module>(mod)
                                    : inner->HasWrapped()
                                        ? ffi::Optional<ffi::Module>(inner->Wrapped())
                                        : ffi::Optional<ffi::Module>();
  for (const format::FunctionRecord& r : functions) {
    if (code.has_value() && !(*code)->GetFunction(r.name, /*query_imports=*/true).has_value()) {
      TVM_FFI_THROW(AttributeError) << "PartialApplyModule: the module (" << (*code)->kind()
                                    << ") has no function '" << r.name << "' to bind";
    }
  }
  if (inner != nullptr) {
    // Merge into one level over the same compiled code.
    std::vector<format::FunctionRecord> merged = inner->functions_;
    for (format::FunctionRecord& outer : functions) {
      const format::FunctionRecord* existing = inner->Find(outer.name);
      if (existing == nullptr) {
        merged.push_back(std::move(outer));
        continue;
      }
      format::FunctionRecord* it = &merged[existing - inner->functions_.data()];
      const std::string who = "PartialApplyModule('" + std::string(outer.name) + "')";
      if (!it->outputs.empty() || !outer.outputs.empty()) {
        BoundList inner_bound = std::move(it->bound);
        Outputs inner_outputs = std::move(it->outputs);
        it->bound = std::move(outer.bound);
        it->outputs = std::move(outer.outputs);
        ffi::Array<ffi::String> inner_names = it->param_names;
        it->param_names = outer.param_names;
        detail::MergeLevels(inner_bound, inner_outputs, inner_names, &it->bound, &it->param_names,
                            &it->outputs, who);
        it->outputs = detail::CheckOutputs(std::move(it->outputs), it->bound, it->param_names, who);
      } else {
        it->param_names = detail::MergeNames(it->bound, it->param_names, outer.param_names);
        it->bound = detail::Merge(it->bound, outer.bound, who);
      }
    }
    return ffi::Module(ffi::make_object<PartialModuleObj>(std::move(merged), code));
  }
  return ffi::Module(ffi::make_object<PartialModuleObj>(std::move(functions), mod));
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
  if (r.param_names.empty() || r.bound.empty()) return r;
  if (r.bound.back().first >= static_cast<int64_t>(r.param_names.size())) {
    TVM_FFI_THROW(IndexError) << "PartialApplyModule: function '" << r.name << "': bound index "
                              << r.bound.back().first << " is out of range for its "
                              << r.param_names.size() << " parameters";
  }
  return r;
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
    if (PartialModuleObj* pm = AsPartialModule(*m)) return pm->functions_;
  }
  return std::nullopt;
}

}  // namespace

namespace {
/*! \brief A module of our kind that this copy of the code did not make: say so. */
std::string ForeignCopyHint(const ffi::Any& obj) {
  auto m = obj.try_cast<ffi::Module>();
  if (m.has_value() && std::strcmp((*m)->kind(), kKind) == 0) {
    return " (a partial_apply module made by another copy of tvm-partial, such as the one inside a "
           "self-contained artifact, whose bindings this copy cannot read)";
  }
  return "";
}
}  // namespace

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
  auto records = RecordsOf(obj);
  if (!records.has_value()) {
    TVM_FFI_THROW(TypeError) << "PartialApplyBindings: expected a partial function or a "
                                "partial_apply module, got "
                             << obj.GetTypeKey() << ForeignCopyHint(obj);
  }
  ffi::Map<ffi::String, Bindings> out;
  for (const auto& r : *records) out.Set(r.name, detail::ToBindings(r.bound));
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::String>> PartialApplyParamNames(const ffi::Any& obj) {
  auto records = RecordsOf(obj);
  if (!records.has_value()) {
    TVM_FFI_THROW(TypeError) << "PartialApplyParamNames: expected a partial function or a "
                                "partial_apply module, got "
                             << obj.GetTypeKey() << ForeignCopyHint(obj);
  }
  ffi::Map<ffi::String, ffi::Array<ffi::String>> out;
  for (const auto& r : *records) {
    if (!r.param_names.empty()) out.Set(r.name, r.param_names);
  }
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::Any>> PartialApplyOutputs(const ffi::Any& obj) {
  auto records = RecordsOf(obj);
  if (!records.has_value()) {
    TVM_FFI_THROW(TypeError) << "PartialApplyOutputs: expected a partial function or a "
                                "partial_apply module, got "
                             << obj.GetTypeKey() << ForeignCopyHint(obj);
  }
  ffi::Map<ffi::String, ffi::Array<ffi::Any>> out;
  for (const auto& r : *records) {
    if (!r.outputs.empty()) out.Set(r.name, detail::OutputsToAny(r.outputs));
  }
  return out;
}

namespace {

// runtime.PartialApplyModule(mod, {name: {position: value}}, param_names={}, outputs={}) from
// Python; outputs per function as detail::OutputsFromAny reads them.
void PartialApplyModulePacked(ffi::PackedArgs args, ffi::Any* rv) {
  if (args.size() < 2 || args.size() > 4) {
    TVM_FFI_THROW(TypeError) << "runtime.PartialApplyModule(mod, bindings, param_names={}, "
                                "outputs={}) takes 2 to 4 arguments, "
                             << args.size() << " given";
  }
  auto mod = args[0].try_cast<ffi::Module>();
  if (!mod.has_value()) {
    TVM_FFI_THROW(TypeError) << "PartialApplyModule: argument mod must be a Module, got "
                             << args[0].GetTypeKey();
  }
  auto raw = args[1].try_cast<ffi::Map<ffi::String, ffi::Map<ffi::Any, ffi::Any>>>();
  if (!raw.has_value()) {
    TVM_FFI_THROW(TypeError) << "PartialApplyModule: argument bindings must map function names "
                                "to {position: value}, got "
                             << args[1].GetTypeKey();
  }
  ffi::Map<ffi::String, ffi::Array<ffi::String>> names;
  if (args.size() > 2 && args[2] != nullptr) {
    names = args[2].cast<ffi::Map<ffi::String, ffi::Array<ffi::String>>>();
  }
  ffi::Map<ffi::String, ffi::Any> outputs;
  if (args.size() > 3 && args[3] != nullptr)
    outputs = args[3].cast<ffi::Map<ffi::String, ffi::Any>>();
  std::vector<format::FunctionRecord> functions;
  for (const auto& [name, bound] : *raw) {
    const std::string who = "PartialApplyModule('" + std::string(name) + "')";
    Outputs outs = outputs.count(name) ? detail::OutputsFromAny(outputs.at(name), who) : Outputs();
    functions.push_back(MakeRecord(name, names, detail::FromAnyMap(bound, who), std::move(outs)));
  }
  for (const auto& [name, _] : outputs) {
    if (!raw->count(name)) {
      TVM_FFI_THROW(ValueError) << "PartialApplyModule: outputs for function '" << name
                                << "', which has no entry in bindings (give it {} there)";
    }
  }
  *rv = MakePartialModule(*mod, std::move(functions));
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("runtime.PartialApplyModule",
                             ffi::Function::FromPacked(&PartialApplyModulePacked));
  detail::RegisterGlobalOnce("runtime.PartialApplyBindings",
                             ffi::Function::FromTyped(PartialApplyBindings));
  // A cheap test, so Python need not turn a C++ exception into a Python one to find out.
  detail::RegisterGlobalOnce("tvm_partial.IsPartial", ffi::Function::FromTyped([](ffi::Any obj) {
                               if (auto f = obj.try_cast<ffi::Function>()) {
                                 return detail::IsPartialFunction(*f);
                               }
                               auto m = obj.try_cast<ffi::Module>();
                               return m.has_value() && AsPartialModule(*m) != nullptr;
                             }));
  detail::RegisterGlobalOnce("tvm_partial.ParamNames",
                             ffi::Function::FromTyped(PartialApplyParamNames));
  detail::RegisterGlobalOnce("tvm_partial.Outputs", ffi::Function::FromTyped(PartialApplyOutputs));
  detail::RegisterGlobalOnce("ffi.Module.load_from_bytes.partial_apply",
                             ffi::Function::FromTyped(PartialModuleObj::LoadFromBytes));
  // Zero-copy export: a copy of `mod` whose SaveToBytes leaves the payloads to a region that
  // WritePayloadRegion writes and the export links into the library under `symbol`.
  detail::RegisterGlobalOnce(
      "tvm_partial.WithExternalPayloads",
      ffi::Function::FromTyped([](ffi::Module mod, ffi::String symbol, int64_t link) {
        PartialModuleObj* pm = AsPartialModule(mod);
        if (pm == nullptr)
          TVM_FFI_THROW(TypeError) << "WithExternalPayloads: not a partial_apply module";
        if (std::string(symbol).rfind(format::kRegionSymbolPrefix, 0) != 0) {
          TVM_FFI_THROW(ValueError)
              << "WithExternalPayloads: the symbol must start with " << format::kRegionSymbolPrefix;
        }
        format::ExternalRegion region{std::string(symbol), static_cast<uint64_t>(link)};
        ffi::Optional<ffi::Module> wrapped;
        if (pm->HasWrapped()) wrapped = pm->Wrapped();
        return ffi::Module(ffi::make_object<PartialModuleObj>(pm->functions_, wrapped, region));
      }));
  // The same, with the payloads in a safetensors weights file beside the library (flag 2): the
  // library's region then holds only the region header; `weights_file` is relative to its folder.
  detail::RegisterGlobalOnce(
      "tvm_partial.WithExternalWeights",
      ffi::Function::FromTyped(
          [](ffi::Module mod, ffi::String symbol, int64_t link, ffi::String weights_file) {
            PartialModuleObj* pm = AsPartialModule(mod);
            if (pm == nullptr)
              TVM_FFI_THROW(TypeError) << "WithExternalWeights: not a partial_apply module";
            if (std::string(symbol).rfind(format::kRegionSymbolPrefix, 0) != 0) {
              TVM_FFI_THROW(ValueError) << "WithExternalWeights: the symbol must start with "
                                        << format::kRegionSymbolPrefix;
            }
            if (weights_file.empty())
              TVM_FFI_THROW(ValueError) << "WithExternalWeights: empty weights file name";
            format::ExternalRegion region{std::string(symbol), static_cast<uint64_t>(link),
                                          std::string(weights_file)};
            ffi::Optional<ffi::Module> wrapped;
            if (pm->HasWrapped()) wrapped = pm->Wrapped();
            return ffi::Module(ffi::make_object<PartialModuleObj>(pm->functions_, wrapped, region));
          }));
  // The default zero-copy export (flag 4): the library's region holds only the region header
  // (PayloadRegionHeader); AppendPayloadRegion appends the region to the linked library file.
  detail::RegisterGlobalOnce(
      "tvm_partial.WithAppendedPayloads",
      ffi::Function::FromTyped([](ffi::Module mod, ffi::String symbol, int64_t link) {
        PartialModuleObj* pm = AsPartialModule(mod);
        if (pm == nullptr)
          TVM_FFI_THROW(TypeError) << "WithAppendedPayloads: not a partial_apply module";
        if (std::string(symbol).rfind(format::kRegionSymbolPrefix, 0) != 0) {
          TVM_FFI_THROW(ValueError)
              << "WithAppendedPayloads: the symbol must start with " << format::kRegionSymbolPrefix;
        }
        format::ExternalRegion region{std::string(symbol), static_cast<uint64_t>(link)};
        region.appended = true;
        ffi::Optional<ffi::Module> wrapped;
        if (pm->HasWrapped()) wrapped = pm->Wrapped();
        return ffi::Module(ffi::make_object<PartialModuleObj>(pm->functions_, wrapped, region));
      }));
  detail::RegisterGlobalOnce(
      "tvm_partial.PayloadRegionHeader", ffi::Function::FromTyped([](ffi::Module mod) {
        PartialModuleObj* pm = AsPartialModule(mod);
        if (pm == nullptr || !pm->external_) {
          TVM_FFI_THROW(TypeError) << "PayloadRegionHeader: needs a module from "
                                      "WithAppendedPayloads or WithExternalPayloads";
        }
        return ffi::Bytes(format::RegionHeader(pm->functions_, *pm->external_));
      }));
  detail::RegisterGlobalOnce(
      "tvm_partial.AppendPayloadRegion",
      ffi::Function::FromTyped(
          [](ffi::Module mod, ffi::String path, ffi::Optional<ffi::Function> progress) {
            PartialModuleObj* pm = AsPartialModule(mod);
            if (pm == nullptr || !pm->external_ || !pm->external_->appended) {
              TVM_FFI_THROW(TypeError)
                  << "AppendPayloadRegion: needs a module from WithAppendedPayloads";
            }
            std::vector<uint64_t> hashes =
                format::AppendRegion(pm->functions_, *pm->external_, std::string(path), progress);
            ffi::Array<int64_t> out;
            for (uint64_t h : hashes) out.push_back(static_cast<int64_t>(h));
            return out;
          }));
  // A copy of a module from WithAppendedPayloads that records `hashes` (the payload hashes that
  // AppendPayloadRegion returns), or zeros for None: the export links the blob with zeros, appends
  // the region (hashing it as it is written) and then patches the blob, which keeps its length.
  detail::RegisterGlobalOnce(
      "tvm_partial.WithPayloadHashes",
      ffi::Function::FromTyped([](ffi::Module mod, ffi::Optional<ffi::Array<int64_t>> hashes) {
        PartialModuleObj* pm = AsPartialModule(mod);
        if (pm == nullptr || !pm->external_ || !pm->external_->appended) {
          TVM_FFI_THROW(TypeError) << "WithPayloadHashes: needs a module from WithAppendedPayloads";
        }
        format::ExternalRegion region = *pm->external_;
        region.hashes_given = true;
        region.hashes.clear();
        if (hashes.has_value()) {
          for (int64_t h : *hashes) region.hashes.push_back(static_cast<uint64_t>(h));
          if (region.hashes.empty()) region.hashes_given = false;  // no tensors: nothing to record
        }
        ffi::Optional<ffi::Module> wrapped;
        if (pm->HasWrapped()) wrapped = pm->Wrapped();
        return ffi::Module(ffi::make_object<PartialModuleObj>(pm->functions_, wrapped, region));
      }));
  detail::RegisterGlobalOnce(
      "tvm_partial.WritePayloadRegion",
      ffi::Function::FromTyped([](ffi::Module mod, ffi::String path, int64_t lead) {
        PartialModuleObj* pm = AsPartialModule(mod);
        if (pm == nullptr || !pm->external_) {
          TVM_FFI_THROW(TypeError)
              << "WritePayloadRegion: needs a module from WithExternalPayloads";
        }
        if (lead < 0 || lead % static_cast<int64_t>(format::kPayloadAlignment) != 0) {
          TVM_FFI_THROW(ValueError)
              << "WritePayloadRegion: lead must be a multiple of 64, got " << lead;
        }
        format::WriteRegion(pm->functions_, *pm->external_, std::string(path),
                            static_cast<size_t>(lead));
      }));
  detail::RegisterGlobalOnce("tvm_partial.SaveToBytes", ffi::Function::FromTyped([](ffi::Module m) {
                               return m->SaveToBytes();
                             }));
  detail::RegisterGlobalOnce(
      "tvm_partial.DescribeBytes",
      ffi::Function::FromTyped([](ffi::Bytes b) { return format::Describe(b.data(), b.size()); }));
  detail::RegisterGlobalOnce(
      "tvm_partial.ResealForTesting", ffi::Function::FromTyped([](ffi::Bytes b) {
        return ffi::Bytes(format::ResealForTesting(std::string(b.data(), b.size())));
      }));
}

}  // namespace tvm_partial
