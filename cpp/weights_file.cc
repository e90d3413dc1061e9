// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file weights_file.cc
 * \brief Mapping the safetensors weights file beside an artifact (format flag 2).
 */
#include "weights_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/json.h>
#include <tvm/ffi/extra/module.h>
#include <tvm_partial/partial_apply.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "registry.h"
#include "unique_fd.h"

namespace tvm_partial {
namespace weights {

namespace {
/*! \brief The largest JSON header accepted (the safetensors package's own limit). */
constexpr uint64_t kMaxHeader = 100u << 20;
constexpr const char kPaddingPrefix[] = "__padding__/";
constexpr const char kRegionKey[] = "__tvm_partial_region__";

/*! \brief The safetensors dtypes read (weights.py's `_DTYPES`): name, TVM name, bytes. */
struct Dtype {
  const char* name;
  const char* tvm;
  uint64_t bytes;
};
constexpr Dtype kDtypes[] = {{"F64", "float64", 8},   {"F32", "float32", 4}, {"F16", "float16", 2},
                             {"BF16", "bfloat16", 2}, {"I64", "int64", 8},   {"I32", "int32", 4},
                             {"I16", "int16", 2},     {"I8", "int8", 1},     {"U64", "uint64", 8},
                             {"U32", "uint32", 4},    {"U16", "uint16", 2},  {"U8", "uint8", 1},
                             {"BOOL", "bool", 1}};

/*! \brief Whether `text` is well-formed UTF-8 (what the safetensors format requires of its
 *         header; error messages quote its keys, which must decode). */
bool IsUtf8(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char c = *p++;
    int more = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (more < 0 || (more == 1 && c < 0xC2) || end - p < more) return false;
    uint32_t code = more == 0 ? c : c & (0x3F >> more);
    for (int i = 0; i < more; ++i, ++p) {
      if ((*p & 0xC0) != 0x80) return false;
      code = (code << 6) | (*p & 0x3F);
    }
    if ((more == 2 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
        (more == 3 && (code < 0x10000 || code > 0x10FFFF))) {
      return false;
    }
  }
  return true;
}

/*! \brief `[8, 3, 3, 3]`, as Python prints a list. */
std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

/*! \brief An int of the JSON header (not a bool, a float or a string), else nullopt. */
std::optional<int64_t> JsonInt(const ffi::json::Value& v) {
  if (v.type_index() != ffi::TypeIndex::kTVMFFIInt) return std::nullopt;
  return v.cast<int64_t>();
}

/*! \brief One header entry checked as weights.py's `_entry` checks it. */
Entry CheckEntry(const std::string& path, const std::string& key, const ffi::json::Value& value,
                 uint64_t data_size) {
  const std::string where = "weights file " + path + ": tensor '" + key + "'";
  auto entry = value.try_cast<ffi::json::Object>();
  if (!entry.has_value())
    TVM_FFI_THROW(ValueError) << where << ": its header entry is not an object";
  auto field = [&entry](const char* name) -> std::optional<ffi::json::Value> {
    auto it = entry->find(ffi::String(name));
    if (it == entry->end()) return std::nullopt;
    return (*it).second;
  };
  auto dtype_name = field("dtype");
  auto dtype_text = dtype_name ? dtype_name->try_cast<ffi::String>() : std::nullopt;
  const Dtype* dtype = nullptr;
  for (const Dtype& d : kDtypes) {
    if (dtype_text.has_value() && std::string(*dtype_text) == d.name) dtype = &d;
  }
  if (dtype == nullptr) {
    TVM_FFI_THROW(ValueError) << where << ": dtype "
                              << (dtype_text ? std::string(*dtype_text).substr(0, 40) : "(none)")
                              << " is not one tvm-partial reads (BF16, BOOL, F16, F32, F64, I16, "
                              << "I32, I64, I8, U16, U32, U64, U8)";
  }
  Entry out{dtype->tvm, {}, 0, 0};
  auto shape = field("shape");
  auto dims = shape ? shape->try_cast<ffi::json::Array>() : std::nullopt;
  bool shape_ok = dims.has_value() && dims->size() <= 64;
  // The element count in 128 bits: a crafted shape cannot overflow it.
  unsigned __int128 count = 1;
  for (size_t i = 0; shape_ok && i < dims->size(); ++i) {
    std::optional<int64_t> d = JsonInt((*dims)[i]);
    shape_ok = d.has_value() && *d >= 0;
    if (shape_ok) {
      out.shape.push_back(*d);
      count = count > (static_cast<unsigned __int128>(1) << 64) ? count : count * *d;
    }
  }
  if (!shape_ok) {
    TVM_FFI_THROW(ValueError) << where << ": shape is not a list of non-negative ints";
  }
  auto offsets_value = field("data_offsets");
  auto offsets = offsets_value ? offsets_value->try_cast<ffi::json::Array>() : std::nullopt;
  std::optional<int64_t> begin, end;
  if (offsets.has_value() && offsets->size() == 2) {
    begin = JsonInt((*offsets)[0]);
    end = JsonInt((*offsets)[1]);
  }
  if (!begin || !end || *begin < 0 || *end < *begin) {
    TVM_FFI_THROW(ValueError) << where
                              << ": data_offsets is not [begin, end] with 0 <= begin <= end";
  }
  out.begin = static_cast<uint64_t>(*begin);
  out.end = static_cast<uint64_t>(*end);
  const unsigned __int128 expected = count * dtype->bytes;
  if (expected != out.end - out.begin) {
    TVM_FFI_THROW(ValueError) << where << ": data_offsets span " << out.end - out.begin
                              << " bytes, its dtype " << dtype->name << " and shape "
                              << ShapeText(out.shape) << " need "
                              << (expected >> 64 ? std::string("more than 2^64")
                                                 : std::to_string(static_cast<uint64_t>(expected)));
  }
  if (out.end > data_size) {
    TVM_FFI_THROW(ValueError) << where << ": its data ends at byte " << out.end
                              << " of the data, which has " << data_size
                              << ": the file is truncated";
  }
  return out;
}

/*! \brief The innermost `ScopedWeightsFile` of this thread. */
thread_local ScopedWeightsFile* current_scope = nullptr;
/*! \brief Read the `length` bytes of JSON header after the 8-byte length of the open weights file
 *         `fd` and parse them: a ValueError naming `path` unless they are one UTF-8 JSON object. */
ffi::json::Object ReadHeader(int fd, const std::string& path, uint64_t length) {
  std::string text(static_cast<size_t>(length), '\0');
  if (length && pread(fd, &text[0], text.size(), 8) != static_cast<ssize_t>(text.size())) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << " is truncated inside its JSON header";
  }
  if (!IsUtf8(text)) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << ": malformed JSON header (not UTF-8)";
  }
  ffi::String error;
  ffi::json::Value parsed = ffi::json::Parse(ffi::String(text), &error);
  auto object = parsed.try_cast<ffi::json::Object>();
  if (!error.empty() || !object.has_value()) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << ": malformed JSON header"
                              << (error.empty() ? std::string(" (not an object)")
                                                : " (" + std::string(error).substr(0, 200) + ")");
  }
  return *object;
}

}  // namespace

