// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file inspect.cc
 * \brief `tvm_partial.inspect`/`verify` of an artifact or weights file (Python returns the answer
 *        as is), by the loader's parser and placement rules (format/, storage/payload_source.h) so
 *        they never disagree; a library is read, never run (storage/library.h).
 */
#include "inspect.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bind/outputs.h"
#include "format/common.h"
#include "format/format.h"
#include "format/hash.h"
#include "partial_module.h"
#include "registry.h"
#include "storage/library.h"
#include "storage/payload_source.h"
#include "storage/verify.h"
#include "storage/weights_file.h"

namespace tvm_partial {

namespace {

/*! \brief A payload's file and the hash recorded for it. */
using Recorded = std::pair<const storage::File*, uint64_t>;

/*! \brief verify's report: each entry ("file_offset", "bytes") hashed in its `recorded` file (one
 *         progress over all), "intact" if it matches; with `name_files`, its "weights_file" too. */
Dict Report(const ffi::String& path, const ffi::Array<ffi::Any>& entries,
            const std::vector<Recorded>& recorded, const ffi::Optional<ffi::Function>& progress,
            bool name_files) {
  uint64_t total = 0;
  for (const ffi::Any& any : entries) {
    total += static_cast<uint64_t>(any.cast<Dict>().at("bytes").cast<int64_t>());
  }
  uint64_t base = 0;
  auto report = [&](uint64_t done) {
    if (progress.has_value())
      (*progress)(static_cast<int64_t>(base + done), static_cast<int64_t>(total));
  };
  ffi::Array<ffi::Any> payloads, damaged;
  for (size_t i = 0; i < entries.size(); ++i) {
    Dict p = entries[i].cast<Dict>();
    const auto [file, hash] = recorded[i];
    const uint64_t offset = static_cast<uint64_t>(p.at("file_offset").cast<int64_t>());
    const uint64_t size = static_cast<uint64_t>(p.at("bytes").cast<int64_t>());
    const bool intact = storage::HashRange(*file, offset, size, report) == hash;
    p.Set("intact", intact);
    if (name_files) p.Set("weights_file", ffi::String(file->path));
    base += size;
    payloads.push_back(p);
    if (!intact) damaged.push_back(p);
  }
  if (progress.has_value()) (*progress)(static_cast<int64_t>(total), static_cast<int64_t>(total));
  return Dict{{"path", path},
              {"intact", damaged.empty()},
              {"checked", static_cast<int64_t>(payloads.size())},
              {"bytes", static_cast<int64_t>(total)},
              {"payloads", payloads},
              {"damaged", damaged}};
}

// A weights file's tensors by offset, as verify reports them; `shared_by` adds a tied one's places.
ffi::Array<ffi::Any> WeightsEntries(const weights::WeightsFile& file, bool shared_by) {
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
    const weights::KeyRef ref = weights::ParseKey(file.file->path, key);
    const auto where = recorded.find(key);
    const bool known = where != recorded.end();
    Dict d{{"key", ffi::String(key)},
           {"function", ffi::String(known ? where->second.first : ref.function)},
           {"position", known              ? ffi::Any(where->second.second)
                        : ref.name.empty() ? ffi::Any(ref.position)
                                           : ffi::Any()},
           {"name", ffi::String(ref.name.empty() ? std::to_string(ref.position) : ref.name)},
           {"placement", ffi::String("weights file")},
           {"dtype", ffi::String(e.dtype->tvm)},
           {"shape", ffi::Array<int64_t>(e.shape.begin(), e.shape.end())},
           {"file_offset", static_cast<int64_t>(file.data_start + e.begin)},
           {"bytes", static_cast<int64_t>(e.end - e.begin)}};
    const auto others = aliases.find(key);
    if (shared_by && others != aliases.end()) {
      ffi::Array<ffi::Any> places;
      for (const std::string& alias : others->second) {
        Dict place{{"key", ffi::String(alias)}};
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

// inspect of a safetensors file or index: an artifact description's keys, each tensor's key, hash.
Dict InspectWeights(const ffi::String& path, std::shared_ptr<storage::File> file) {
  const weights::WeightsSet set = weights::OpenSet(path, std::move(file));
  std::vector<std::string> order;  // functions, as first seen
  std::map<std::string, ffi::Array<ffi::Any>> functions;
  int64_t total = 0, constant = 0;
  bool recorded = false;
  ffi::Array<ffi::Any> files;
  for (const weights::WeightsFile& file : set.files) {
    total += static_cast<int64_t>(file.file->size);
    files.push_back(Dict{{"path", ffi::String(file.file->path)},
                         {"bytes", static_cast<int64_t>(file.file->size)}});
    const auto hashes = weights::RecordedHashes(file);
    recorded = recorded || hashes.has_value();
    for (const ffi::Any& any : WeightsEntries(file, true)) {
      const Dict t = any.cast<Dict>();
      const std::string key(t.at("key").cast<ffi::String>());
      const int64_t offset = t.at("file_offset").cast<int64_t>();
      // "aligned": whether open_weights hands the tensor out as a view of the mapping, not a copy.
      Dict b{{"position", t.at("position") == nullptr ? t.at("key") : t.at("position")},
             {"name", t.at("name")},
             {"kind", ffi::String("tensor")},
             {"dtype", t.at("dtype")},
             {"shape", t.at("shape")},
             {"device", ffi::String("cpu:0")},
             {"bytes", t.at("bytes")},
             {"offset", offset},
             {"key", t.at("key")},
             {"aligned", offset % format::kPayloadAlignment == 0}};
      if (set.indexed) b.Set("file", ffi::String(file.file->path));
      if (t.count("shared_by")) b.Set("shared_by", t.at("shared_by"));
      if (hashes.has_value() && hashes->count(key)) {
        b.Set("hash", ffi::String(hash::HashHex(hashes->at(key))));
      }
      constant += t.at("bytes").cast<int64_t>();
      const std::string function(t.at("function").cast<ffi::String>());
      if (!functions.count(function)) order.push_back(function);
      functions[function].push_back(b);
    }
  }
  ffi::Array<ffi::Any> fns;
  for (const std::string& name : order) {
    fns.push_back(Dict{{"name", ffi::String(name)},
                       {"param_names", ffi::Array<ffi::Any>()},
                       {"free", ffi::Array<ffi::Any>()},
                       {"bindings", functions[name]}});
  }
  Dict metadata;
  if (!set.indexed) {
    for (const auto& [k, v] : set.files[0].metadata) metadata.Set(ffi::String(k), ffi::String(v));
  }
  return Dict{{"path", path},
              {"kind", ffi::String("weights file")},
              {"format_version", ffi::String("safetensors")},
              {"total_bytes", total},
              {"constant_bytes", constant},
              {"payloads", ffi::String("weights file")},
              {"region", ffi::Any()},
              {"payload_hashes",
               ffi::String(recorded ? "recorded, not checked (run tvm-partial verify)"
                                    : "none recorded (not written by tvm_partial.save_weights)")},
              {"functions", fns},
              {"metadata", metadata},
              {"files", set.indexed ? ffi::Any(files) : ffi::Any()},
              {"self_contained", ffi::Any()}};
}

/*! \brief verify of a save_weights file (or each of an index's): payloads against header hashes. */
Dict VerifyWeights(const ffi::String& path, std::shared_ptr<storage::File> file,
                   const ffi::Optional<ffi::Function>& progress) {
  const weights::WeightsSet set = weights::OpenSet(path, std::move(file));
  ffi::Array<ffi::Any> payloads;
  std::vector<Recorded> hashes;
  for (const weights::WeightsFile& file : set.files) {
    const std::string of_index = set.indexed ? ", a file of the index " + set.path + "," : "";
    const auto recorded = weights::RecordedHashes(file);
    if (!recorded.has_value()) {
      TVM_FFI_THROW(ValueError) << "weights file " << file.file->path << of_index
                                << " records no payload "
                                << "hashes (it was not written by tvm_partial.save_weights): its "
                                << "header is consistent, its bytes cannot be checked";
    }
    for (const ffi::Any& any : WeightsEntries(file, false)) {
      const ffi::String key = any.cast<Dict>().at("key").cast<ffi::String>();
      const auto hash = recorded->find(std::string(key));
      if (hash == recorded->end()) {
        TVM_FFI_THROW(ValueError) << "weights file " << file.file->path << of_index << ": tensor '"
                                  << key << "' has no recorded hash";
      }
      payloads.push_back(any);
      hashes.emplace_back(file.file.get(), hash->second);
    }
  }
  return Report(path, payloads, hashes, progress, set.indexed);
}

/*! \brief An artifact's partial module, parsed; in a library, what TVM embedded beside it. */
struct Artifact {
  std::optional<storage::LibraryModules> library;  // none: save_to_bytes output
  format::Parsed parsed;
  storage::Origin origin;  // blob_file: the file, opened once (every read is of it)
};

Artifact ReadArtifact(const ffi::String& path, std::shared_ptr<storage::File> opened,
                      const std::string& kind) {
  Artifact out;
  out.origin.blob_file = std::move(opened);
  const storage::File& file = *out.origin.blob_file;
  uint64_t blob_offset = 0;
  uint64_t blob_size = file.size;  // save_to_bytes: the whole file
  if (kind == "library") {
    storage::CheckComplete(file);  // what the loaders refuse before the system's loader runs
    out.library = storage::ReadLibraryModules(file);
    out.origin.library = out.origin.blob_file;
    const std::vector<storage::EmbeddedModule>& modules = out.library->modules;
    const auto m =
        std::find_if(modules.begin(), modules.end(),
                     [](const storage::EmbeddedModule& m) { return m.kind == "partial_apply"; });
    if (m == modules.end()) {
      std::string kinds;
      for (const storage::EmbeddedModule& e : modules)
        kinds += (kinds.empty() ? "" : ", ") + e.kind;
      TVM_FFI_THROW(ValueError) << path << " is not a tvm-partial artifact: it embeds no "
                                << "partial_apply module (embedded modules: "
                                << (kinds.empty() ? "none" : kinds) << ")";
    }
    blob_offset = m->offset;  // within the file: ReadLibraryModules checks each module's bytes
    blob_size = m->size;
  }
  std::string blob(static_cast<size_t>(blob_size), '\0');
  if (!storage::ReadAt(file, blob_offset, blob.size(), &blob[0])) {
    TVM_FFI_THROW(ValueError) << path << " is truncated inside its partial module's bytes";
  }
  try {
    out.parsed = format::Parse(blob.data(), blob.size());
  } catch (const ffi::Error& err) {
    TVM_FFI_THROW(ValueError) << path << ": " << err.message();
  }
  out.origin.library_path = storage::RealPath(file);
  out.origin.blob_offset = blob_offset;
  return out;
}

/*! \brief verify's entries: one per payload where `source` puts it, at its first binding
 *         ("shared_by": its other places), file and hash pushed to `hashes`; a sharded one's is
 *         followed by one per rank ("rank", range, hash), or with `rank` >= 0 replaced by it. */
ffi::Array<ffi::Any> PayloadEntries(const ffi::String& path, const format::Parsed& parsed,
                                    const storage::PayloadSource& source, int64_t rank,
                                    std::vector<Recorded>* hashes) {
  const ffi::String file(source.file->path);
  std::vector<ffi::Array<ffi::Any>> shared_by(parsed.payloads.size());
  for (const format::ParsedFunction& fn : parsed.functions) {
    for (const format::ParsedValue& v : fn.values) {
      if (v.kind == format::kSharedTensor) {
        shared_by[v.payload].push_back(Dict{{"function", fn.name}, {"position", v.index}});
      }
    }
  }
  ffi::Array<ffi::Any> out;
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    const format::ParsedFunction& fn = parsed.OwnerFunction(k);
    const format::ParsedValue& v = parsed.Owner(k);
    Dict e{{"function", fn.name}, {"position", v.index}};
    if (v.index < static_cast<int64_t>(fn.param_names.size())) {
      e.Set("name", fn.param_names[v.index]);
    }
    e.Set("placement", ffi::String(source.placement));
    if (file != path) e.Set("weights_file", file);
    const uint64_t offset = source.offsets[k];
    e.Set("file_offset", static_cast<int64_t>(offset));
    e.Set("bytes", static_cast<int64_t>(v.tensor.nbytes));
    if (!shared_by[k].empty()) e.Set("shared_by", shared_by[k]);
    const format::Shard* shard = nullptr;
    for (const format::Shard& s : fn.shards) {
      if (s.position == v.index) shard = &s;
    }
    if (shard == nullptr || rank < 0) {  // the whole payload, then each rank's range
      out.push_back(e);
      hashes->emplace_back(source.file.get(), v.tensor.hash);
    }
    if (shard == nullptr) continue;
    const uint64_t per_rank = v.tensor.nbytes / static_cast<uint64_t>(shard->world);
    for (int64_t r = 0; r < shard->world; ++r) {
      if (rank >= 0 && r != rank) continue;
      Dict p = e;
      p.Set("rank", r);
      p.Set("file_offset", static_cast<int64_t>(offset + per_rank * static_cast<uint64_t>(r)));
      p.Set("bytes", static_cast<int64_t>(per_rank));
      out.push_back(p);
      hashes->emplace_back(source.file.get(), shard->hashes[static_cast<size_t>(r)]);
    }
  }
  return out;
}

/*! \brief From the first bytes: "library" (ELF), "save_to_bytes" (our magic), "weights file" (u64
 *         length, then JSON; an index by name), else ValueError; "onnx model" by name alone. */
std::string KindOf(const ffi::String& path, const storage::File& file) {
  if (weights::IsIndex(path)) return "weights file";
  if (weights::IsOnnx(path)) return "onnx model";
  char head[9] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(file.size, sizeof(head)));
  if (!storage::ReadAt(file, 0, n, head)) {
    TVM_FFI_THROW(RuntimeError) << "cannot read the artifact " << path;
  }
  if (n >= sizeof(format::kMagic) && std::memcmp(head, format::kMagic, sizeof(format::kMagic)) == 0)
    return "save_to_bytes";
  if (n >= 4 && std::memcmp(head, "\177ELF", 4) == 0) return "library";
  if (n == sizeof(head) && head[8] == '{') return "weights file";
  TVM_FFI_THROW(ValueError) << path << " is not a tvm-partial artifact: not an ELF shared library "
                            << "(nor save_to_bytes output, nor a safetensors weights file)";
  TVM_FFI_UNREACHABLE();
}

// A static output extent, or the argument axis it is read from ("data.shape[0]"; unnamed: "arg3").
ffi::Any DimText(const OutputDim& dim, const ffi::Array<ffi::String>& names) {
  if (dim.arg < 0) return dim.value;
  const bool named = dim.arg < static_cast<int64_t>(names.size()) && !names[dim.arg].empty();
  return ffi::String((named ? std::string(names[dim.arg]) : "arg" + std::to_string(dim.arg)) +
                     ".shape[" + std::to_string(dim.value) + "]");
}

/*! \brief inspect's functions: bindings and outputs with parameter names, and the free ones. */
ffi::Array<ffi::Any> Functions(const format::Parsed& parsed, const Dict& described) {
  ffi::Array<ffi::Any> out;
  const ffi::Array<ffi::Any> fns = described.at("functions").cast<ffi::Array<ffi::Any>>();
  for (size_t f = 0; f < parsed.functions.size(); ++f) {
    const format::ParsedFunction& fn = parsed.functions[f];
    const ffi::Array<ffi::String>& names = fn.param_names;
    const int64_t count = static_cast<int64_t>(names.size());
    std::vector<bool> taken(names.size());
    ffi::Array<ffi::Any> bindings;
    for (const ffi::Any& any : fns[f].cast<Dict>().at("bindings").cast<ffi::Array<ffi::Any>>()) {
      Dict b;
      for (const auto& [k, v] : any.cast<Dict>()) {
        if (k == "hash") {
          b.Set(k, ffi::String(hash::HashHex(static_cast<uint64_t>(v.cast<int64_t>()))));
        } else if (k != "offset" && k != "payload") {
          b.Set(k, v);
        }
      }
      const int64_t position = b.at("position").cast<int64_t>();
      if (position < count) {
        b.Set("name", names[position]);
        taken[position] = true;
      }
      bindings.push_back(b);
    }
    ffi::Array<ffi::Any> outputs;
    for (const Output& o : fn.outputs) {
      ffi::Array<ffi::Any> shape;
      for (const OutputDim& dim : o.shape) shape.push_back(DimText(dim, names));
      Dict entry{
          {"position", o.position}, {"dtype", ffi::DLDataTypeToString(o.dtype)}, {"shape", shape}};
      if (o.position < count) {
        entry.Set("name", names[o.position]);
        taken[o.position] = true;
      }
      outputs.push_back(entry);
    }
    ffi::Array<ffi::String> free;
    for (size_t p = 0; p < names.size(); ++p) {
      if (!taken[p]) free.push_back(names[p]);
    }
    out.push_back(Dict{{"name", fn.name},
                       {"param_names", names},
                       {"free", free},
                       {"bindings", bindings},
                       {"outputs", outputs}});
  }
  return out;
}

/*! \brief self_contained: the library links our loader for each kind it embeds (TVM alone loads
 *         it); names are sought outside TVM's embedded blob (a bound string could spell one). */
bool EmbedsLoaders(const storage::File& file, const storage::LibraryModules& library) {
  const storage::Mapping map = storage::MapPrivate(file, 0, file.size);
  const std::string_view all(static_cast<const char*>(map.data), file.size);
  const uint64_t end = library.at + 8 + library.length;
  const std::string_view spans[] = {all.substr(0, library.at), all.substr(end)};
  for (const storage::EmbeddedModule& m : library.modules) {
    if (m.kind.rfind("partial_apply", 0) != 0) continue;
    const std::string needle = "ffi.Module.load_from_bytes." + m.kind + std::string(1, '\0');
    if (spans[0].find(needle) == std::string_view::npos &&
        spans[1].find(needle) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

/*! \brief The library's Relax VM record (devices, what the frontend compiled in), or None. */
ffi::Any RelaxVM(const ffi::String& path, const storage::File& file,
                 const storage::LibraryModules& library) {
  for (const storage::EmbeddedModule& m : library.modules) {
    if (m.kind != "partial_apply_vm") continue;
    std::string bytes(m.size, '\0');
    if (!storage::ReadAt(file, m.offset, m.size, bytes.data())) {
      TVM_FFI_THROW(ValueError) << path << " is truncated inside its Relax VM record";
    }
    try {
      return detail::DescribeVMRecord(ffi::Bytes(bytes));
    } catch (const ffi::Error& err) {
      TVM_FFI_THROW(ValueError) << path << ": " << err.message();
    }
  }
  return ffi::Any();
}

Dict InspectArtifact(const ffi::String& path, const Artifact& art) {
  const format::Parsed& parsed = art.parsed;
  const Dict described = format::Describe(parsed);
  ffi::Any region;
  if (parsed.external() && art.library.has_value()) {  // save_to_bytes: described, not located
    const storage::PayloadSource source = storage::Locate(parsed, art.origin);  // the loader's rule
    Dict r{{"symbol", ffi::String(parsed.symbol)},
           {"placement", ffi::String(source.placement)},
           {"file_offset", static_cast<int64_t>(source.base)},
           {"bytes", static_cast<int64_t>(parsed.region_size)},
           {"link", static_cast<int64_t>(parsed.link)}};
    if (parsed.placement == format::Placement::kWeightsFile) {
      r.Set("weights_file", Dict{{"name", ffi::String(parsed.weights_file)},
                                 {"path", ffi::String(storage::Beside(art.origin.library_path,
                                                                      parsed.weights_file))}});
    }
    region = r;
  } else if (!parsed.external()) {
    storage::Locate(parsed, art.origin);  // inline payloads inside the file: checked the same
  }
  Dict out{{"path", path},
           {"kind", ffi::String(art.library.has_value() ? "library" : "save_to_bytes")},
           {"format_version", static_cast<int64_t>(parsed.version)},
           {"total_bytes", static_cast<int64_t>(parsed.total)},
           {"constant_bytes", described.at("constant_bytes")},
           {"payloads", described.at("payloads")},
           {"payload_hashes", ffi::String("not checked (run tvm-partial verify)")},
           {"weights_file",
            parsed.weights_file.empty() ? ffi::Any() : ffi::Any(ffi::String(parsed.weights_file))},
           {"functions", Functions(parsed, described)},
           {"region", region}};
  if (!art.library.has_value()) {
    for (const char* key : {"self_contained", "relax_vm", "embedded"}) out.Set(key, ffi::Any());
    return out;
  }
  const storage::LibraryModules& library = *art.library;
  const storage::File& file = *art.origin.blob_file;
  out.Set("self_contained", EmbedsLoaders(file, library));
  out.Set("relax_vm", RelaxVM(path, file, library));
  ffi::Array<ffi::Any> modules;
  for (const storage::EmbeddedModule& m : library.modules) {
    modules.push_back(Dict{{"kind", ffi::String(m.kind)},
                           {"file_offset", static_cast<int64_t>(m.offset)},
                           {"bytes", static_cast<int64_t>(m.size)}});
  }
  out.Set("embedded", Dict{{"file_offset", static_cast<int64_t>(library.at)},
                           {"bytes", static_cast<int64_t>(8 + library.length)},
                           {"modules", modules}});
  return out;
}

/*! \brief Each payload of `file` hashed where the loader reads it (with `shard` = (rank, world),
 *         that rank's ranges only); None for an ONNX model (no hashes; Python refuses it). */
ffi::Any VerifyFile(const ffi::String& path, std::shared_ptr<storage::File> file,
                    const ffi::Optional<ffi::Function>& progress,
                    const ffi::Optional<ffi::Array<int64_t>>& shard, bool as_weights) {
  const auto [rank, world] =
      shard.has_value() ? format::RankWorld("verify", *shard) : std::pair<int64_t, int64_t>{-1, 0};
  const std::string kind = as_weights ? "weights file" : KindOf(path, *file);
  if (kind == "onnx model" || kind == "weights file") {
    if (world > 0) {
      TVM_FFI_THROW(ValueError) << "verify: " << path << " is "
                                << (kind == "onnx model" ? "an ONNX model" : "a weights file")
                                << ", which records no shards; verify the artifact that binds it "
                                << "with shard=";
    }
    if (kind == "onnx model") return ffi::Any();
    return VerifyWeights(path, std::move(file), progress);
  }
  const Artifact art = ReadArtifact(path, std::move(file), kind);
  const format::Parsed& parsed = art.parsed;
  if (world > 0 && !parsed.Sharded()) {
    TVM_FFI_THROW(ValueError) << path << " binds no sharded tensors (it was exported without "
                              << "shards=): verify it whole, without shard=";
  }
  for (const format::ParsedFunction& fn : parsed.functions) {
    for (const format::Shard& s : fn.shards) {
      if (world > 0 && s.world != world) {
        TVM_FFI_THROW(ValueError) << path << ": this artifact is sharded over world " << s.world
                                  << " (" << format::Where(fn, s.position) << "), not " << world;
      }
    }
  }
  if (!art.library.has_value() && parsed.external()) {
    TVM_FFI_THROW(ValueError) << path << " holds the bindings of a partial module whose payloads "
                              << "lie elsewhere (in the file of the library it was exported in, "
                              << "region " << parsed.symbol << "), not the payloads "
                              << "themselves: verify that library instead";
  }
  const storage::PayloadSource source = storage::Locate(parsed, art.origin);
  std::vector<Recorded> hashes;  // filled by PayloadEntries before Report reads it
  return Report(path, PayloadEntries(path, parsed, source, rank, &hashes), hashes, progress, false);
}

/*! \brief A C++ caller's answer: an ONNX model (None) is Python's to read, with onnx. */
Dict Answer(const ffi::Any& answer, const std::string& path, const char* verb) {
  if (answer == nullptr) {
    TVM_FFI_THROW(ValueError) << verb << ": " << path << " is an ONNX model, whose protobuf "
                              << "Python's tvm_partial." << verb << " reads (with onnx)";
  }
  return answer.cast<Dict>();
}

}  // namespace

ffi::Any InspectFile(const ffi::String& path, std::shared_ptr<storage::File> file,
                     bool as_weights) {
  const std::string kind = as_weights ? "weights file" : KindOf(path, *file);
  if (kind == "onnx model") return ffi::Any();
  if (kind == "weights file") return InspectWeights(path, std::move(file));
  return InspectArtifact(path, ReadArtifact(path, std::move(file), kind));
}

Dict Inspect(const std::string& path) {
  return Answer(InspectFile(path, storage::OpenRegular(path, "artifact"), false), path, "inspect");
}

Dict Verify(const std::string& path) {
  return Answer(VerifyFile(path, storage::OpenRegular(path, "artifact"), {}, {}, false), path,
                "verify");
}

TVM_FFI_STATIC_INIT_BLOCK() {
  // Python opens the file once (never blocking on a FIFO) and hands its descriptor over.
  detail::RegisterGlobalOnce(
      "tvm_partial.Inspect", [](const ffi::String& path, int64_t fd, bool as_weights) {
        return InspectFile(path, storage::FromDescriptor(static_cast<int>(fd), path, "artifact"),
                           as_weights);
      });
  detail::RegisterGlobalOnce(
      "tvm_partial.Verify",
      [](const ffi::String& path, int64_t fd, ffi::Optional<ffi::Function> progress,
         ffi::Optional<ffi::Array<int64_t>> shard, bool as_weights) {
        return VerifyFile(path, storage::FromDescriptor(static_cast<int>(fd), path, "artifact"),
                          progress, shard, as_weights);
      });
}

}  // namespace tvm_partial
