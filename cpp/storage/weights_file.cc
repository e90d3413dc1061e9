// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/weights_file.cc
 * \brief Reading and checking a safetensors header and its records (storage/weights_file.h).
 */
#include "storage/weights_file.h"

#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <set>
#include <utility>

#include "format/common.h"

namespace tvm_partial {
namespace weights {

namespace {

// safetensors dtypes (its Rust `Dtype`) TVM has too; not C64 (TVM has no complex dtype). TVM's
// float8_e3m4, float8_e4m3, float8_e4m3b11fnuz and sub-byte ints have no safetensors code.
constexpr Dtype kDtypes[] = {{"BOOL", "bool", 8},
                             {"U8", "uint8", 8},
                             {"I8", "int8", 8},
                             {"U16", "uint16", 16},
                             {"I16", "int16", 16},
                             {"F16", "float16", 16},
                             {"BF16", "bfloat16", 16},
                             {"U32", "uint32", 32},
                             {"I32", "int32", 32},
                             {"F32", "float32", 32},
                             {"U64", "uint64", 64},
                             {"I64", "int64", 64},
                             {"F64", "float64", 64},
                             {"F8_E4M3", "float8_e4m3fn", 8},
                             {"F8_E4M3FNUZ", "float8_e4m3fnuz", 8},
                             {"F8_E5M2", "float8_e5m2", 8},
                             {"F8_E5M2FNUZ", "float8_e5m2fnuz", 8},
                             {"F8_E8M0", "float8_e8m0fnu", 8},
                             {"F6_E2M3", "float6_e2m3fn", 6},
                             {"F6_E3M2", "float6_e3m2fn", 6},
                             {"F4", "float4_e2m1fn", 4}};

const Dtype* FindDtype(const char* Dtype::* field, const std::string& name) {
  for (const Dtype& d : kDtypes) {
    if (name == d.*field) return &d;
  }
  return nullptr;
}

// How deep JSON `text` nests, counted without parsing (strings and escapes skipped), to `limit`+1.
int NestingDepth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// An int of the JSON header (not a bool, a float or a string), else nullopt.
std::optional<int64_t> JsonInt(const ffi::json::Value& v) {
  if (v.type_index() != ffi::TypeIndex::kTVMFFIInt) return std::nullopt;
  return v.cast<int64_t>();
}

Entry ReadEntry(const std::string& path, const std::string& key, const ffi::json::Value& value,
                uint64_t data_size) {
  const std::string where = "tensor '" + key + "'";
  auto entry = value.try_cast<ffi::json::Object>();
  if (!entry.has_value()) Bad(path, where + ": its header entry is not an object");
  // A field, or None when absent: each check refuses None as it does a missing field.
  auto field = [&entry](const char* name) {
    auto it = entry->find(ffi::String(name));
    return it == entry->end() ? ffi::json::Value() : (*it).second;
  };
  auto dtype_text = field("dtype").try_cast<ffi::String>();
  const Dtype* dtype =
      dtype_text.has_value() ? FindDtype(&Dtype::code, std::string(*dtype_text)) : nullptr;
  if (dtype == nullptr) {
    Bad(path, where + ": dtype " +
                  (dtype_text ? "'" + std::string(*dtype_text).substr(0, 40) + "'"
                              : std::string("(none)")) +
                  " is not one tvm-partial reads (" + KnownCodes() + ")");
  }
  Entry out{dtype, {}, 0, 0};
  auto dims = field("shape").try_cast<ffi::json::Array>();
  const std::string bad_shape = where + ": shape is not a list of at most 64 non-negative ints";
  if (!dims.has_value() || dims->size() > 64) Bad(path, bad_shape);
  unsigned __int128 count = 1;
  for (const ffi::json::Value& dim : *dims) {
    std::optional<int64_t> d = JsonInt(dim);
    if (!d.has_value() || *d < 0) Bad(path, bad_shape);
    out.shape.push_back(*d);
    // Saturated just past 2^64 (factors < 2^63): this and count * bits (<= 64) fit 128 bits.
    constexpr unsigned __int128 kCap = (static_cast<unsigned __int128>(1) << 64) + 1;
    count = count >= kCap ? kCap : std::min(count * static_cast<uint64_t>(*d), kCap);
  }
  // format::ShapeProblem: > int64 elements, even with a 0 dim, is no tensor (strides overflow).
  uint64_t ignored = 0;
  const std::string problem = format::ShapeProblem(out.shape.data(), out.shape.size(),
                                                   ffi::StringToDLDataType(dtype->tvm), &ignored);
  if (!problem.empty()) Bad(path, where + ": shape " + format::Dims(out.shape) + ": " + problem);
  auto offsets = field("data_offsets").try_cast<ffi::json::Array>();
  std::optional<int64_t> begin, end;
  if (offsets.has_value() && offsets->size() == 2) {
    begin = JsonInt((*offsets)[0]);
    end = JsonInt((*offsets)[1]);
  }
  if (!begin || !end || *begin < 0 || *end < *begin) {
    Bad(path, where + ": data_offsets is not [begin, end] with 0 <= begin <= end");
  }
  out.begin = static_cast<uint64_t>(*begin);
  out.end = static_cast<uint64_t>(*end);
  const unsigned __int128 bits = count * dtype->bits;
  if (bits % 8 != 0 && count >> 64 == 0) {  // as the safetensors package refuses it
    Bad(path, where + ": its " + std::to_string(static_cast<uint64_t>(count)) + " elements of " +
                  dtype->code + " take " + std::to_string(static_cast<uint64_t>(bits)) +
                  " bits, not whole bytes; safetensors stores only whole bytes");
  }
  const unsigned __int128 expected = bits / 8;
  if (expected != out.end - out.begin) {
    Bad(path, where + ": data_offsets span " + std::to_string(out.end - out.begin) +
                  " bytes, its dtype " + dtype->code + " and shape " + format::Dims(out.shape) +
                  " need " +
                  (expected >> 64 ? std::string("more than 2^64")
                                  : std::to_string(static_cast<uint64_t>(expected))));
  }
  if (out.end > data_size) {
    Bad(path, where + ": its data ends at byte " + std::to_string(out.end) +
                  " of the data, which has " + std::to_string(data_size) +
                  ": the file is truncated");
  }
  return out;
}

}  // namespace

ffi::json::Value ParseJson(const std::string& path, const std::string& text, int max_depth,
                           const char* what) {
  if (!format::IsValidUtf8(text.data(), text.size()))
    Bad(path, std::string(what) + " is not UTF-8");
  if (NestingDepth(text, max_depth) > max_depth) {
    Bad(path, std::string(what) + " nests deeper than " + std::to_string(max_depth) +
                  " levels; a safetensors header never does (damaged or crafted)");
  }
  ffi::String error;
  ffi::json::Value parsed = ffi::json::Parse(ffi::String(text), &error);
  if (!error.empty()) {
    Bad(path, std::string("malformed ") + what + " (" + std::string(error).substr(0, 200) + ")");
  }
  return parsed;
}

void Bad(const std::string& path, const std::string& what) {
  const bool sentence = what.rfind("is ", 0) == 0 || what.rfind("lacks ", 0) == 0;
  TVM_FFI_THROW(ValueError) << "weights file " << path << (sentence ? " " : ": ") << what;
  TVM_FFI_UNREACHABLE();
}

const Dtype* DtypeByTvm(const std::string& tvm) { return FindDtype(&Dtype::tvm, tvm); }

std::string KnownCodes() {
  std::set<std::string> codes;  // sorted
  for (const Dtype& d : kDtypes) codes.insert(d.code);
  std::string out;
  for (const std::string& c : codes) out += (out.empty() ? "" : ", ") + c;
  return out;
}

bool WeightsFile::IsTensorKey(const std::string& key) {
  return key.rfind(kPaddingPrefix, 0) != 0 && key != kRegionKey;
}

WeightsFile Open(const std::string& path, std::shared_ptr<storage::File> opened) {
  WeightsFile out;
  out.file = opened ? std::move(opened) : storage::OpenRegular(path, "weights file");
  const storage::File& file = *out.file;
  if (IsOnnx(path)) {
    TVM_FFI_THROW(ValueError)
        << "weights file " << path << " is an ONNX model: weights are read from safetensors "
        << "files (and *.safetensors.index.json), not ONNX; bind its initializers with "
        << "tvm_partial.rebind(pm, **tvm_partial.open_weights(\"" << path << "\")), or write "
        << "them once with tvm_partial.save_weights(that module, \"model.safetensors\") and load "
        << "that file";
  }
  uint64_t length = 0;
  if (file.size < 8 || !storage::ReadAt(file, 0, 8, reinterpret_cast<char*>(&length))) {
    Bad(path, "is truncated: " + std::to_string(file.size) +
                  " bytes, not even a safetensors header length");
  }
  if (length > kMaxHeader) {
    Bad(path, "its JSON header claims " + std::to_string(length) + " bytes, more than the " +
                  std::to_string(kMaxHeader) +
                  " read; it is not a safetensors file or is damaged " +
                  "(weights are read from safetensors files and *.safetensors.index.json)");
  }
  if (8 + length > file.size) {
    Bad(path, "is truncated: its JSON header needs " + std::to_string(8 + length) +
                  " bytes, the file has " + std::to_string(file.size));
  }
  std::string text(static_cast<size_t>(length), '\0');
  if (length && !storage::ReadAt(file, 8, text.size(), &text[0])) {
    Bad(path, "is truncated inside its JSON header");
  }
  auto object = ParseJson(path, text, kMaxDepth, "JSON header").try_cast<ffi::json::Object>();
  if (!object.has_value()) Bad(path, "malformed JSON header (not an object)");
  out.data_start = 8 + length;
  out.data_size = file.size - out.data_start;
  std::map<std::string, ffi::json::Value> raw;  // sorted: the first bad key named is stable
  for (const auto& kv : *object) {
    auto key = kv.first.try_cast<ffi::String>();
    if (!key.has_value()) continue;  // JSON object keys are strings
    if (std::string(*key) == "__metadata__") {
      auto meta = kv.second.try_cast<ffi::json::Object>();
      if (!meta.has_value()) Bad(path, "__metadata__ is not an object");
      for (const auto& m : *meta) {
        auto name = m.first.try_cast<ffi::String>();
        auto value = m.second.try_cast<ffi::String>();
        if (!name.has_value() || !value.has_value()) {
          Bad(path, "__metadata__ holds a value that is not a string");
        }
        out.metadata.emplace(std::string(*name), std::string(*value));
      }
      continue;
    }
    raw.emplace(std::string(*key), kv.second);
  }
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> spans;
  for (const bool tensors : {true, false}) {  // a bad tensor is named before a bad padding entry
    for (const auto& [key, value] : raw) {
      if (WeightsFile::IsTensorKey(key) != tensors) continue;
      Entry e = ReadEntry(path, key, value, out.data_size);
      if (e.end > e.begin) spans.push_back({{e.begin, e.end}, key});
      out.entries.emplace(key, std::move(e));
    }
  }
  std::sort(spans.begin(), spans.end());
  // No holes (as the safetensors package checks): otherwise an off header length, or bytes
  // after the last tensor, would read every tensor from the wrong place.
  uint64_t covered = 0;  // the data up to the first hole (the spans are sorted and disjoint)
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i > 0 && spans[i].first.first < spans[i - 1].first.second) {
      Bad(path, "tensors '" + spans[i - 1].second + "' and '" + spans[i].second +
                    "' overlap in the file");
    }
    if (spans[i].first.first == covered) covered = spans[i].first.second;
  }
  if (covered != out.data_size) {
    Bad(path, "its data has bytes no tensor covers (from offset " + std::to_string(covered) +
                  " of " + std::to_string(out.data_size) +
                  "); the format allows no holes: it is damaged or not a safetensors file");
  }
  return out;
}