std::string Beside(const std::string& library, const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  const size_t slash = library.rfind('/');
  return slash == std::string::npos ? name : library.substr(0, slash + 1) + name;
}

region::MappedRegion Map(const std::string& path, size_t region_size) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    TVM_FFI_THROW(FileNotFoundError) << "the weights file " << path << " of this artifact does "
                                     << "not exist; keep it beside the library under the name it "
                                     << "was exported with, or load(path, weights_file=...) to "
                                     << "bind the tensors of another file";
  }
  if (fd < 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot open the weights file " << path
                                << " of this artifact: " << std::strerror(errno)
                                << "; keep it beside the library under the name "
                                << "it was exported with, or load(path, weights_file=...)";
  }
  const detail::UniqueFd closer(fd);
  struct stat st;
  uint64_t header_len = 0;
  if (fstat(fd, &st) != 0 || pread(fd, &header_len, 8, 0) != 8) {
    TVM_FFI_THROW(ValueError) << "weights file " << path
                              << " is truncated: not even a safetensors header length";
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (header_len > kMaxHeader || 8 + header_len > size) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << ": its JSON header claims "
                              << header_len << " bytes, the file has " << size
                              << "; it is damaged or not a safetensors file";
  }
  const uint64_t start = 8 + header_len;
  if (start % format::kPayloadAlignment != 0 || region_size < format::kRegionHeaderSize ||
      region_size > size - start) {
    TVM_FFI_THROW(ValueError) << "weights file " << path
                              << " is truncated or not the one exported with "
                              << "this artifact: its data (" << size - start << " bytes at offset "
                              << start << ") cannot hold the " << region_size
                              << " bytes of payloads";
  }
  void* base = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (base == MAP_FAILED) {
    TVM_FFI_THROW(RuntimeError) << "cannot map the weights file " << path << ": "
                                << std::strerror(errno);
  }
  region::MappedRegion out;
  const size_t length = static_cast<size_t>(size);
  out.keepalive = std::shared_ptr<void>(base, [length](void* p) { munmap(p, length); });
  out.data = static_cast<const char*>(base) + start;
  out.size = region_size;
  out.library = path;
  return out;
}

