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
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format.h"

namespace tvm_partial {
namespace weights {

namespace {
/*! \brief The largest JSON header accepted (the safetensors package's own limit). */
constexpr uint64_t kMaxHeader = 100u << 20;
}  // namespace

std::string Beside(const std::string& library, const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  const size_t slash = library.rfind('/');
  return slash == std::string::npos ? name : library.substr(0, slash + 1) + name;
}

region::MappedRegion Map(const std::string& path, size_t region_size) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot open the weights file " << path
                                << " of this artifact: " << std::strerror(errno)
                                << "; keep it beside the library under the name "
                                << "it was exported with, or load(path, weights_file=...)";
  }
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    close(*f);
    delete f;
  });
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
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    close(*f);
    delete f;
  });
  uint64_t header_len = 0;
  if (pread(fd, &header_len, 8, 0) != 8 || header_len > kMaxHeader) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << ": no readable safetensors header";
  }
  std::string text(static_cast<size_t>(header_len), '\0');
  if (header_len && pread(fd, &text[0], text.size(), 8) != static_cast<ssize_t>(text.size())) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << " is truncated inside its JSON header";
  }
  ffi::String error;
  ffi::json::Value parsed = ffi::json::Parse(ffi::String(text), &error);
  auto object = parsed.try_cast<ffi::json::Object>();
  if (!error.empty() || !object.has_value()) {
    TVM_FFI_THROW(ValueError) << "weights file " << path << ": malformed JSON header"
                              << (error.empty() ? std::string(" (not an object)")
                                                : " (" + std::string(error) + ")");
  }
  std::set<std::pair<uint64_t, uint64_t>> ranges;  // every entry's [begin, end) in the data
  for (const auto& kv : *object) {
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

}  // namespace weights
}  // namespace tvm_partial