std::optional<std::map<std::string, uint64_t>> RecordedHashes(const WeightsFile& file) {
  auto it = file.metadata.find(kMetadataHashes);
  if (it == file.metadata.end()) return std::nullopt;
  const std::string& path = file.file->path;
  auto object =
      ParseJson(path, it->second, 1, "tvm_partial.hashes record").try_cast<ffi::json::Object>();
  if (!object.has_value()) Bad(path, "malformed tvm_partial metadata (hashes: not an object)");
  std::map<std::string, uint64_t> out;
  for (const auto& kv : *object) {
    auto key = kv.first.try_cast<ffi::String>();
    auto hex = kv.second.try_cast<ffi::String>();
    const std::string text = hex.has_value() ? std::string(*hex) : std::string();
    if (!key.has_value() || text.size() != 16 ||
        text.find_first_not_of("0123456789abcdef") != std::string::npos) {
      Bad(path, "malformed tvm_partial metadata (a hash is not 16 hex digits)");
    }
    out.emplace(std::string(*key), std::stoull(text, nullptr, 16));
  }
  return out;
}

std::map<std::string, std::pair<std::string, int64_t>> RecordedBindings(const WeightsFile& file) {
  std::map<std::string, std::pair<std::string, int64_t>> out;
  auto it = file.metadata.find(kMetadataBindings);
  if (it == file.metadata.end()) return out;
  const std::string& path = file.file->path;
  auto object =
      ParseJson(path, it->second, 2, "tvm_partial.bindings record").try_cast<ffi::json::Object>();
  if (!object.has_value()) Bad(path, "malformed tvm_partial metadata (bindings: not an object)");
  for (const auto& kv : *object) {
    auto key = kv.first.try_cast<ffi::String>();
    auto pair = kv.second.try_cast<ffi::json::Array>();
    std::optional<ffi::String> function;
    std::optional<int64_t> position;
    if (pair.has_value() && pair->size() == 2) {
      function = (*pair)[0].try_cast<ffi::String>();
      position = JsonInt((*pair)[1]);
    }
    if (!key.has_value() || !function.has_value() || !position.has_value() || *position < 0) {
      Bad(path, "malformed tvm_partial metadata (a binding is not [function, position])");
    }
    out.emplace(std::string(*key), std::make_pair(std::string(*function), *position));
  }
  return out;
}

