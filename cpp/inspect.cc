// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file inspect.cc
 * \brief What `tvm_partial.inspect` and `verify` ask of a file without loading it (open_weights:
 *        open_weights.cc): the same parser (format/) and the same placement rules
 * (storage/payload_source.h) the loader applies, so the three can never disagree.
 *
 * An artifact is a shared library: where its embedded bytes lie in the file is found without
 * running any of it (tvm_partial.LibraryModules, storage/module_tree.h); everything after that
 * is here.
 */
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format/common.h"
#include "format/format.h"
#include "registry.h"
#include "storage/file.h"
#include "storage/payload_source.h"
#include "storage/verify.h"
#include "storage/weights_file.h"

namespace tvm_partial {

namespace {

using Dict = ffi::Map<ffi::String, ffi::Any>;

/*! \brief A partial module's bytes as they lie in a file, parsed, and what Locate needs. */
struct FileArtifact {
  std::string blob;
  format::Parsed parsed;
  storage::Origin origin;
  bool bytes_only = false;  // save_to_bytes output: no library, so no external payloads here
};

/*! \brief save_to_bytes output of a module whose payloads lie in a library's file. */
[[noreturn]] void PayloadsElsewhere(const std::string& path, const format::Parsed& parsed) {
  TVM_FFI_THROW(ValueError) << path << " holds the bindings of a partial module whose payloads "
                            << "lie elsewhere (in the file of the library it was exported in, "
                            << "region " << parsed.symbol << "), not the payloads themselves: "
                            << "verify that library instead";
  TVM_FFI_UNREACHABLE();
}

/*! \brief Read and parse the bytes at [blob_offset, + blob_size) of the file open at `fd` (named
 *         `path`; the caller opened it once, so every read is of that file) (size -1: the whole
 *         file, save_to_bytes output, not a library). */
FileArtifact ReadArtifact(const std::string& path, int64_t fd, int64_t blob_offset,
                          int64_t blob_size) {
  FileArtifact out;
  out.origin.blob_file = storage::FromDescriptor(static_cast<int>(fd), path, "artifact");
  const storage::File& file = *out.origin.blob_file;
  const bool library = blob_size >= 0;
  if (library) out.origin.library = out.origin.blob_file;
  if (blob_size < 0) blob_size = static_cast<int64_t>(file.size) - blob_offset;
  if (blob_offset < 0 || blob_size < 0 || static_cast<uint64_t>(blob_offset) > file.size ||
      static_cast<uint64_t>(blob_size) > file.size - static_cast<uint64_t>(blob_offset)) {
    TVM_FFI_THROW(ValueError) << path << " is truncated: its partial module's " << blob_size
                              << " bytes at offset " << blob_offset
                              << " run past the end of the file (" << file.size << " bytes)";
  }
  out.blob.resize(static_cast<size_t>(blob_size));
  if (!storage::ReadAt(file, static_cast<uint64_t>(blob_offset), out.blob.size(), &out.blob[0])) {
    TVM_FFI_THROW(ValueError) << path << " is truncated inside its partial module's bytes";
  }
  try {
    out.parsed = format::Parse(out.blob.data(), out.blob.size());
  } catch (const ffi::Error& err) {
    TVM_FFI_THROW(ValueError) << path << ": " << err.message();
  }
  out.origin.library_path = storage::RealPath(file);
  out.origin.blob_offset = static_cast<uint64_t>(blob_offset);
  out.bytes_only = !library;
  return out;
}

/*! \brief {"function", "position", ["name"], "placement", "file_offset", "bytes", "hash",
 *         ["shared_by"]} per payload (its first binding; "shared_by": the other places of a
 *         tensor bound in several, [{"function", "position"}]), where `source` puts it. With
 *         `shards` (verify), a sharded tensor also gives one entry per rank ("rank", its byte
 *         range, its recorded hash); with `rank` >= 0 (verify(path, shard=(rank, world))) it
 *         gives only that rank's entry. */
ffi::Array<ffi::Any> PayloadEntries(const format::Parsed& parsed,
                                    const storage::PayloadSource& source, bool shards = false,
                                    int64_t rank = -1) {
  std::vector<ffi::Array<ffi::Any>> shared_by(parsed.payloads.size());
  for (const format::ParsedFunction& fn : parsed.functions) {
    for (const format::ParsedValue& v : fn.values) {
      if (v.kind != format::kSharedTensor) continue;
      Dict place;
      place.Set("function", fn.name);
      place.Set("position", v.index);
      shared_by[v.payload].push_back(place);
    }
  }
  ffi::Array<ffi::Any> out;
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    const format::ParsedFunction& fn = parsed.OwnerFunction(k);
    const format::ParsedValue& v = parsed.Owner(k);
    Dict e;
    e.Set("function", fn.name);
    e.Set("position", v.index);
    if (v.index < static_cast<int64_t>(fn.param_names.size())) {
      e.Set("name", fn.param_names[v.index]);
    }
    e.Set("placement", ffi::String(source.placement));
    e.Set("file", ffi::String(source.file->path));
    const uint64_t offset = source.offsets[k];
    e.Set("file_offset", static_cast<int64_t>(offset));
    e.Set("bytes", static_cast<int64_t>(v.tensor.nbytes));
    e.Set("hash", static_cast<int64_t>(v.tensor.hash));
    if (!shared_by[k].empty()) e.Set("shared_by", shared_by[k]);
    const format::Shard* shard = nullptr;
    for (const format::Shard& s : fn.shards) {
      if (s.position == v.index) shard = &s;
    }
    if (shard == nullptr || !shards) {
      out.push_back(e);
      continue;
    }
    if (rank < 0) out.push_back(e);  // the whole payload, then each rank's range
    const uint64_t per_rank = v.tensor.nbytes / static_cast<uint64_t>(shard->world);
    for (int64_t r = 0; r < shard->world; ++r) {
      if (rank >= 0 && r != rank) continue;
      Dict p = e;
      p.Set("rank", r);
      p.Set("file_offset", static_cast<int64_t>(offset + per_rank * static_cast<uint64_t>(r)));
      p.Set("bytes", static_cast<int64_t>(per_rank));
      p.Set("hash", static_cast<int64_t>(shard->hashes[static_cast<size_t>(r)]));
      out.push_back(p);
    }
  }
  return out;
}

/*! \brief verify(path, shard=(rank, world)): the artifact must record shards of that world. */
void CheckShardToVerify(const ffi::String& path, const format::Parsed& parsed, int64_t rank,
                        int64_t world) {
  const std::string problem = format::RankProblem(rank, world);
  if (!problem.empty()) {
    TVM_FFI_THROW(ValueError) << "verify: shard=(" << rank << ", " << world << "): " << problem;
  }
  if (!parsed.Sharded()) {
    TVM_FFI_THROW(ValueError) << path << " binds no sharded tensors (it was exported without "
                              << "shards=): verify it whole, without shard=";
  }
  for (const format::ParsedFunction& fn : parsed.functions) {
    for (const format::Shard& s : fn.shards) {
      if (s.world != world) {
        TVM_FFI_THROW(ValueError) << path << ": this artifact is sharded over world " << s.world
                                  << " (" << format::Where(fn, s.position) << "), not " << world;
      }
    }
  }
}

/*! \brief Hash each payload of `entries` (from `file`), calling progress(done, total). */
std::vector<uint64_t> HashAll(const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                              const storage::File& file,
                              const ffi::Optional<ffi::Function>& progress) {
  uint64_t total = 0;
  for (const auto& r : ranges) total += r.second;
  std::vector<uint64_t> out;
  uint64_t base = 0;
  std::function<void(uint64_t)> report;
  for (const auto& [offset, size] : ranges) {
    if (progress.has_value()) {
      report = [&](uint64_t done) {
        (*progress)(static_cast<int64_t>(base + done), static_cast<int64_t>(total));
      };
    }
    out.push_back(storage::HashRange(file, offset, size, report));
    base += size;
  }
  if (progress.has_value()) (*progress)(static_cast<int64_t>(total), static_cast<int64_t>(total));
  return out;
}

/*! \brief Each entry ({"file_offset", "bytes", ...}) hashed where it lies in `file` and marked
 *         "intact" when the hash is `expected(entry)`. */
ffi::Array<ffi::Any> CheckEntries(const ffi::Array<ffi::Any>& entries, const storage::File& file,
                                  const ffi::Optional<ffi::Function>& progress,
                                  const std::function<uint64_t(const Dict&)>& expected) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const ffi::Any& any : entries) {
    const Dict e = any.cast<Dict>();
    ranges.emplace_back(static_cast<uint64_t>(e.at("file_offset").cast<int64_t>()),
                        static_cast<uint64_t>(e.at("bytes").cast<int64_t>()));
  }
  const std::vector<uint64_t> got = HashAll(ranges, file, progress);
  ffi::Array<ffi::Any> out;
  for (size_t i = 0; i < got.size(); ++i) {
    Dict e = entries[i].cast<Dict>();
    if (!e.count("placement")) e.Set("placement", ffi::String("weights file"));
    e.Set("intact", got[i] == expected(e));
    out.push_back(e);
  }
  return out;
}

