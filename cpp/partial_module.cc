// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_module.cc
 * \brief The `partial_apply` module kind (a module's bindings), its loader and SaveToBytes global.
 */
#include "partial_module.h"

#include <tvm/ffi/error.h>
#include <tvm/ffi/memory.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "bind/bindings.h"
#include "out_of_memory.h"
#include "registry.h"
#include "storage/library.h"

namespace tvm_partial {

namespace {

// Its address identifies this copy's modules (TVM is built without RTTI: no dynamic_cast).
constexpr const char kKind[] = "partial_apply";

// `f()`, a failed allocation as MemoryError naming `what` (loader, export: no global converts it).
template <typename F>
auto OutOfMemoryAsError(const char* what, F f) -> decltype(f()) {
  return detail::OutOfMemoryAsMemoryError(f, [what] { return std::string(what); });
}

bool Reaches(const ffi::Module& mod, const ffi::ModuleObj* target, int depth = 0) {
  if (mod.get() == target) return true;
  if (depth > 64) return false;
  for (const ffi::Any& any : mod->imports()) {
    if (Reaches(any.cast<ffi::Module>(), target, depth + 1)) return true;
  }
  return false;
}

class PartialModuleObj final : public ffi::ModuleObj {
 public:
  PartialModuleObj(std::vector<format::FunctionRecord> functions,
                   ffi::Optional<ffi::Module> wrapped,
                   std::optional<format::ExternalRegion> external = std::nullopt)
      : functions_(std::move(functions)), external_(std::move(external)) {
    for (size_t i = 0; i < functions_.size(); ++i)
      index_.emplace(std::string(functions_[i].name), i);
    if (wrapped.has_value()) imports_.push_back(*wrapped);
  }

  // From `bytes`: records built on first use, once the loader's imports can locate the payloads.
  PartialModuleObj(ffi::Bytes bytes, format::Parsed parsed)
      : PartialModuleObj(Skeleton(parsed), std::nullopt) {
    pending_.emplace(Pending{std::move(bytes), std::move(parsed)});
  }

  const char* kind() const final { return kKind; }

  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    const format::FunctionRecord* record = Find(name);
    if (record == nullptr && name == "main" && !functions_.empty() &&
        !WrappedFunction("main").has_value()) {
      // pm(...): the one bound function if not main (frontend.nn's forward); several: ambiguous.
      if (functions_.size() > 1) ThrowNoMain();
      record = &functions_[0];
    }
    if (record == nullptr) return WrappedFunction(name);
    Records();  // fills a loaded module's values in place: `record` stays valid
    if (!record->shards.empty() && options_.shard_world <= 0) ThrowWholeShards(*record);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(std::string(name));
    if (it != cache_.end()) return it->second;
    const ffi::Optional<ffi::Module> code = Wrapped();
    if (!code.has_value()) {
      TVM_FFI_THROW(RuntimeError) << "partial_apply module: function '" << record->name
                                  << "' is bound but the module wraps no compiled code; import "
                                     "the module it was made from";
    }
    ffi::Optional<ffi::Function> f = (*code)->GetFunction(record->name, /*query_imports=*/true);
    if (!f.has_value()) {
      TVM_FFI_THROW(AttributeError) << "partial_apply module: function '" << record->name
                                    << "' is bound but the wrapped module has no such function";
    }
    ffi::Function closure = PartialApply(*f, detail::ToBindings(record->bound), record->name,
                                         record->param_names, record->outputs);
    cache_.emplace(std::string(name), closure);
    return closure;
  }

  // As GetFunction, without building or raising: `hasattr(pm, "main")` is False if pm(...) fails.
  bool ImplementsFunction(const ffi::String& name) final {
    if (Find(name) != nullptr) return true;
    if (name == "main" && functions_.size() == 1) return true;
    return WrappedFunction(name).has_value();
  }

  ffi::Bytes SaveToBytes() const final {
    const auto& records = const_cast<PartialModuleObj*>(this)->Records();
    RefuseShardView("saved");
    return OutOfMemoryAsError("saving a partial_apply module", [&] {
      return ffi::Bytes(format::Encode(records, external_ ? &*external_ : nullptr));
    });
  }

  static ffi::Module LoadFromBytes(const ffi::Bytes& bytes) {
    return OutOfMemoryAsError("loading a partial_apply module", [&] {
      format::Parsed parsed = format::Parse(bytes.data(), bytes.size());
      // What the bytes alone show is refused now; the tensors are built on first use.
      storage::CheckBytes(parsed, bytes.data());
      return ffi::Module(ffi::make_object<PartialModuleObj>(bytes, std::move(parsed)));
    });
  }

  int GetPropertyMask() const final {
    return ffi::Module::kBinarySerializable | ffi::Module::kRunnable;
  }

  [[noreturn]] TVM_FFI_NO_INLINE static void ThrowWholeShards(const format::FunctionRecord& r) {
    std::string names;
    for (const format::Shard& s : r.shards) {
      names +=
          (names.empty() ? "" : ", ") + (s.position < static_cast<int64_t>(r.param_names.size())
                                             ? "'" + std::string(r.param_names[s.position]) + "'"
                                             : "position " + std::to_string(s.position));
    }
    TVM_FFI_THROW(ValueError)
        << "partial_apply module: function '" << r.name << "' binds whole tensors split over "
        << r.shards[0].world << " ranks (shards: " << names << "), and its kernel takes one "
        << "rank's shard: export it and load a rank's view with tvm_partial.load(path, "
        << "shard=(rank, " << r.shards[0].world << ")), or on a disco worker "
        << "tvm_partial.LoadShard(path)";
  }

  void RefuseShardView(const char* what) const {
    if (options_.shard_world <= 0) return;
    TVM_FFI_THROW(ValueError) << "partial_apply module: this is rank " << options_.shard_rank
                              << "'s view of a sharded artifact (loaded with shard=); it "
                              << "holds one rank's slices, not the whole tensors, and cannot be "
                              << what << ": export the module that binds the whole tensors";
  }

  [[noreturn]] TVM_FFI_NO_INLINE void ThrowNoMain() const {
    std::string names;
    for (const format::FunctionRecord& r : functions_) {
      names += (names.empty() ? "" : ", ") + std::string(r.name);
    }
    TVM_FFI_THROW(AttributeError)
        << "partial_apply module: pm(...) calls main, and this module has no main: it binds "
        << functions_.size() << " functions (" << names << "); call one by name: pm[\""
        << functions_[0].name << "\"](...) in Python, m->GetFunction(\"" << functions_[0].name
        << "\", true) in C++";
  }

  // The record named `name` (names are unique), or null; its values are filled by Records().
  const format::FunctionRecord* Find(const ffi::String& name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &functions_[it->second];
  }

  // The records with values, built once here when loaded; a failure is raised again next use.
  const std::vector<format::FunctionRecord>& Records() {
    std::lock_guard<std::mutex> lock(resolve_mutex_);
    if (pending_.has_value()) {
      std::vector<detail::BoundList> values =
          OutOfMemoryAsError("loading the tensors of a partial_apply module", [&] {
            return detail::DecodeValues(pending_->bytes.data(), pending_->parsed, imports_,
                                        options_);
          });
      // Only values: GetFunction reads names, order and outputs unlocked; the vector never moves.
      for (size_t i = 0; i < functions_.size(); ++i) functions_[i].bound = std::move(values[i]);
      // Not when the library imports this module: the share would keep this module alive.
      ffi::Optional<ffi::Module> library = detail::FindLibrary(imports_);
      if (library.has_value() && !Reaches(*library, this)) {
        loaded_object_ = storage::ShareLoadedObject(*library);
      }
      pending_.reset();
    }
    return functions_;
  }

  // ConfigureLoad (partial_module.h): only before the records are built.
  int Configure(const storage::LoadOptions& options) {
    std::lock_guard<std::mutex> lock(resolve_mutex_);
    if (!pending_.has_value()) return -1;
    const bool sharded = pending_->parsed.Sharded();
    for (const format::ParsedFunction& fn : pending_->parsed.functions) {
      for (const format::Shard& s : fn.shards) {
        if (options.shard_world > 0 && s.world != options.shard_world) {
          TVM_FFI_THROW(ValueError)
              << "this artifact is sharded over world " << s.world << " ("
              << format::Where(fn, s.position) << "), not " << options.shard_world
              << ": load it with shard=(rank, " << s.world << "), on as many disco workers";
        }
      }
    }
    options_ = options;
    if (sharded) return 1;
    options_.shard_rank = -1;  // left whole
    options_.shard_world = 0;
    return 0;
  }

  static std::vector<format::FunctionRecord> Skeleton(const format::Parsed& parsed) {
    std::vector<format::FunctionRecord> out;
    out.reserve(parsed.functions.size());
    for (const format::ParsedFunction& fn : parsed.functions) {
      out.push_back({fn.name, fn.param_names, {}, fn.outputs, fn.shards});
    }
    return out;
  }

  // The code: the first non-partial import (partials merge; the loader may put ours before it).
  ffi::Optional<ffi::Module> Wrapped() const {
    for (const ffi::Any& import : imports_) {
      ffi::Module mod = import.cast<ffi::Module>();
      if (mod->kind() != kKind) return mod;
    }
    return std::nullopt;
  }

  ffi::Optional<ffi::Function> WrappedFunction(const ffi::String& name) const {
    ffi::Optional<ffi::Module> code = Wrapped();
    if (!code.has_value()) return std::nullopt;
    return (*code)->GetFunction(name, /*query_imports=*/true);
  }

  // Immutable, except that Records() fills a loaded module's values once.
  std::vector<format::FunctionRecord> functions_;
  // Name -> position in functions_ (names are unique): a module may bind 100k+ functions.
  std::unordered_map<std::string, size_t> index_;
  // Set for a zero-copy export: SaveToBytes writes metadata referring to this region.
  const std::optional<format::ExternalRegion> external_;
  // What a module loaded from bytes keeps until Records() builds its values; under resolve_mutex_.
  struct Pending {
    ffi::Bytes bytes;
    format::Parsed parsed;
  };
  std::optional<Pending> pending_;
  // ConfigureLoad's (library_file also NewPartialModule's), fixed once Records() built the values.
  storage::LoadOptions options_;
  std::shared_ptr<void> loaded_object_;  // the code's library, shared by Records()
  std::mutex resolve_mutex_;
  std::mutex mutex_;                                      // guards cache_
  std::unordered_map<std::string, ffi::Function> cache_;  // closures built on first lookup
};

PartialModuleObj* AsPartialModule(const ffi::Module& mod) {
  ffi::ModuleObj* obj = const_cast<ffi::ModuleObj*>(mod.operator->());
  return obj->kind() == kKind ? static_cast<PartialModuleObj*>(obj) : nullptr;
}

}  // namespace

namespace detail {

const std::vector<format::FunctionRecord>* PartialModuleRecords(const ffi::Module& mod) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm == nullptr ? nullptr : &pm->Records();
}

const format::ExternalRegion* PartialModuleRegion(const ffi::Module& mod) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm == nullptr || !pm->external_ ? nullptr : &*pm->external_;
}

