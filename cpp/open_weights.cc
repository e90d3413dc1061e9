// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file open_weights.cc
 * \brief The weights verbs. `open_weights`: tensors of a safetensors file, an index's files, or
 *        ranges another format describes (ONNX external data), each a view of a private mapping
 *        where 64-byte aligned, else an aligned copy. `save_weights`: a partial's records to the
 *        writer (storage/weights_writer.cc).
 */
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/common.h"
#include "format/hash.h"
#include "inspect.h"
#include "partial_module.h"
#include "registry.h"
#include "storage/file.h"
#include "storage/payload_source.h"
#include "storage/weights_file.h"

namespace tvm_partial {

namespace {

/*! \brief The tensors of one safetensors file for `function` (none: an error, unless
 *         `none_is_empty`, for one file of an index). */
ffi::Map<ffi::Any, ffi::Any> OpenFileWeights(const weights::WeightsFile& file,
                                             const ffi::String& function, bool none_is_empty) {
  const std::string path = file.file->path;
  const auto recorded = weights::RecordedBindings(file);
  const auto shared = weights::RecordedShared(file);
  std::map<std::string, std::string> by_name;  // name -> the key it came from
  std::map<int64_t, std::string> by_position;
  std::vector<std::pair<weights::KeyRef, std::string>> keys;  // (its key parsed, the stored tensor)
  std::set<std::string> functions;  // the others the file gives tensors for
  auto take = [&](const std::string& key, const std::string& stored) {
    const weights::KeyRef ref = weights::ParseKey(path, key);
    auto at = recorded.find(key);
    const std::string owner = at != recorded.end() ? at->second.first : ref.function;
    if (!owner.empty() && owner != std::string(function)) {
      functions.insert(owner);
      return;
    }
    std::string earlier;
    if (ref.name.empty()) {
      auto [it, fresh] = by_position.emplace(ref.position, key);
      if (!fresh) earlier = it->second;
    } else {
      auto [it, fresh] = by_name.emplace(ref.name, key);
      if (!fresh) earlier = it->second;
    }
    if (!earlier.empty()) {
      TVM_FFI_THROW(ValueError) << "weights file " << path << ": tensors '" << earlier << "' and '"
                                << key << "' both name "
                                << (ref.name.empty() ? "position " + std::to_string(ref.position)
                                                     : "parameter '" + ref.name + "'")
                                << " of function '" << function << "'; keep one";
    }
    keys.emplace_back(ref, stored);
  };
  for (const auto& [key, e] : file.entries) {
    if (weights::WeightsFile::IsTensorKey(key)) take(key, key);
  }
  for (const auto& [alias, stored] : shared) take(alias, stored);
  if (keys.empty() && none_is_empty) return {};
  if (keys.empty()) {
    std::string names;
    for (const std::string& f : functions) names += (names.empty() ? "" : ", ") + f;
    TVM_FFI_THROW(ValueError) << path << ": no weights for function '" << function
                              << "' (functions in the file: " << (names.empty() ? "none" : names)
                              << ")";
  }
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& [ref, stored] : keys) {
    lo = std::min(lo, file.entries.at(stored).begin);
    hi = std::max(hi, file.entries.at(stored).end);
  }
  const storage::Mapping mapping = storage::MapPrivate(*file.file, file.data_start + lo, hi - lo);
  std::map<std::string, ffi::Tensor> made;  // stored key -> its tensor: one per stored tensor
  ffi::Map<ffi::Any, ffi::Any> out;
  for (const auto& [ref, stored] : keys) {
    auto it = made.find(stored);
    if (it == made.end()) {
      const weights::Entry& e = file.entries.at(stored);
      it =
          made.emplace(stored, storage::HostPayloadTensor(
                                   mapping.data + (e.begin - lo), mapping.keepalive,
                                   ffi::StringToDLDataType(e.dtype->tvm), e.shape, e.end - e.begin))
              .first;
    }
    out.Set(ref.name.empty() ? ffi::Any(ref.position) : ffi::Any(ffi::String(ref.name)),
            it->second);
  }
  return out;
}

/*! \brief OpenWeights' `entries` ([[name, offset, bytes, dtype, shape], ...]) as tensors of
 *         `path`, each range checked against the file and against its dtype and shape. */
ffi::Map<ffi::Any, ffi::Any> MapTensors(const ffi::String& path,
                                        const ffi::Array<ffi::Array<ffi::Any>>& entries) {
  const std::shared_ptr<storage::File> file = storage::OpenRegular(path, "data file");
  struct Range {
    std::string name;
    uint64_t offset, bytes;
    DLDataType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Range> ranges;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const ffi::Array<ffi::Any>& e : entries) {
    if (e.size() != 5) TVM_FFI_THROW(ValueError) << "OpenWeights: each entry has 5 fields";
    Range r{std::string(e[0].cast<ffi::String>()),
            static_cast<uint64_t>(e[1].cast<int64_t>()),
            static_cast<uint64_t>(e[2].cast<int64_t>()),
            ffi::StringToDLDataType(e[3].cast<ffi::String>()),
            {}};
    for (const ffi::Any& d : e[4].cast<ffi::Array<ffi::Any>>())
      r.shape.push_back(d.cast<int64_t>());
    uint64_t expected = 0;
    const std::string problem =
        format::ShapeProblem(r.shape.data(), r.shape.size(), r.dtype, &expected);
    if (!problem.empty() || expected != r.bytes) {
      TVM_FFI_THROW(ValueError) << path << ": tensor '" << r.name << "' of " << r.bytes
                                << " bytes does not match its dtype and shape ("
                                << (problem.empty() ? std::to_string(expected) + " bytes" : problem)
                                << ")";
    }
    if (r.offset > file->size || r.bytes > file->size - r.offset) {
      TVM_FFI_THROW(ValueError) << path << " is truncated: tensor '" << r.name << "' needs bytes "
                                << r.offset << " to " << r.offset + r.bytes << ", the file has "
                                << file->size;
    }
    lo = std::min(lo, r.offset);
    hi = std::max(hi, r.offset + r.bytes);
    ranges.push_back(std::move(r));
  }
  ffi::Map<ffi::Any, ffi::Any> out;
  if (ranges.empty()) return out;
  const storage::Mapping mapping = storage::MapPrivate(*file, lo, hi - lo);
  for (const Range& r : ranges) {
    out.Set(ffi::String(r.name),
            storage::HostPayloadTensor(mapping.data + (r.offset - lo), mapping.keepalive, r.dtype,
                                       r.shape, r.bytes));
  }
  return out;
}

/*! \brief tvm_partial.OpenWeights: a safetensors file's tensors for `function` ({position or
 *         name: tensor}), or an index's (each tensor in one file: weights::OpenSet); given
 *         `entries`, {name: tensor} (MapTensors). */
ffi::Map<ffi::Any, ffi::Any> OpenAny(const ffi::String& path, const ffi::String& function,
                                     ffi::Optional<ffi::Array<ffi::Array<ffi::Any>>> entries) {
  if (entries.has_value()) return MapTensors(path, *entries);
  if (!weights::IsIndex(path)) return OpenFileWeights(weights::Open(path), function, false);
  const weights::WeightsSet set = weights::OpenSet(path);
  ffi::Map<ffi::Any, ffi::Any> out;
  for (const weights::WeightsFile& file : set.files) {
    for (const auto& [key, tensor] : OpenFileWeights(file, function, true)) {
      if (out.count(key)) {
        auto name = key.try_cast<ffi::String>();
        weights::Bad(std::string(path),
                     "two of its files give " +
                         (name.has_value() ? "parameter '" + std::string(*name) + "'"
                                           : "position " + std::to_string(key.cast<int64_t>())) +
                         " of function '" + std::string(function) + "'; keep one");
      }
      out.Set(key, tensor);
    }
  }
  if (out.empty()) {
    TVM_FFI_THROW(ValueError) << path << ": no weights for function '" << function << "'";
  }
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
    // "aligned": whether open_weights hands the tensor out as a view of the mapping, not a copy.
    Dict d{{"key", ffi::String(key)},
           {"dtype", ffi::String(e.dtype->tvm)},
           {"shape", ffi::Array<int64_t>(e.shape.begin(), e.shape.end())},
           {"file_offset", static_cast<int64_t>(file.data_start + e.begin)},
           {"bytes", static_cast<int64_t>(e.end - e.begin)},
           {"aligned", (file.data_start + e.begin) % format::kPayloadAlignment == 0}};
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

}  // namespace

Dict InspectWeights(const ffi::String& path, std::shared_ptr<storage::File> file) {
  const weights::WeightsSet set =
      weights::OpenSet(path, std::move(file));  // an index: each file it names
  std::vector<std::string> order;               // functions, as first seen
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
    for (const ffi::Any& any : WeightsEntries(file)) {
      const Dict t = any.cast<Dict>();
      const std::string key(t.at("key").cast<ffi::String>());
      Dict b{{"position", t.count("position") ? t.at("position") : t.at("key")},
             {"name", t.at("name")},
             {"kind", ffi::String("tensor")},
             {"dtype", t.at("dtype")},
             {"shape", t.at("shape")},
             {"device", ffi::String("cpu:0")},
             {"bytes", t.at("bytes")},
             {"offset", t.at("file_offset")},
             {"key", t.at("key")},
             {"aligned", t.at("aligned")}};
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

Dict VerifyWeights(const ffi::String& path, std::shared_ptr<storage::File> file,
                   const ffi::Optional<ffi::Function>& progress) {
  const weights::WeightsSet set =
      weights::OpenSet(path, std::move(file));  // an index: each file it names
  std::vector<ffi::Array<ffi::Any>> entries;
  std::vector<std::vector<uint64_t>> hashes;  // per file, per entry: its recorded hash
  int64_t total = 0;
  for (const weights::WeightsFile& file : set.files) {
    const std::string& name = file.file->path;
    const std::string of_index = set.indexed ? ", a file of the index " + set.path + "," : "";
    const auto recorded = weights::RecordedHashes(file);
    if (!recorded.has_value()) {
      TVM_FFI_THROW(ValueError) << "weights file " << name << of_index << " records no payload "
                                << "hashes (it was not written by tvm_partial.save_weights): its "
                                << "header is consistent, its bytes cannot be checked";
    }
    entries.push_back(WeightsEntries(file));
    hashes.emplace_back();
    for (const ffi::Any& any : entries.back()) {
      const Dict e = any.cast<Dict>();
      const auto hash = recorded->find(std::string(e.at("key").cast<ffi::String>()));
      if (hash == recorded->end()) {
        TVM_FFI_THROW(ValueError) << "weights file " << name << of_index << ": tensor '"
                                  << e.at("key").cast<ffi::String>() << "' has no recorded hash";
      }
      hashes.back().push_back(hash->second);
      total += e.at("bytes").cast<int64_t>();
    }
  }
  ffi::Array<ffi::Any> payloads;
  int64_t base = 0;  // bytes of the files before this one, for one progress over them all
  for (size_t f = 0; f < set.files.size(); ++f) {
    ffi::Optional<ffi::Function> step;
    if (progress.has_value()) {
      step =
          ffi::Function::FromTyped([&](int64_t done, int64_t) { (*progress)(base + done, total); });
    }
    for (const ffi::Any& any : CheckEntries(entries[f], hashes[f], *set.files[f].file, step)) {
      const Dict p = any.cast<Dict>();
      base += p.at("bytes").cast<int64_t>();
      Dict e{{"key", p.at("key")},
             {"function", p.at("function")},
             {"position", p.count("position") ? p.at("position") : ffi::Any()},
             {"name", p.at("name")},
             {"placement", ffi::String("weights file")},
             {"dtype", p.at("dtype")},
             {"shape", p.at("shape")},
             {"file_offset", p.at("file_offset")},
             {"bytes", p.at("bytes")},
             {"intact", p.at("intact")}};
      if (set.indexed) e.Set("weights_file", ffi::String(set.files[f].file->path));
      payloads.push_back(e);
    }
  }
  return Report(path, payloads);
}

ffi::Map<ffi::Any, ffi::Any> OpenWeights(const std::string& path, const ffi::String& function) {
  return OpenAny(path, function, std::nullopt);
}

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("tvm_partial.OpenWeights", OpenAny);
  // save_weights: a partial's bound tensors and the values its frontend compiled into the code;
  // Python stages the file and renames it.
  detail::RegisterGlobalOnce(
      "tvm_partial.SaveWeights",
      [](ffi::Any obj, ffi::String path, ffi::Map<ffi::String, ffi::Tensor> compiled) {
        const auto mod = obj.try_cast<ffi::Module>();
        if (mod.has_value()) detail::RefuseShardView(*mod, "written to a weights file");
        weights::SaveWeights(detail::PartialRecords(obj, "save_weights"),
                             mod.has_value() ? detail::ModelRecordOf(*mod) : ModelRecord{}, path,
                             compiled);
      });
}

}  // namespace tvm_partial