/*! \brief inspect: the description, where the payloads lie, or why they cannot be found. */
Dict InspectArtifact(const ffi::String& path, int64_t fd, int64_t blob_offset, int64_t blob_size) {
  FileArtifact art = ReadArtifact(path, fd, blob_offset, blob_size);
  Dict out = format::Describe(art.parsed);
  out.Set("real_path", ffi::String(art.origin.library_path));
  if (art.parsed.placement == format::Placement::kWeightsFile) {
    out.Set("weights_file_path",
            ffi::String(storage::Beside(art.origin.library_path, art.parsed.weights_file)));
  }
  if (art.bytes_only && art.parsed.external()) {
    out.Set("placement", ffi::String("elsewhere"));  // described, not located: no library here
    return out;
  }
  try {
    const storage::PayloadSource source = storage::Locate(art.parsed, art.origin);
    out.Set("placement", ffi::String(source.placement));
    out.Set("payload_base", static_cast<int64_t>(source.base));
    out.Set("payload_entries", PayloadEntries(art.parsed, source));
  } catch (const ffi::Error& err) {
    Dict problem;
    problem.Set("kind", ffi::String(err.kind()));
    problem.Set("message", ffi::String(err.message()));
    out.Set("problem", problem);
  }
  return out;
}

/*! \brief verify: every payload hashed where Locate puts it; {"payloads": [..., "intact"]}. */
Dict VerifyArtifact(const ffi::String& path, int64_t fd, int64_t blob_offset, int64_t blob_size,
                    ffi::Optional<ffi::Function> progress, int64_t rank, int64_t world) {
  FileArtifact art = ReadArtifact(path, fd, blob_offset, blob_size);
  if (world > 0) CheckShardToVerify(path, art.parsed, rank, world);
  if (art.bytes_only && art.parsed.external()) PayloadsElsewhere(path, art.parsed);
  const storage::PayloadSource source = storage::Locate(art.parsed, art.origin);
  const ffi::Array<ffi::Any> payloads = CheckEntries(
      PayloadEntries(art.parsed, source, /*shards=*/true, world > 0 ? rank : -1), *source.file,
      progress, [](const Dict& e) { return static_cast<uint64_t>(e.at("hash").cast<int64_t>()); });
  Dict out;
  out.Set("placement", ffi::String(source.placement));
  out.Set("payloads", payloads);
  return out;
}

