// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/weights_writer.cc
 * \brief Writing safetensors weights files: `SaveWeights`, and `WriteRegionFile` (its data is a
 *        `weights_file=` export's payload region). Python writes to a new name, then renames it.
 */
#include <fcntl.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

#include "format/common.h"
#include "format/hash.h"
#include "storage/appended_region.h"
#include "storage/weights_file.h"

namespace tvm_partial {
namespace weights {

namespace {

// `s` quoted as JSON, escaping only `"`, `\\` and control characters (keys stay readable).
std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "\\u%04x", static_cast<unsigned>(c));
      out += code;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Append `"key":value` to the JSON object being written in `object` (opened by its `{`).
void Member(std::string& object, const std::string& key, const std::string& value) {
  object += (object.size() > 1 ? "," : "") + JsonQuote(key) + ":" + value;
}

struct OutEntry {
  std::string key;
  std::string tvm_dtype;
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
  std::string where = {};  // its binding, for messages
};

// The bytes before the data: u64 length, JSON of `entries` (gaps: `__padding__/N`), `metadata`,
// spaces to 64-align the data. \throws TypeError: a dtype safetensors lacks, or not whole bytes.
std::string EncodeHeader(std::vector<OutEntry> entries,
                         const std::map<std::string, std::string>& metadata, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(),
            [](const OutEntry& a, const OutEntry& b) { return a.begin < b.begin; });
  std::string json = "{";
  auto add = [&](const std::string& key, const char* code, const std::vector<int64_t>& shape,
                 uint64_t begin, uint64_t end) {
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? "," : "") + std::to_string(shape[i]);
    Member(json, key,
           std::string("{\"dtype\":\"") + code + "\",\"shape\":[" + dims + "],\"data_offsets\":[" +
               std::to_string(begin) + "," + std::to_string(end) + "]}");
  };
  uint64_t at = 0;
  for (const OutEntry& e : entries) {
    const Dtype* dtype = DtypeByTvm(e.tvm_dtype);
    const std::string who =
        "tensor '" + e.key + "'" + (e.where.empty() ? "" : " (" + e.where + ")");
    if (dtype == nullptr) {
      TVM_FFI_THROW(TypeError) << who << " has dtype " << e.tvm_dtype
                               << ", which safetensors has no code for, so a weights file cannot "
                               << "hold it (it holds " << KnownCodes() << "); export without "
                               << "weights_file= (the library carries every dtype, inline or "
                               << "zero-copy), or bind that parameter as another dtype";
    }
    unsigned __int128 bits = dtype->bits;  // the shapes here are of tensors that exist
    for (int64_t d : e.shape) bits *= static_cast<uint64_t>(d);
    if (bits % 8 != 0) {
      TVM_FFI_THROW(TypeError) << who << " is " << e.tvm_dtype << format::Dims(e.shape) << ": "
                               << dtype->bits << "-bit elements that do not fill whole bytes, "
                               << "which safetensors cannot hold; export without weights_file= "
                               << "(the library carries it), or bind an even number of elements";
    }
    if (e.begin > at)
      add(std::string(kPaddingPrefix) + std::to_string(at), "U8",
          {static_cast<int64_t>(e.begin - at)}, at, e.begin);
    add(e.key, dtype->code, e.shape, e.begin, e.end);
    at = e.end;
  }
  if (data_size > at)
    add(std::string(kPaddingPrefix) + std::to_string(at), "U8",
        {static_cast<int64_t>(data_size - at)}, at, data_size);
  if (!metadata.empty()) {
    std::string members = "{";
    for (const auto& [k, v] : metadata) Member(members, k, JsonQuote(v));
    Member(json, "__metadata__", members + "}");
  }
  json += "}";
  json.append((format::kPayloadAlignment - (8 + json.size()) % format::kPayloadAlignment) %
                  format::kPayloadAlignment,
              ' ');  // the format allows trailing spaces: the data starts at a multiple of 64
  const uint64_t length = json.size();
  std::string out(8, '\0');
  std::memcpy(&out[0], &length, 8);
  return out + json;
}

// Each distinct tensor's entry (then compiled-in values'), each place's key (Keys), and `aliases`:
// a tie's names that are no place (a strict torch.export makes them one parameter) -> stored key.
struct Layout {
  std::vector<OutEntry> entries;
  std::vector<std::vector<std::string>> keys;
  std::vector<std::pair<std::string, std::string>> aliases;
};

Layout LayOut(const std::vector<Wanted>& wanted,
              const std::vector<std::pair<uint64_t, uint64_t>>& spans) {
  Layout out{{}, Keys(wanted), {}};
  for (size_t i = 0; i < wanted.size(); ++i) {
    const Place& first = wanted[i].places[0];
    out.entries.push_back(
        {out.keys[i][0], wanted[i].dtype, wanted[i].shape, spans[i].first, spans[i].second,
         "function '" + first.function + "' position " + std::to_string(first.position)});
  }
  return out;
}

// The `__metadata__` of `layout` (of `wanted`): bindings, hashes and, for tensors with several
// places or aliases, shared (docs/weights_files.md).
std::map<std::string, std::string> Metadata(const std::vector<Wanted>& wanted, const Layout& layout,
                                            const std::map<std::string, uint64_t>& hashes) {
  std::string bindings = "{", recorded = "{", shared = "{";
  for (size_t i = 0; i < wanted.size(); ++i) {
    for (size_t j = 0; j < wanted[i].places.size(); ++j) {
      const Place& p = wanted[i].places[j];
      const std::string& key = layout.keys[i][j];
      Member(bindings, key, "[" + JsonQuote(p.function) + "," + std::to_string(p.position) + "]");
      if (j > 0) Member(shared, key, JsonQuote(layout.keys[i][0]));
    }
  }
  for (const auto& [alias, stored] : layout.aliases) Member(shared, alias, JsonQuote(stored));
  for (const auto& [key, h] : hashes) Member(recorded, key, "\"" + hash::HashHex(h) + "\"");
  std::map<std::string, std::string> out{{kMetadataFormat, "1"},
                                         {kMetadataBindings, bindings + "}"},
                                         {kMetadataHashes, recorded + "}"}};
  if (shared.size() > 1) out.emplace(kMetadataShared, shared + "}");
  return out;
}

void WriteHeaderAt(const std::string& path, const std::string& header) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  storage::UniqueFd closer(fd);
  const bool done = fd >= 0 && storage::WriteAt(fd, header.data(), header.size(), 0);
  if (!done || close(closer.release()) != 0) {
    TVM_FFI_THROW(RuntimeError) << "writing the weights file " << path
                                << " failed: " << std::strerror(errno);
  }
}

}  // namespace