std::map<std::string, std::string> RecordedShared(const WeightsFile& file) {
  std::map<std::string, std::string> out;
  auto it = file.metadata.find(kMetadataShared);
  if (it == file.metadata.end()) return out;
  const std::string& path = file.file->path;
  auto object =
      ParseJson(path, it->second, 1, "tvm_partial.shared record").try_cast<ffi::json::Object>();
  if (!object.has_value()) Bad(path, "malformed tvm_partial metadata (shared: not an object)");
  for (const auto& kv : *object) {
    auto alias = kv.first.try_cast<ffi::String>();
    auto stored = kv.second.try_cast<ffi::String>();
    if (!alias.has_value() || !stored.has_value() || !file.entries.count(std::string(*stored)) ||
        !WeightsFile::IsTensorKey(std::string(*stored)) ||
        file.entries.count(std::string(*alias))) {
      Bad(path,
          "malformed tvm_partial metadata (shared: each other place's key must name a "
          "tensor the file holds, and be no tensor of its own)");
    }
    out.emplace(std::string(*alias), std::string(*stored));
  }
  return out;
}

void CheckRegionFile(const WeightsFile& file, const format::Parsed& parsed) {
  const std::string& path = file.file->path;
  const char* foreign =
      "; it was not written with this artifact (export again, or "
      "load(path, weights_file=...) to bind other weights)";
  if (file.data_start % format::kPayloadAlignment != 0 || parsed.region_size > file.data_size) {
    Bad(path, "its data (" + std::to_string(file.data_size) + " bytes at offset " +
                  std::to_string(file.data_start) + ") cannot hold the " +
                  std::to_string(parsed.region_size) +
                  " bytes of this artifact's payloads: it is truncated, or" +
                  std::string(foreign + 1));
  }

  auto region = file.entries.find(kRegionKey);
  if (region == file.entries.end() || region->second.begin != 0 ||
      region->second.end != format::kRegionHeaderSize) {
    Bad(path, std::string("its JSON header has no region header entry (") + kRegionKey +
                  " at [0, 64])" + foreign);
  }
  char header[format::kRegionHeaderSize];
  if (!storage::ReadAt(*file.file, file.data_start, sizeof(header), header) ||
      !format::RegionHeaderMatches(header, parsed.region_size, parsed.link)) {
    Bad(path, std::string("its region header does not match the artifact's metadata") + foreign);
  }
  const std::vector<Wanted> wanted = WantedOf(parsed);
  const std::vector<std::vector<std::string>> keys = Keys(wanted);
  for (size_t k = 0; k < parsed.payloads.size(); ++k) {
    const format::ParsedFunction& fn = parsed.OwnerFunction(k);
    const format::ParsedValue& v = parsed.Owner(k);
    const uint64_t begin = v.tensor.offset, end = v.tensor.offset + v.tensor.nbytes;
    // Its first place's key, or the qualified key older files use.
    auto entry = file.entries.find(keys[k][0]);
    if (entry == file.entries.end())
      entry = file.entries.find(QualifiedKey(fn.name, v.index, fn.param_names));
    if (entry == file.entries.end() || entry->second.begin != begin || entry->second.end != end ||
        entry->second.dtype->tvm != ffi::DLDataTypeToString(v.tensor.dtype) ||
        entry->second.shape != wanted[k].shape) {
      Bad(path, "its JSON header has no tensor '" + keys[k][0] + "' at data offsets [" +
                    std::to_string(begin) + ", " + std::to_string(end) +
                    "] (with its dtype and shape), where the metadata puts " +
                    format::Where(fn, v.index) + foreign);
    }
  }
}

}  // namespace weights
}  // namespace tvm_partial