/*! \brief The tensors of a weights file as entries (tensor keys only), by file offset. */
ffi::Array<ffi::Any> WeightsEntries(const weights::WeightsFile& file) {
  const auto recorded = weights::RecordedBindings(file);
  std::map<std::string, std::vector<std::string>> aliases;  // stored key -> its other places' keys
  for (const auto& [alias, stored] : weights::RecordedShared(file))
    aliases[stored].push_back(alias);
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [key, e] : file.entries) {
    if (weights::WeightsFile::IsTensorKey(key)) order.emplace_back(e.begin, key);
  }
  std::sort(order.begin(), order.end());
  ffi::Array<ffi::Any> out;
  for (const auto& [begin, key] : order) {
    const weights::Entry& e = file.entries.at(key);
    Dict d;
    d.Set("key", ffi::String(key));
    d.Set("dtype", ffi::String(e.dtype->tvm));
    d.Set("shape", ffi::Array<int64_t>(e.shape.begin(), e.shape.end()));
    d.Set("file_offset", static_cast<int64_t>(file.data_start + e.begin));
    d.Set("bytes", static_cast<int64_t>(e.end - e.begin));
    // Whether open_weights can hand the tensor out as a view of the mapping (else a copy).
    d.Set("aligned", (file.data_start + e.begin) % format::kPayloadAlignment == 0);
    const weights::KeyRef ref = weights::ParseKey(file.file->path, key);
    auto where = recorded.find(key);
    if (where != recorded.end()) {
      d.Set("function", ffi::String(where->second.first));
      d.Set("position", where->second.second);
    } else {
      d.Set("function", ffi::String(ref.function));
      if (ref.name.empty()) d.Set("position", ref.position);
    }
    d.Set("name", ffi::String(ref.name.empty() ? std::to_string(ref.position) : ref.name));
    auto others = aliases.find(key);
    if (others != aliases.end()) {
      ffi::Array<ffi::Any> places;
      for (const std::string& alias : others->second) {
        Dict place;
        place.Set("key", ffi::String(alias));
        auto at = recorded.find(alias);
        if (at != recorded.end()) {
          place.Set("function", ffi::String(at->second.first));
          place.Set("position", at->second.second);
        }
        places.push_back(place);
      }
      d.Set("shared_by", places);
    }
    out.push_back(d);
  }
  return out;
}

