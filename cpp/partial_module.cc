// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_module.cc
 * \brief The `partial_apply` module kind: a module with bindings for some of its functions,
 *        its loader `ffi.Module.load_from_bytes.partial_apply`, and the module globals.
 */
#include "partial_module.h"

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

#include "bind/bindings.h"
#include "bind/merge.h"
#include "bind/outputs.h"
#include "format.h"
#include "packed_args.h"
#include "partial_function.h"
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

/*! \param originals Per function, its full parameter list for when the inner partial module
 *         recorded none (see detail::Merge). */
ffi::Module MakePartialModule(
    ffi::Module mod, std::vector<format::FunctionRecord> functions,
    const ffi::Map<ffi::String, ffi::Array<ffi::String>>& originals = {}) {
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
      detail::Level level = detail::Merge(
          detail::Level{std::move(it->bound), std::move(it->param_names), std::move(it->outputs)},
          detail::Level{std::move(outer.bound), std::move(outer.param_names),
                        std::move(outer.outputs)},
          originals.Get(outer.name).value_or(ffi::Array<ffi::String>()), who);
      it->bound = std::move(level.bound);
      it->param_names = std::move(level.param_names);
      it->outputs = std::move(level.outputs);
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
  detail::CheckAgainstSignature(r.bound, r.param_names,
                                "PartialApplyModule('" + std::string(name) + "')");
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

/*! \brief RecordsOf, or a TypeError from `who` naming what `obj` is instead. */
std::vector<format::FunctionRecord> RecordsOrThrow(const ffi::Any& obj, const char* who) {
  auto records = RecordsOf(obj);
  if (!records.has_value()) {
    TVM_FFI_THROW(TypeError) << who
                             << ": expected a partial function or a partial_apply module, got "
                             << obj.GetTypeKey() << ForeignCopyHint(obj);
  }
  return *std::move(records);
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
  const std::vector<format::FunctionRecord> records = RecordsOrThrow(obj, "PartialApplyBindings");
  ffi::Map<ffi::String, Bindings> out;
  for (const auto& r : records) out.Set(r.name, detail::ToBindings(r.bound));
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::String>> PartialApplyParamNames(const ffi::Any& obj) {
  const std::vector<format::FunctionRecord> records = RecordsOrThrow(obj, "PartialApplyParamNames");
  ffi::Map<ffi::String, ffi::Array<ffi::String>> out;
  for (const auto& r : records) {
    if (!r.param_names.empty()) out.Set(r.name, r.param_names);
  }
  return out;
}

ffi::Map<ffi::String, ffi::Array<ffi::Any>> PartialApplyOutputs(const ffi::Any& obj) {
  const std::vector<format::FunctionRecord> records = RecordsOrThrow(obj, "PartialApplyOutputs");
  ffi::Map<ffi::String, ffi::Array<ffi::Any>> out;
  for (const auto& r : records) {
    if (!r.outputs.empty()) out.Set(r.name, detail::OutputsToAny(r.outputs));
  }
  return out;
}

namespace detail {

const std::vector<format::FunctionRecord>* PartialModuleRecords(const ffi::Module& mod) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm == nullptr ? nullptr : &pm->functions_;
}

const format::ExternalRegion* PartialModuleRegion(const ffi::Module& mod) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm == nullptr || !pm->external_ ? nullptr : &*pm->external_;
}

ffi::Module WithExternalRegion(const ffi::Module& mod, format::ExternalRegion region) {
  PartialModuleObj* pm = AsPartialModule(mod);
  ffi::Optional<ffi::Module> wrapped;
  if (pm->HasWrapped()) wrapped = pm->Wrapped();
  return ffi::Module(
      ffi::make_object<PartialModuleObj>(pm->functions_, wrapped, std::move(region)));
}

}  // namespace detail

namespace {

// runtime.PartialApplyModule(mod, {name: {position: value}}, param_names={}, outputs={},
// original_names={}) from Python; outputs per function as detail::OutputsFromAny reads them;
// original_names as MakePartialModule takes them.
void PartialApplyModulePacked(ffi::PackedArgs args, ffi::Any* rv) {
  detail::CheckArgCount(args, 2, 5,
                        "runtime.PartialApplyModule(mod, bindings, param_names={}, outputs={}, "
                        "original_names={})");
  auto mod = detail::RequiredArg<ffi::Module>(args, 0, "PartialApplyModule", "mod", "a Module");
  auto raw = detail::RequiredArg<ffi::Map<ffi::String, ffi::Map<ffi::Any, ffi::Any>>>(
      args, 1, "PartialApplyModule", "bindings", "a map of function names to {position: value}");
  auto names = detail::OptionalArg<ffi::Map<ffi::String, ffi::Array<ffi::String>>>(args, 2);
  auto outputs = detail::OptionalArg<ffi::Map<ffi::String, ffi::Any>>(args, 3);
  std::vector<format::FunctionRecord> functions;
  for (const auto& [name, bound] : raw) {
    const std::string who = "PartialApplyModule('" + std::string(name) + "')";
    Outputs outs = outputs.count(name) ? detail::OutputsFromAny(outputs.at(name), who) : Outputs();
    functions.push_back(MakeRecord(name, names, detail::FromAnyMap(bound, who), std::move(outs)));
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

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterPackedGlobalOnce<ffi::Module>("runtime.PartialApplyModule",
                                                &PartialApplyModulePacked);
  detail::RegisterGlobalOnce("runtime.PartialApplyBindings", PartialApplyBindings);
  // A cheap test, so Python need not turn a C++ exception into a Python one to find out.
  detail::RegisterGlobalOnce("tvm_partial.IsPartial", [](ffi::Any obj) {
    if (auto f = obj.try_cast<ffi::Function>()) {
      return detail::IsPartialFunction(*f);
    }
    auto m = obj.try_cast<ffi::Module>();
    return m.has_value() && AsPartialModule(*m) != nullptr;
  });
  detail::RegisterGlobalOnce("tvm_partial.ParamNames", PartialApplyParamNames);
  detail::RegisterGlobalOnce("tvm_partial.Outputs", PartialApplyOutputs);
  detail::RegisterGlobalOnce("ffi.Module.load_from_bytes.partial_apply",
                             PartialModuleObj::LoadFromBytes);
  detail::RegisterGlobalOnce("tvm_partial.SaveToBytes",
                             [](ffi::Module m) { return m->SaveToBytes(); });
  detail::RegisterGlobalOnce("tvm_partial.DescribeBytes",
                             [](ffi::Bytes b) { return format::Describe(b.data(), b.size()); });
}

}  // namespace tvm_partial