void CheckHeader(const std::string& path, const std::vector<Span>& spans) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    TVM_FFI_THROW(RuntimeError) << "cannot open the weights file " << path << ": "
                                << std::strerror(errno);
  const detail::UniqueFd closer(fd);
  uint64_t header_len = 0;
  if (pread(fd, &header_len, 8, 0) != 8 || header_len > kMaxHeader) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << ": no readable safetensors header";
  }
  const ffi::json::Object object = ReadHeader(fd, path, header_len);
  std::set<std::pair<uint64_t, uint64_t>> ranges;  // every entry's [begin, end) in the data
  for (const auto& kv : object) {
    auto entry = kv.second.try_cast<ffi::json::Object>();
    if (!entry.has_value() || !entry->count(ffi::String("data_offsets"))) continue;  // __metadata__
    auto offsets = entry->at(ffi::String("data_offsets")).try_cast<ffi::json::Array>();
    if (!offsets.has_value() || offsets->size() != 2) continue;
    auto begin = (*offsets)[0].try_cast<int64_t>();
    auto end = (*offsets)[1].try_cast<int64_t>();
    if (begin.has_value() && end.has_value() && *begin >= 0 && *end >= *begin) {
      ranges.emplace(static_cast<uint64_t>(*begin), static_cast<uint64_t>(*end));
    }
  }
  if (!ranges.count({0, format::kRegionHeaderSize})) {
    TVM_FFI_THROW(ValueError)
        << "weights file " << path << ": its JSON header has no region header entry "
        << "(__tvm_partial_region__ at [0, 64]); it was not written with this artifact";
  }
  for (const Span& span : spans) {
    if (!ranges.count({span.begin, span.end})) {
      TVM_FFI_THROW(ValueError) << "weights file " << path
                                << ": its JSON header has no tensor at data offsets [" << span.begin
                                << ", " << span.end << "], where the metadata puts " << span.where
                                << "; it was not written with this artifact";
    }
  }
}

File Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    TVM_FFI_THROW(FileNotFoundError) << "weights file " << path << " does not exist";
  }
  if (fd < 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot open the weights file " << path << ": "
                                << std::strerror(errno);
  }
  const detail::UniqueFd closer(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot read the weights file " << path << ": "
                                << std::strerror(errno);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t length = 0;
  if (size < 8 || pread(fd, &length, 8, 0) != 8) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << " is truncated: " << size
                              << " bytes, not even a safetensors header length";
  }
  if (length > kMaxHeader) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << ": its JSON header claims " << length
                              << " bytes, more than the " << kMaxHeader
                              << " read; it is not a safetensors file or is damaged";
  }
  if (8 + length > size) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << " is truncated: its JSON header needs "
                              << 8 + length << " bytes, the file has " << size;
  }
  const ffi::json::Object object = ReadHeader(fd, path, length);
  const uint64_t data_start = 8 + length, data_size = size - data_start;
  File out;
  out.path = path;
  std::map<std::string, Entry> all;  // sorted by key: the first bad key named is deterministic
  std::map<std::string, ffi::json::Value> raw;
  for (const auto& kv : object) {
    auto key = kv.first.try_cast<ffi::String>();
    if (!key.has_value()) continue;  // JSON object keys are strings
    if (std::string(*key) != "__metadata__") raw.emplace(std::string(*key), kv.second);
  }
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> spans;
  for (const auto& [key, value] : raw) {
    Entry e = CheckEntry(path, key, value, data_size);
    if (e.end > e.begin) spans.push_back({{e.begin, e.end}, key});
    const bool skipped = key.rfind(kPaddingPrefix, 0) == 0 || key == kRegionKey;
    if (!skipped) out.entries.emplace(key, std::move(e));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].first.first < spans[i - 1].first.second) {
      TVM_FFI_THROW(ValueError) << "weights file " << path << ": tensors '" << spans[i - 1].second
                                << "' and '" << spans[i].second << "' overlap in the file";
    }
  }
  void* base = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (base == MAP_FAILED) {
    TVM_FFI_THROW(RuntimeError) << "cannot map the weights file " << path << ": "
                                << std::strerror(errno);
  }
  const size_t mapped = static_cast<size_t>(size);
  out.data.keepalive = std::shared_ptr<void>(base, [mapped](void* p) { munmap(p, mapped); });
  out.data.data = static_cast<const char*>(base) + data_start;
  out.data.size = static_cast<size_t>(data_size);
  out.data.library = path;
  return out;
}