void SaveWeights(std::vector<format::FunctionRecord> records, const ModelRecord& model,
                 const std::string& path, const ffi::Map<ffi::String, ffi::Tensor>& compiled) {
  for (format::FunctionRecord& r : records) {
    if (r.name.empty()) r.name = "main";  // a partial function's
    std::sort(r.bound.begin(), r.bound.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  std::sort(records.begin(), records.end(),
            [](const format::FunctionRecord& a, const format::FunctionRecord& b) {
              return std::string(a.name) < std::string(b.name);
            });
  const std::vector<std::vector<int64_t>> numbers = format::TensorNumbers(records);
  std::vector<const format::Shard*> shards = format::PayloadShards(records);
  std::vector<Wanted> wanted;
  std::vector<ffi::Tensor> tensors;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  uint64_t end = 0;
  for (size_t f = 0; f < records.size(); ++f) {
    const format::FunctionRecord& r = records[f];
    for (size_t b = 0; b < r.bound.size(); ++b) {
      const int64_t n = numbers[f][b];
      if (n < 0) continue;
      const Place place{std::string(r.name), r.bound[b].first, &r.param_names};
      if (static_cast<size_t>(n) < wanted.size()) {  // bound at an earlier place too: stored once
        wanted[n].places.push_back(place);
        continue;
      }
      ffi::Tensor t = r.bound[b].second.cast<ffi::Tensor>();
      const DLTensor* dl = t.GetDLTensorPtr();
      wanted.push_back(
          {{place},
           ffi::DLDataTypeToString(dl->dtype),
           format::StoredShape(std::vector<int64_t>(dl->shape, dl->shape + dl->ndim), shards[n])});
      tensors.push_back(t);
      const uint64_t begin = format::AlignUp(end);
      end = begin + format::PayloadBytes(*dl);
      spans.emplace_back(begin, end);
    }
  }
  if (tensors.empty()) {
    TVM_FFI_THROW(ValueError) << "save_weights: the module binds no tensors; there are no "
                              << "weights to save";
  }
  Layout layout = LayOut(wanted, spans);
  // Compiled-in values, after the bound tensors, with no binding recorded, so the file holds the
  // model's whole state; each must be what the code holds (CompiledInProblem, as for load).
  for (const auto& [name, tensor] : compiled) {
    const CompiledIn* record = model.Find(name);
    const CompiledIn given = RecordCompiledIn(name, tensor);
    if (record == nullptr) {
      TVM_FFI_THROW(ValueError) << "save_weights: '" << name << "' is not a tensor the frontend "
                                << "compiled into this module's code";
    }
    const std::string problem = CompiledInProblem(*record, given.dtype, given.shape, given.hash);
    if (!problem.empty()) {
      TVM_FFI_THROW(ValueError) << "save_weights: the program's '" << name << "' is not what the "
                                << "code holds: " << problem
                                << " (was the model changed after it was exported?)";
    }
    const uint64_t begin = format::AlignUp(end);
    end = begin + format::PayloadBytes(*tensor.GetDLTensorPtr());
    layout.entries.push_back({std::string(name), ffi::DLDataTypeToString(given.dtype), given.shape,
                              begin, end, "compiled-in '" + std::string(name) + "'"});
    tensors.push_back(tensor);
    shards.push_back(nullptr);
  }
  // A tied tensor's names that are no place read the tensor stored under another of its names,
  // so the file holds the model's whole state (open_weights gives each name).
  for (const std::vector<std::string>& group : model.ties) {
    std::set<std::string> keys;  // every key the file has for the group's tensor
    const std::string* stored = nullptr;
    auto in_group = [&group](const std::string& key) {
      return std::find(group.begin(), group.end(), key) != group.end();
    };
    for (const std::vector<std::string>& its : layout.keys) {
      if (!std::any_of(its.begin(), its.end(), in_group)) continue;
      stored = &its[0];
      keys.insert(its.begin(), its.end());
    }
    for (const std::string& name : group) {
      if (stored != nullptr && !keys.count(name)) layout.aliases.emplace_back(name, *stored);
    }
  }
  const std::vector<OutEntry>& entries = layout.entries;
  // Hashes are fixed-width hex: the header is written first with zeros, then again with them.
  std::map<std::string, uint64_t> hashes;
  for (const OutEntry& e : entries) hashes[e.key] = 0;
  const std::string placeholder = EncodeHeader(entries, Metadata(wanted, layout, hashes), end);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    TVM_FFI_THROW(RuntimeError) << "save_weights: cannot write " << path << ": "
                                << std::strerror(errno);
  }
  storage::UniqueFd closer(fd);
  auto failed = [&] {
    TVM_FFI_THROW(RuntimeError) << "save_weights: writing " << path
                                << " failed: " << std::strerror(errno);
  };
  auto put = [&](const char* data, size_t n, uint64_t at) {
    if (!storage::WriteAt(fd, data, n, at)) failed();
  };
  put(placeholder.data(), placeholder.size(), 0);
  static const char zeros[format::kPayloadAlignment] = {};
  uint64_t at = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OutEntry& e = entries[i];
    if (e.begin > at) put(zeros, e.begin - at, placeholder.size() + at);
    hash::Hasher hasher;
    uint64_t to = placeholder.size() + e.begin;
    format::ForEachStoredPiece(tensors[i], e.end - e.begin, shards[i],
                               [&](const char* data, size_t n) {
                                 put(data, n, to);
                                 hasher.Update(data, n);
                                 to += n;
                               });
    hashes[e.key] = hasher.Final();
    at = e.end;
  }
  if (close(closer.release()) != 0) failed();
  const std::string header = EncodeHeader(entries, Metadata(wanted, layout, hashes), end);
  if (header.size() != placeholder.size()) {
    TVM_FFI_THROW(InternalError) << "save_weights: the header changed size";
  }
  WriteHeaderAt(path, header);
}

void WriteRegionFile(const std::vector<format::FunctionRecord>& records,
                     const format::ExternalRegion& region, const std::string& path) {
  const std::string blob = format::Encode(records, &region);
  const format::Parsed parsed = format::Parse(blob.data(), blob.size());
  const std::vector<Wanted> wanted = WantedOf(parsed);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    const format::TensorMeta& t = parsed.Owner(k).tensor;
    spans.emplace_back(t.offset, t.offset + t.nbytes);
  }
  const Layout layout = LayOut(wanted, spans);
  std::map<std::string, uint64_t> hashes;
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    hashes[layout.keys[k][0]] = parsed.Owner(k).tensor.hash;
  }
  std::vector<OutEntry> entries = layout.entries;
  entries.insert(entries.begin(), {kRegionKey, "uint8", {64}, 0, format::kRegionHeaderSize});
  const std::string header =
      EncodeHeader(entries, Metadata(wanted, layout, hashes), parsed.region_size);
  storage::WriteRegion(records, region, path, header.size());
  WriteHeaderAt(path, header);
}

}  // namespace weights
}  // namespace tvm_partial
