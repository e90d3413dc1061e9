// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file load.cc
 * \brief Loading what the path holds now (a replaced file as a new object), payloads read from
 *        the file opened, every record built at load so errors show there.
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "format/common.h"
#include "partial_module.h"
#include "registry.h"
#include "storage/library.h"
#include "storage/payload_source.h"

namespace tvm_partial {

namespace {

// `mod` and every module it imports, each once, depth first.
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

ffi::Optional<ffi::Module> FindLibrary(const ffi::Array<ffi::Any>& imports, int depth) {
  if (depth > 64) return std::nullopt;
  for (const ffi::Any& any : imports) {
    ffi::Module m = any.cast<ffi::Module>();
    if (std::strcmp(m->kind(), "library") == 0) return m;
    if (auto found = FindLibrary(m->imports(), depth + 1)) return found;
  }
  return std::nullopt;
}

std::vector<BoundList> DecodeValues(const char* blob, const format::Parsed& parsed,
                                    const ffi::Array<ffi::Any>& imports,
                                    const storage::LoadOptions& options) {
  storage::Origin origin;
  origin.blob = blob;
  origin.options = options;
  const bool own_weights = options.weights_file.empty();
  if (!own_weights && !imports.empty()) {
    origin.model = ModelRecordOf(imports[0].cast<ffi::Module>());
  }
  ffi::Optional<ffi::Module> library = FindLibrary(imports);
  if (library.has_value() && parsed.external() && own_weights) {
    storage::LoadedLibrary file = storage::OpenLoadedLibrary(*library, options.library_file);
    origin.library = file.file;
    origin.library_path = file.real_path;
  } else if (library.has_value() && own_weights && options.library_file == nullptr) {
    // Inline payloads lie in the bytes mapped; still, where TVM's loader (which answers a name
    // with its cached object) loaded it, a file replaced at the path since is refused.
    if (storage::WasReplaced(*library)) storage::OpenLoadedLibrary(*library);  // says so
  }
  const storage::PayloadSource source = storage::Locate(parsed, origin);
  std::vector<ffi::Tensor> tensors = storage::MakeTensors(parsed, source, origin);
  std::vector<BoundList> out(parsed.functions.size());
  for (size_t i = 0; i < out.size(); ++i) {
    for (const format::ParsedValue& v : parsed.functions[i].values) {
      // One tensor object per payload: every place of a shared tensor holds the same one.
      const bool tensor = v.kind == format::kTensor || v.kind == format::kSharedTensor;
      out[i].emplace_back(v.index, tensor ? ffi::Any(tensors[v.payload]) : v.scalar);
    }
  }
  return out;
}

}  // namespace detail

namespace {

// The artifact `library` holds now, opened from `fd` (the one Python checked) or by name; every
// library of its tree proven to be that file, every partial module configured by `options`.
ffi::Module LoadArtifact(const std::string& library, storage::LoadOptions options, int fd) {
  const bool shard = options.shard_world > 0;  // checked by the caller (format::RankWorld)
  // dlopen searches the library path for a bare file name: pass a path.
  const std::string path = library.find('/') == std::string::npos ? "./" + library : library;
  options.library_file = fd >= 0 ? storage::FromDescriptor(fd, path, "artifact")
                                 : storage::OpenRegular(path, "artifact");
  const storage::File& file = *options.library_file;
  storage::CheckComplete(file);  // before the system's loader maps it
  // Every library of the tree must be the file (the loader may answer the name with another's).
  auto is_file = [&file](const ffi::Module& mod) {
    std::vector<ffi::Module> all;
    Collect(mod, &all);
    return std::all_of(all.begin(), all.end(), [&file](const ffi::Module& m) {
      return std::strcmp(m->kind(), "library") != 0 || storage::LoadedFrom(m, file);
    });
  };
  ffi::Module mod = storage::LoadArtifactFile(options.library_file, path, is_file);
  std::vector<ffi::Module> all;
  Collect(mod, &all);
  int ours = 0, sharded = 0;
  for (const ffi::Module& m : all) {
    try {
      const int configured = detail::ConfigureLoad(m, options);
      ours += configured >= 0;
      sharded += configured == 1;
      if (shard) detail::RetargetRelaxVM(m, options.rank_device);  // the VM runs on the rank's
    } catch (const ffi::Error& err) {
      TVM_FFI_THROW(ValueError) << library << ": " << err.message();
    }
  }
  if (!options.weights_file.empty() && ours == 0) {
    TVM_FFI_THROW(ValueError) << library << " holds no partial module that this tvm-partial "
                              << "loads, so it binds no tensors that the weights file "
                              << options.weights_file << " could replace";
  }
  if (shard && sharded == 0) {
    TVM_FFI_THROW(ValueError) << library << " binds no sharded tensors (it was exported without "
                              << "shards=): load it whole, without shard=, or bind with "
                              << "partial(..., shards={name: dim}, world=" << options.shard_world
                              << ") and export again";
  }
  for (const ffi::Module& m : all) detail::PartialModuleRecords(m);  // built now
  return mod;
}

}  // namespace

ffi::Module LoadWithWeights(const std::string& library, const std::string& weights_file) {
  if (weights_file.empty()) {
    TVM_FFI_THROW(ValueError) << "LoadWithWeights: weights_file is empty; name a safetensors file";
  }
  return LoadArtifact(library, {nullptr, weights_file}, -1);
}

ffi::Module LoadShard(const std::string& library, int64_t rank, int64_t world,
                      const std::string& weights_file, DLDevice device) {
  const auto shard = format::RankWorld("LoadShard", ffi::Array<int64_t>{rank, world});
  return LoadArtifact(library, {nullptr, weights_file, shard.first, shard.second, device}, -1);
}

namespace {

// An integer a disco global answers on this worker (`runtime.disco.worker_rank`).
int64_t DiscoValue(const char* name) {
  auto f = ffi::Function::GetGlobal(name);
  const char* outside =
      ": call it on a disco worker, or give the rank: tvm_partial.load(path, "
      "shard=(rank, world))";
  if (!f.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "tvm_partial.LoadShard(path) reads the rank from " << name
                                << ", which this process lacks" << outside;
  }
  try {
    return (*f)().cast<int64_t>();
  } catch (const ffi::Error& err) {  // registered (import tvm does), but not a worker's thread
    TVM_FFI_THROW(RuntimeError) << "tvm_partial.LoadShard(path) reads the rank from " << name
                                << ", which this thread cannot answer (it is not a disco worker's: "
                                << err.message() << ")" << outside;
  }
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // A disco worker's rank view (the driver calls sess.get_global_func(...)(path); no Python there).
  detail::RegisterGlobalOnce("tvm_partial.LoadShard", [](ffi::String path) {
    const int64_t rank = DiscoValue("runtime.disco.worker_rank");  // refuses off a worker
    const int64_t world = DiscoValue("runtime.disco.world_size");
    auto device = ffi::Function::GetGlobal("runtime.disco.device");  // cpu:0 without a CCL
    return LoadShard(path, rank, world, "",
                     device.has_value() ? (*device)().cast<DLDevice>() : DLDevice{kDLCPU, 0});
  });
  // tvm_partial.load of the file open at `fd`, whole or a (rank, world) view; weights_file "": own.
  detail::RegisterGlobalOnce(
      "tvm_partial.LoadArtifact", [](ffi::String path, int64_t fd, ffi::String weights_file,
                                     ffi::Optional<ffi::Array<int64_t>> shard) {
        const auto [rank, world] = shard.has_value() ? format::RankWorld("load", *shard)
                                                     : std::pair<int64_t, int64_t>{-1, 0};
        return LoadArtifact(path, {nullptr, weights_file, rank, world}, fd);
      });
  // load_from_bytes, over `wrapped` (the code bound) when given; records built now.
  detail::RegisterGlobalOnce(
      "tvm_partial.LoadFromBytes", [](ffi::Bytes bytes, ffi::Optional<ffi::Module> wrapped) {
        static const ffi::Function load =
            ffi::Function::GetGlobalRequired("ffi.Module.load_from_bytes.partial_apply");
        ffi::Module mod = load(bytes).cast<ffi::Module>();
        if (wrapped.has_value()) mod->ImportModule(*wrapped);
        std::vector<ffi::Module> all;
        Collect(mod, &all);
        for (const ffi::Module& m : all) detail::PartialModuleRecords(m);
        return mod;
      });
}

}  // namespace tvm_partial