Dict InspectWeights(const ffi::String& path) {
  if (weights::IsIndex(path)) {  // an index: each file named, each tensor with its file
    const weights::WeightsSet set = weights::OpenSet(path);
    Dict out;
    ffi::Array<ffi::Any> files, tensors;
    int64_t total = 0;
    for (const weights::WeightsFile& file : set.files) {
      total += static_cast<int64_t>(file.file->size);
      files.push_back(Dict{{"path", ffi::String(file.file->path)},
                           {"bytes", static_cast<int64_t>(file.file->size)}});
      for (const ffi::Any& any : WeightsEntries(file)) {
        Dict entry = any.cast<Dict>();
        entry.Set("file", ffi::String(file.file->path));
        tensors.push_back(entry);
      }
    }
    out.Set("total_bytes", total);
    out.Set("tensors", tensors);
    out.Set("files", files);
    out.Set("metadata", Dict());
    return out;
  }
  const weights::WeightsFile file = weights::Open(path);
  Dict out;
  out.Set("total_bytes", static_cast<int64_t>(file.file->size));
  out.Set("data_offset", static_cast<int64_t>(file.data_start));
  out.Set("tensors", WeightsEntries(file));
  Dict metadata;
  for (const auto& [k, v] : file.metadata) metadata.Set(ffi::String(k), ffi::String(v));
  out.Set("metadata", metadata);
  if (auto hashes = weights::RecordedHashes(file)) {
    Dict h;
    for (const auto& [k, v] : *hashes) h.Set(ffi::String(k), static_cast<int64_t>(v));
    out.Set("hashes", h);
  }
  return out;
}