std::string Key(const std::string& function, int64_t position,
                const ffi::Array<ffi::String>& param_names) {
  std::string name;
  if (position >= 0 && position < static_cast<int64_t>(param_names.size())) {
    name = param_names[position];
  }
  bool unique = !name.empty() && name.find('/') == std::string::npos &&
                name.find_first_not_of("0123456789") != std::string::npos;
  for (int64_t i = 0; unique && i < static_cast<int64_t>(param_names.size()); ++i) {
    unique = i == position || std::string(param_names[i]) != name;
  }
  return function + "/" + (unique ? name : std::to_string(position));
}

std::vector<const char*> Payloads(const File& file, const std::vector<Wanted>& wanted) {
  std::map<std::string, const Wanted*> expected;
  for (const Wanted& w : wanted) expected.emplace(w.key, &w);
  std::vector<std::string> missing;
  for (const auto& [key, _] : expected) {
    if (!file.entries.count(key)) missing.push_back(key);
  }
  if (!missing.empty()) {
    TVM_FFI_THROW(ValueError) << "weights file " << file.path << " lacks tensor '" << missing[0]
                              << "' that the module binds"
                              << (missing.size() > 1
                                      ? " (and " + std::to_string(missing.size() - 1) + " more)"
                                      : std::string())
                              << "; it holds the weights of another model";
  }
  for (const auto& [key, _] : file.entries) {
    if (expected.count(key)) continue;
    std::string binds;
    for (const auto& [k, _w] : expected) binds += (binds.empty() ? "" : ", ") + k;
    TVM_FFI_THROW(ValueError) << "weights file " << file.path << ": tensor '" << key
                              << "' is not a tensor the module binds (it binds "
                              << (binds.empty() ? "no tensors" : binds)
                              << "); it holds the weights of another model";
  }
  std::vector<const char*> out;
  for (const Wanted& w : wanted) {
    const Entry& e = file.entries.at(w.key);
    if (e.dtype != w.dtype || e.shape != w.shape) {
      TVM_FFI_THROW(ValueError) << "weights file " << file.path << ": tensor '" << w.key << "' is "
                                << e.dtype << ShapeText(e.shape) << ", the module binds " << w.dtype
                                << ShapeText(w.shape) << " there";
    }
    out.push_back(file.data.data + e.begin);
  }
  return out;
}

ScopedWeightsFile::ScopedWeightsFile(std::string path)
    : path_(std::move(path)), outer_(current_scope) {
  current_scope = this;
}

ScopedWeightsFile::~ScopedWeightsFile() { current_scope = outer_; }

const std::string* ScopedWeightsFile::Current() {
  return current_scope ? &current_scope->path_ : nullptr;
}

void ScopedWeightsFile::MarkUsed() {
  if (current_scope) ++current_scope->used_;
}

}  // namespace weights

ffi::Module LoadWithWeights(const std::string& library, const std::string& weights_file) {
  if (weights_file.empty()) {
    TVM_FFI_THROW(ValueError) << "LoadWithWeights: weights_file is empty; name a safetensors file";
  }
  weights::ScopedWeightsFile scope(weights_file);
  // dlopen searches the library path for a bare file name: pass a path.
  ffi::Module mod =
      ffi::Module::LoadFromFile(library.find('/') == std::string::npos ? "./" + library : library);
  if (scope.used() == 0) {
    TVM_FFI_THROW(ValueError) << library << " holds no partial module that this tvm-partial "
                              << "loads, so it binds no tensors that the weights file "
                              << weights_file << " could replace";
  }
  return mod;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce(
      "tvm_partial.LoadWithWeights",
      [](ffi::String library, ffi::String path) { return LoadWithWeights(library, path); });
}

}  // namespace tvm_partial
