// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/appended_region.cc
 * \brief Writing and locating the appended payload region and its trailer.
 */
#include "storage/appended_region.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "format/common.h"
#include "format/hash.h"

namespace tvm_partial {
namespace storage {

namespace {

// The region's file offset is a multiple of this (of every page size: it maps in place).
constexpr uint64_t kAppendAlignment = 64 * 1024;
constexpr char kTrailerMagic[8] = {'T', 'V', 'M', 'P', 'T', 'R', 'L', 'R'};
constexpr uint32_t kTrailerVersion = 1;

// The trailer as it lies at the end of the file (docs/format.md); `hash` covers the fields before.
struct Trailer {
  char magic[8];
  uint32_t version, zero;
  uint64_t offset, size, link, hash;
  char zeros[16];
};
static_assert(sizeof(Trailer) == 64 && offsetof(Trailer, hash) == 40, "the format's layout");

// Positioned writes to a file; every failure names the file and the system's error.
class FileWriter {
 public:
  FileWriter(const std::string& path, int flags, const char* what) : path_(path), what_(what) {
    const int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd < 0) Fail("cannot open");
    fd_ = UniqueFd(fd);
  }
  uint64_t Size() {
    struct stat st;
    if (fstat(fd_.get(), &st) != 0) Fail("cannot read the size of");
    return static_cast<uint64_t>(st.st_size);
  }
  void Put(const char* data, size_t n) {
    if (!WriteAt(fd_.get(), data, n, at_)) Fail("writing failed:");
    at_ += n;
  }
  void PadTo(uint64_t target) {
    static const char zeros[4096] = {};
    while (at_ < target)
      Put(zeros, static_cast<size_t>(std::min<uint64_t>(target - at_, sizeof(zeros))));
  }
  void Close() {
    // Delayed write errors (network file systems, quotas) surface here.
    if (close(fd_.release()) != 0) Fail("closing failed:");
  }
  uint64_t at() const { return at_; }
  void Seek(uint64_t at) { at_ = at; }