Dict VerifyWeights(const ffi::String& path, ffi::Optional<ffi::Function> progress) {
  const weights::WeightsSet set = weights::OpenSet(path);  // an index: each file it names
  std::vector<ffi::Array<ffi::Any>> entries;
  std::vector<std::map<std::string, uint64_t>> hashes;
  int64_t total = 0;
  for (const weights::WeightsFile& file : set.files) {
    const std::string& name = file.file->path;
    const std::string of_index = set.indexed ? ", a file of the index " + set.path + "," : "";
    auto recorded = weights::RecordedHashes(file);
    if (!recorded.has_value()) {
      TVM_FFI_THROW(ValueError) << "weights file " << name << of_index << " records no payload "
                                << "hashes (it was not written by tvm_partial.save_weights): its "
                                << "header is consistent, its bytes cannot be checked";
    }
    entries.push_back(WeightsEntries(file));
    for (const ffi::Any& any : entries.back()) {
      const Dict e = any.cast<Dict>();
      if (!recorded->count(std::string(e.at("key").cast<ffi::String>()))) {
        TVM_FFI_THROW(ValueError) << "weights file " << name << of_index << ": tensor '"
                                  << e.at("key").cast<ffi::String>() << "' has no recorded hash";
      }
      total += e.at("bytes").cast<int64_t>();
    }
    hashes.push_back(*std::move(recorded));
  }
  ffi::Array<ffi::Any> payloads;
  int64_t base = 0;  // bytes of the files before this one, for one progress over them all
  for (size_t f = 0; f < set.files.size(); ++f) {
    ffi::Optional<ffi::Function> step;
    if (progress.has_value()) {
      step =
          ffi::Function::FromTyped([&](int64_t done, int64_t) { (*progress)(base + done, total); });
    }
    auto expected = [&recorded = hashes[f]](const Dict& e) {
      return recorded.at(std::string(e.at("key").cast<ffi::String>()));
    };
    for (const ffi::Any& any : CheckEntries(entries[f], *set.files[f].file, step, expected)) {
      Dict e = any.cast<Dict>();
      base += e.at("bytes").cast<int64_t>();
      if (set.indexed) e.Set("file", ffi::String(set.files[f].file->path));
      payloads.push_back(e);
    }
  }
  Dict out;
  out.Set("payloads", payloads);
  return out;
}

/*! \brief What the file `path` (open at `fd`) is, from its first bytes: "library" (ELF),
 *         "save_to_bytes" (the format's magic), "weights file" (a safetensors header: its u64
 *         length, then JSON; or a path the weights reader takes for an index), else "unknown";
 *         from its name alone, "onnx model" (a protobuf has no magic). */
ffi::String FileKind(const ffi::String& path, int64_t fd) {
  if (weights::IsIndex(path)) return "weights file";
  if (weights::IsOnnx(path)) return "onnx model";
  const std::shared_ptr<storage::File> file =
      storage::FromDescriptor(static_cast<int>(fd), path, "artifact");
  char head[9] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(file->size, sizeof(head)));
  if (!storage::ReadAt(*file, 0, n, head)) {
    TVM_FFI_THROW(RuntimeError) << "cannot read the artifact " << path;
  }
  if (n >= sizeof(format::kMagic) && std::memcmp(head, format::kMagic, sizeof(format::kMagic)) == 0)
    return "save_to_bytes";
  if (n >= 4 && std::memcmp(head,
                            "\x7f"
                            "ELF",
                            4) == 0)
    return "library";
  if (n == sizeof(head) && head[8] == '{') return "weights file";
  return "unknown";
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("tvm_partial.InspectArtifact", InspectArtifact);
  detail::RegisterGlobalOnce("tvm_partial.VerifyArtifact", VerifyArtifact);
  detail::RegisterGlobalOnce("tvm_partial.InspectWeights", InspectWeights);
  detail::RegisterGlobalOnce("tvm_partial.VerifyWeights", VerifyWeights);
  detail::RegisterGlobalOnce("tvm_partial.FileKind", FileKind);
}

}  // namespace tvm_partial
