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
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bind/bindings.h"
#include "bind/merge.h"
#include "bind/outputs.h"
#include "format/common.h"
#include "format/format.h"
#include "out_of_memory.h"
#include "packed_args.h"
#include "partial_function.h"
#include "registry.h"
#include "storage/payload_source.h"

namespace tvm_partial {

namespace {

using detail::BoundList;

/*! \brief The kind; its address also identifies modules of this library (TVM is built without
 *         RTTI, so dynamic_cast cannot be used on its modules). */
constexpr const char kKind[] = "partial_apply";

/*! \brief `f()`, with an allocation that fails raised as MemoryError saying what ran out: these
 *         run from the library loader and from TVM's export, outside any global that converts it.
 */
template <typename F>
auto OutOfMemoryAsError(const char* what, F f) -> decltype(f()) {
  return detail::OutOfMemoryAsMemoryError(f, [what] { return std::string(what); });
}

class PartialModuleObj final : public ffi::ModuleObj {
 public:
  /*! \param functions Bindings per function; `wrapped` becomes the first import. */
  PartialModuleObj(std::vector<format::FunctionRecord> functions,
                   ffi::Optional<ffi::Module> wrapped,
                   std::optional<format::ExternalRegion> external = std::nullopt)
      : functions_(std::move(functions)),
        index_(IndexByName(functions_)),
        external_(std::move(external)),
        resolved_(true) {
    if (wrapped.has_value()) imports_.push_back(*wrapped);
  }

  /*! \brief Loaded from `bytes` (already parsed): the records are built on first use, once the
   *         library loader has attached the imports (which say which file the bytes came from). */
  PartialModuleObj(ffi::Bytes bytes, format::Parsed parsed)
      : functions_(Skeleton(parsed)), index_(IndexByName(functions_)), resolved_(false) {
    pending_.emplace(Pending{std::move(bytes), std::move(parsed), {}});
  }

  const char* kind() const final { return kKind; }

  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    const format::FunctionRecord* record = Find(name);
    if (record == nullptr && name == "main" && functions_.size() == 1 &&
        !(HasWrapped() && Wrapped()->GetFunction(name, /*query_imports=*/true).has_value())) {
      record = &functions_[0];  // pm(...) of a model whose one bound function is not main
    }
    if (record == nullptr) {
      if (!HasWrapped()) return std::nullopt;
      return Wrapped()->GetFunction(name, /*query_imports=*/true);
    }
    const size_t at = static_cast<size_t>(record - functions_.data());  // before Records() fills
    const format::FunctionRecord& bound = Records()[at];
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(std::string(name));
    if (it != cache_.end()) return it->second;
    if (!HasWrapped()) {
      TVM_FFI_THROW(RuntimeError) << "partial_apply module: function '" << bound.name
                                  << "' is bound but the module wraps no compiled code; import "
                                     "the module it was made from";
    }
    ffi::Optional<ffi::Function> f = Wrapped()->GetFunction(bound.name, /*query_imports=*/true);
    if (!f.has_value()) {
      TVM_FFI_THROW(AttributeError) << "partial_apply module: function '" << bound.name
                                    << "' is bound but the wrapped module has no such function";
    }
    ffi::Function closure = PartialApply(*f, detail::ToBindings(bound.bound), bound.name,
                                         bound.param_names, bound.outputs);
    cache_.emplace(std::string(name), closure);
    return closure;
  }

  ffi::Bytes SaveToBytes() const final {
    const auto& records = const_cast<PartialModuleObj*>(this)->Records();
    return OutOfMemoryAsError("saving a partial_apply module", [&] {
      return ffi::Bytes(format::Encode(records, external_ ? &*external_ : nullptr));
    });
  }

  static ffi::Module LoadFromBytes(const ffi::Bytes& bytes) {
    return OutOfMemoryAsError("loading a partial_apply module", [&] {
      format::Parsed parsed = format::Parse(bytes.data(), bytes.size());
      // What the bytes alone can tell is refused now; the tensors are built on first use.
      storage::CheckBytes(parsed, bytes.data());
      return ffi::Module(ffi::make_object<PartialModuleObj>(bytes, std::move(parsed)));
    });
  }

  int GetPropertyMask() const final {
    return ffi::Module::kBinarySerializable | ffi::Module::kRunnable;
  }

  /*! \brief The record named `name` (its name and parameter names; its values only through
   *         Records()), or null. */
  const format::FunctionRecord* Find(const ffi::String& name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &functions_[it->second];
  }

