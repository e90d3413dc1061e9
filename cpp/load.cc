// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file load.cc
 * \brief Loading partial modules: the values of a loaded module's records (DecodeRecords),
 *        `tvm_partial::LoadWithWeights`, and the global that makes a loaded tree build its records
 *        now (`tvm_partial.ResolveLoaded`, what `tvm_partial.load` calls so errors show at load).
 *
 * A module loaded from bytes is parsed at once (malformed bytes are refused by the loader) and
 * builds its values on first use: only then has the library loader attached its imports, and the
 * library among them is the object whose file holds the payloads (storage/loaded_library.h).
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "format/common.h"
#include "partial_module.h"
#include "registry.h"
#include "storage/loaded_library.h"
#include "storage/payload_source.h"

namespace tvm_partial {

namespace {

/*! \brief The first module of kind "library" among `imports` and theirs (depth first, in
 *         import order): the code the library loader attached to a module it loaded. */
ffi::Optional<ffi::Module> FindLibrary(const ffi::Array<ffi::Any>& imports, int depth = 0) {
  if (depth > 64) return std::nullopt;
  for (const ffi::Any& any : imports) {
    ffi::Module m = any.cast<ffi::Module>();
    if (std::strcmp(m->kind(), "library") == 0) return m;
    if (auto found = FindLibrary(m->imports(), depth + 1)) return found;
  }
  return std::nullopt;
}

/*! \brief `mod` and every module it imports, each once, depth first. */
void Collect(const ffi::Module& mod, std::vector<ffi::Module>* out, int depth = 0) {
  if (depth > 64) return;
  for (const ffi::Module& seen : *out) {
    if (seen.same_as(mod)) return;
  }
  out->push_back(mod);
  for (const ffi::Any& any : mod->imports()) Collect(any.cast<ffi::Module>(), out, depth + 1);
}

}  // namespace

namespace detail {

std::vector<format::FunctionRecord> DecodeRecords(const char* blob, const format::Parsed& parsed,
                                                  const std::string& override_weights,
                                                  const ffi::Array<ffi::Any>& imports,
                                                  int64_t shard_rank, int64_t shard_world,
                                                  DLDevice rank_device) {
  storage::Origin origin;
  origin.blob = blob;
  origin.override_weights = override_weights;
  origin.shard_rank = shard_rank;
  origin.shard_world = shard_world;
  origin.rank_device = rank_device;
  if (!override_weights.empty() && !imports.empty()) {
    origin.compiled_in = CompiledInOf(imports[0].cast<ffi::Module>());
  }
  ffi::Optional<ffi::Module> library = FindLibrary(imports);
  if (library.has_value() && parsed.external() && override_weights.empty()) {
    storage::LoadedLibrary file = storage::OpenLoadedLibrary(*library, parsed.symbol);
    origin.library = file.file;
    origin.library_path = file.real_path;
    origin.header = file.symbol_bytes;
  } else if (library.has_value() && override_weights.empty()) {
    // Inline payloads are the loader's own (in the bytes it mapped); still, a file replaced at
    // the path since this process first loaded it is refused rather than served as the old
    // version the caller did not ask for. A file removed since leaves only that version.
    if (storage::WasReplaced(*library)) storage::OpenLoadedLibrary(*library);  // says so
  }
  const storage::PayloadSource source = storage::Locate(parsed, origin);
  std::vector<ffi::Tensor> tensors = storage::MakeTensors(parsed, source, origin);
  std::vector<format::FunctionRecord> out;
  out.reserve(parsed.functions.size());
  for (const format::ParsedFunction& fn : parsed.functions) {
    format::FunctionRecord rec{fn.name, fn.param_names, {}};
    rec.outputs = fn.outputs;
    for (const format::ParsedValue& v : fn.values) {
      if (v.kind == format::kTensor || v.kind == format::kSharedTensor) {
        // One tensor object per payload: every place of a shared tensor holds the same one.
        rec.bound.emplace_back(v.index, tensors[v.payload]);
      } else {
        rec.bound.emplace_back(v.index, v.scalar);
      }
    }
    out.push_back(std::move(rec));
  }
  return out;
}

/*! \brief Build the records of every partial module of this copy in `mod`'s tree; how many.
 *         With `path` (what was loaded), first refuse unless every library in the tree was
 *         mapped from that very file (storage::CheckLoadedFrom). */
int ResolveTree(const ffi::Module& mod, const std::string& path) {
  std::vector<ffi::Module> all;
  Collect(mod, &all);
  if (!path.empty()) {
    for (const ffi::Module& m : all) {
      if (std::strcmp(m->kind(), "library") == 0) storage::CheckLoadedFrom(m, path);
    }
  }
  int count = 0;
  for (const ffi::Module& m : all) count += PartialModuleRecords(m) != nullptr;
  return count;
}

}  // namespace detail

ffi::Module LoadWithWeights(const std::string& library, const std::string& weights_file) {
  if (weights_file.empty()) {
    TVM_FFI_THROW(ValueError) << "LoadWithWeights: weights_file is empty; name a safetensors file";
  }
  // dlopen searches the library path for a bare file name: pass a path.
  const std::string path = library.find('/') == std::string::npos ? "./" + library : library;
  ffi::Module mod = ffi::Module::LoadFromFile(path);
  std::vector<ffi::Module> all;
  Collect(mod, &all);
  int overridden = 0;
  for (const ffi::Module& m : all) overridden += detail::SetWeightsOverride(m, weights_file);
  if (overridden == 0) {
    TVM_FFI_THROW(ValueError) << library << " holds no partial module that this tvm-partial "
                              << "loads, so it binds no tensors that the weights file "
                              << weights_file << " could replace";
  }
  detail::ResolveTree(mod, path);
  return mod;
}

ffi::Module LoadShard(const std::string& library, int64_t rank, int64_t world,
                      const std::string& weights_file, DLDevice device) {
  if (world < 1 || rank < 0 || rank >= world) {
    TVM_FFI_THROW(ValueError) << "LoadShard: rank " << rank << " of world " << world
                              << " is not a rank: give 0 <= rank < world";
  }
  const std::string path = library.find('/') == std::string::npos ? "./" + library : library;
  ffi::Module mod = ffi::Module::LoadFromFile(path);
  std::vector<ffi::Module> all;
  Collect(mod, &all);
  int sharded = 0;
  for (const ffi::Module& m : all) {
    if (!weights_file.empty()) detail::SetWeightsOverride(m, weights_file);
    try {
      sharded += detail::SetShard(m, rank, world, device) == 1;
      detail::RetargetRelaxVM(m, device);  // a Relax model's VM runs where its tensors are
    } catch (const ffi::Error& err) {
      TVM_FFI_THROW(ValueError) << library << ": " << err.message();
    }
  }
  if (sharded == 0) {
    TVM_FFI_THROW(ValueError) << library << " binds no sharded tensors (it was exported without "
                              << "shards=): load it whole, without shard=, or bind with "
                              << "partial(..., shards={name: dim}, world=" << world
                              << ") and export again";
  }
  detail::ResolveTree(mod, path);
  return mod;
}

namespace {

/*! \brief An integer a disco global answers on this worker (`runtime.disco.worker_rank`). */
int64_t DiscoValue(const char* name) {
  auto f = ffi::Function::GetGlobal(name);
  if (!f.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "tvm_partial.LoadShard(path) reads the rank from " << name
                                << ", which this process lacks: call it on a disco worker, or "
                                << "give the rank: tvm_partial.load(path, shard=(rank, world))";
  }
  return (*f)().cast<int64_t>();
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // On a disco worker: the worker's rank of the session's world (what the driver calls through
  // sess.get_global_func("tvm_partial.LoadShard")(path); the workers run no Python of ours).
  detail::RegisterGlobalOnce("tvm_partial.LoadShard", [](ffi::String path) {
    auto device = ffi::Function::GetGlobal("runtime.disco.device");  // cpu:0 without a CCL
    return LoadShard(path, DiscoValue("runtime.disco.worker_rank"),
                     DiscoValue("runtime.disco.world_size"), "",
                     device.has_value() ? (*device)().cast<DLDevice>() : DLDevice{kDLCPU, 0});
  });
  // Any rank (tvm_partial.load(path, shard=(rank, world), weights_file=...)); "": no override.
  detail::RegisterGlobalOnce(
      "tvm_partial.LoadShardOfRank",
      [](ffi::String path, int64_t rank, int64_t world, ffi::String weights_file) {
        return LoadShard(path, rank, world, weights_file);
      });
  detail::RegisterGlobalOnce(
      "tvm_partial.LoadWithWeights",
      [](ffi::String library, ffi::String path) { return LoadWithWeights(library, path); });
  // Build the records of every partial module in a loaded tree now (each builds them on first
  // use otherwise), so that a missing or damaged payload is reported by the load itself.
  detail::RegisterGlobalOnce("tvm_partial.ResolveLoaded",
                             [](ffi::Module mod, ffi::Optional<ffi::String> path) {
                               return detail::ResolveTree(mod, path.value_or(""));
                             });
}

}  // namespace tvm_partial