 private:
  [[noreturn]] void Fail(const char* what) {
    const int err = errno;
    TVM_FFI_THROW(RuntimeError) << what_ << ": " << what << " " << path_ << " "
                                << std::strerror(err);
    TVM_FFI_UNREACHABLE();
  }
  std::string path_;
  const char* what_;
  UniqueFd fd_;
  uint64_t at_ = 0;
};

// Write the region at `start` of `out` (zeros before) -> its size; its hashes to `hashes` if set.
uint64_t PutRegion(FileWriter& out, uint64_t start,
                   const std::vector<format::FunctionRecord>& functions, uint64_t link,
                   const ffi::Optional<ffi::Function>& progress, std::vector<uint64_t>* hashes) {
  const std::vector<ffi::Tensor> tensors = format::PayloadTensors(functions);
  const std::vector<const format::Shard*> shards = format::PayloadShards(functions);
  const uint64_t total = format::RegionSize(tensors);
  constexpr size_t kChunk = size_t{64} << 20;  // progress granularity
  constexpr size_t kPiece = size_t{4} << 20;   // hashed, then written while still in the cache
  out.PadTo(start);
  const std::string header = format::EncodeRegionHeader(total, link);
  out.Put(header.data(), header.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    const size_t nbytes = format::PayloadBytes(*tensors[k].GetDLTensorPtr());
    out.PadTo(start + format::AlignUp(out.at() - start));
    hash::Hasher hasher;
    size_t done = 0;  // of this payload: progress each kChunk bytes, and at its end
    format::ForEachStoredPiece(tensors[k], nbytes, shards[k], [&](const char* data, size_t n) {
      for (size_t piece = 0; piece < n; piece += kPiece) {
        const size_t m = std::min(kPiece, n - piece);
        if (hashes != nullptr) hasher.Update(data + piece, m);
        out.Put(data + piece, m);
        const bool chunk_done = (done + m) / kChunk != done / kChunk;
        done += m;
        if (progress.has_value() && (chunk_done || done == nbytes) && out.at() - start < total) {
          (*progress)(static_cast<int64_t>(out.at() - start), static_cast<int64_t>(total));
        }
      }
    });
    if (hashes != nullptr) hashes->push_back(hasher.Final());
  }
  return total;
}

}  // namespace

uint64_t LocateAppended(const File& library, uint64_t size, uint64_t link) {
  Trailer trailer{};
  const bool read =
      library.size >= sizeof(trailer) && ReadAt(library, library.size - sizeof(trailer),
                                                sizeof(trailer), reinterpret_cast<char*>(&trailer));
  if (!read || std::memcmp(trailer.magic, kTrailerMagic, 8) != 0 ||
      trailer.version != kTrailerVersion || trailer.hash != hash::Hash(&trailer, 40)) {
    TVM_FFI_THROW(ValueError) << library.path << " is truncated or was rewritten: its payload "
                              << "region (" << size << " bytes, appended after the code) is "
                              << "missing, and so is the trailer at the end of the file that "
                              << "locates it (tools such as strip drop data appended to a "
                              << "library); copy or export it again";
  }
  const uint64_t end = library.size - sizeof(trailer);
  if (trailer.size != size || trailer.link != link || trailer.offset % kAppendAlignment != 0 ||
      trailer.offset > end || trailer.size != end - trailer.offset) {
    TVM_FFI_THROW(ValueError) << library.path << " is damaged: the trailer of its appended "
                              << "payload region (offset " << trailer.offset << ", " << trailer.size
                              << " bytes, link " << trailer.link
                              << ") does not match its metadata (" << size << " bytes, link "
                              << link << ") or the file (" << library.size
                              << " bytes); copy or export it again";
  }
  char header[format::kRegionHeaderSize];
  if (!ReadAt(library, trailer.offset, sizeof(header), header) ||
      !format::RegionHeaderMatches(header, size, link)) {
    TVM_FFI_THROW(ValueError) << library.path << " is damaged: the header of its appended "
                              << "payload region (at offset " << trailer.offset
                              << ") does not match its metadata; copy or export it again";
  }
  return trailer.offset;
}

std::vector<uint64_t> AppendRegion(const std::vector<format::FunctionRecord>& functions,
                                   const format::ExternalRegion& region, const std::string& path,
                                   const ffi::Optional<ffi::Function>& progress) {
  FileWriter out(path, O_WRONLY, "export_library: appending the payload region");
  const uint64_t size = out.Size();
  out.Seek(size);
  const uint64_t start = (size + kAppendAlignment - 1) / kAppendAlignment * kAppendAlignment;
  std::vector<uint64_t> hashes;
  const uint64_t total = PutRegion(out, start, functions, region.link, progress, &hashes);
  Trailer trailer{{}, kTrailerVersion, 0, start, total, region.link, 0, {}};
  std::memcpy(trailer.magic, kTrailerMagic, 8);
  trailer.hash = hash::Hash(&trailer, 40);
  out.Put(reinterpret_cast<const char*>(&trailer), sizeof(trailer));
  out.Close();
  if (progress.has_value()) (*progress)(static_cast<int64_t>(total), static_cast<int64_t>(total));
  return hashes;
}

void WriteRegion(const std::vector<format::FunctionRecord>& functions,
                 const format::ExternalRegion& region, const std::string& path, uint64_t lead) {
  FileWriter out(path, O_WRONLY | O_CREAT | O_TRUNC, "writing the payload region");
  PutRegion(out, lead, functions, region.link, std::nullopt, nullptr);
  out.Close();
}

void CopyAround(const File& source, const std::string& path, uint64_t hole, uint64_t hole_size) {
  FileWriter out(path, O_WRONLY | O_CREAT, "copying the library");
  std::string chunk(std::min<uint64_t>(source.size, uint64_t{1} << 20), '\0');
  auto copy = [&](uint64_t from, uint64_t to) {
    out.Seek(from);
    for (uint64_t at = from; at < to; at += chunk.size()) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), to - at));
      if (!ReadAt(source, at, n, &chunk[0])) {
        TVM_FFI_THROW(ValueError) << source.path << " is shorter than it was when it was opened";
      }
      out.Put(chunk.data(), n);
    }
  };
  copy(0, std::min(hole, source.size));
  if (hole + hole_size < source.size) copy(hole + hole_size, source.size);
  out.Close();
}

}  // namespace storage
}  // namespace tvm_partial