std::shared_ptr<storage::File> LibraryFile(const ffi::Module& mod) {
  return PartialModuleRecords(mod) == nullptr ? nullptr
                                              : AsPartialModule(mod)->options_.library_file;
}

int ConfigureLoad(const ffi::Module& mod, const storage::LoadOptions& options) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm == nullptr ? -1 : pm->Configure(options);
}

ffi::Optional<ffi::Module> PartialModuleCode(const ffi::Module& mod) {
  PartialModuleObj* pm = AsPartialModule(mod);
  return pm == nullptr ? ffi::Optional<ffi::Module>() : pm->Wrapped();
}

ffi::Module NewPartialModule(std::vector<format::FunctionRecord> functions,
                             ffi::Optional<ffi::Module> code,
                             std::shared_ptr<storage::File> library_file) {
  auto pm = ffi::make_object<PartialModuleObj>(std::move(functions), std::move(code));
  pm->options_.library_file = std::move(library_file);
  return ffi::Module(pm);
}

int64_t ShardRankOf(const ffi::Any& obj) {
  auto m = obj.try_cast<ffi::Module>();
  if (!m.has_value() || PartialModuleRecords(*m) == nullptr) return -1;
  const PartialModuleObj* pm = AsPartialModule(*m);
  return pm->options_.shard_world > 0 ? pm->options_.shard_rank : -1;
}

void RefuseShardView(const ffi::Module& mod, const char* what) {
  if (PartialModuleRecords(mod) != nullptr) AsPartialModule(mod)->RefuseShardView(what);
}

ffi::Module WithExternalRegion(const ffi::Module& mod, format::ExternalRegion region) {
  RefuseShardView(mod, "exported");
  PartialModuleObj* pm = AsPartialModule(mod);
  ffi::Module out(
      ffi::make_object<PartialModuleObj>(pm->Records(), std::nullopt, std::move(region)));
  // Every import (the code first) travels with the copy: the same module tree as an inline export.
  for (const ffi::Any& import : mod->imports()) out->ImportModule(import.cast<ffi::Module>());
  return out;
}

}  // namespace detail

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("ffi.Module.load_from_bytes.partial_apply",
                             PartialModuleObj::LoadFromBytes);
  detail::RegisterGlobalOnce("tvm_partial.SaveToBytes",
                             [](ffi::Module m) { return m->SaveToBytes(); });
}

}  // namespace tvm_partial