  /*! \brief The records with their values: for a module loaded from bytes, built now (once)
   *         from where its payloads lie. Thread-safe; a failure is raised again on the next use. */
  const std::vector<format::FunctionRecord>& Records() {
    std::lock_guard<std::mutex> lock(resolve_mutex_);
    if (!resolved_) {
      std::vector<format::FunctionRecord> decoded =
          OutOfMemoryAsError("loading the tensors of a partial_apply module", [&] {
            return detail::DecodeRecords(pending_->bytes.data(), pending_->parsed,
                                         pending_->override_weights, imports_);
          });
      // Only the values are filled in: names, order and outputs (which GetFunction reads
      // without the lock) are those of the skeleton already, and the vector never moves.
      for (size_t i = 0; i < functions_.size(); ++i)
        functions_[i].bound = std::move(decoded[i].bound);
      pending_.reset();
      resolved_ = true;
    }
    return functions_;
  }

  /*! \brief Take the tensors from the weights file `path` by key instead of the module's own
   *         payloads (load(path, weights_file=...)). Only before the records are built. */
  bool SetWeightsOverride(const std::string& path) {
    std::lock_guard<std::mutex> lock(resolve_mutex_);
    if (resolved_) return false;
    pending_->override_weights = path;
    return true;
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

  /*! \brief The records of parsed bytes with names and outputs but no values yet. */
  static std::vector<format::FunctionRecord> Skeleton(const format::Parsed& parsed) {
    std::vector<format::FunctionRecord> out;
    out.reserve(parsed.functions.size());
    for (const format::ParsedFunction& fn : parsed.functions) {
      format::FunctionRecord r{fn.name, fn.param_names, {}};
      r.outputs = fn.outputs;
      out.push_back(std::move(r));
    }
    return out;
  }

  /*! \brief The compiled code the bindings apply to: the first import that is not a partial
   *         module of this copy (a partial over a partial is merged, so the code is never one;
   *         the library loader may place other imported partial modules before it). */
  bool HasWrapped() const { return WrappedIndex() < imports_.size(); }
  ffi::Module Wrapped() const { return imports_[WrappedIndex()].cast<ffi::Module>(); }
  size_t WrappedIndex() const {
    for (size_t i = 0; i < imports_.size(); ++i) {
      if (!IsOurs(imports_[i].cast<ffi::Module>())) return i;
    }
    return imports_.size();
  }
  static bool IsOurs(const ffi::Module& mod) { return mod->kind() == kKind; }
  const ffi::Array<ffi::Any>& Imports() const { return imports_; }

  /*! \brief Bound values and recorded parameter names per function. Names, order and outputs
   *         are fixed at construction; values (for a loaded module) are filled in once by
   *         Records(), and immutable afterwards. */
  std::vector<format::FunctionRecord> functions_;
  /*! \brief Where each name's record is in functions_: lookups in O(1), not a scan. */
  const std::unordered_map<std::string, size_t> index_;
  /*! \brief Set for a zero-copy export: SaveToBytes writes metadata referring to this region. */
  const std::optional<format::ExternalRegion> external_;
  /*! \brief What a module loaded from bytes keeps until Records() builds its values. */
  struct Pending {
    ffi::Bytes bytes;
    format::Parsed parsed;
    std::string override_weights;
  };
  std::optional<Pending> pending_;
  /*! \brief Whether functions_ holds its values; guarded by resolve_mutex_. */
  bool resolved_;
  std::mutex resolve_mutex_;
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
    std::vector<format::FunctionRecord> merged = inner->Records();
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
    if (PartialModuleObj* pm = AsPartialModule(*m)) return pm->Records();
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
  return pm == nullptr ? nullptr : &pm->Records();
}

const format::ExternalRegion* PartialModuleRegion(const ffi::Module& mod) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm == nullptr || !pm->external_ ? nullptr : &*pm->external_;
}

bool SetWeightsOverride(const ffi::Module& mod, const std::string& path) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm != nullptr && pm->SetWeightsOverride(path);
}

ffi::Module WithExternalRegion(const ffi::Module& mod, format::ExternalRegion region) {
  PartialModuleObj* pm = AsPartialModule(mod);
  ffi::Module out(
      ffi::make_object<PartialModuleObj>(pm->Records(), std::nullopt, std::move(region)));
  // Every import travels with the copy (the wrapped code first, then what was imported into
  // the partial module), so each export writes the same module tree as the inline one.
  for (const ffi::Any& import : pm->Imports()) out->ImportModule(import.cast<ffi::Module>());
  return out;
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
  detail::RegisterGlobalOnce("tvm_partial.DescribeBytes", [](ffi::Bytes b) {
    return format::Describe(format::Parse(b.data(), b.size()));
  });
}

}  // namespace tvm_partial
