// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file verify.cc
 * \brief Hashing payloads where they lie in a file, for `tvm_partial.verify`: a payload is read in
 *        chunks, so checking a multi-GiB artifact needs a fixed, small amount of memory.
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hash.h"
#include "registry.h"

namespace tvm_partial {

namespace ffi = ::tvm::ffi;

namespace {

constexpr size_t kChunk = 1 << 20;

/*!
 * \brief The format's hash of `size` bytes of the file at `path` from byte `offset`; `progress`
 *        (when not null) is called with the count of bytes hashed so far after each chunk.
 * \throws ValueError when the range is negative or runs past the end of the file (it is cut
 *         short); RuntimeError when the file cannot be opened or read.
 */
int64_t HashRange(const ffi::String& path, int64_t offset, int64_t size,
                  const ffi::Function* progress) {
  if (offset < 0 || size < 0) {
    TVM_FFI_THROW(ValueError) << "HashFileRange: offset " << offset << " and size " << size
                              << " must not be negative";
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    TVM_FFI_THROW(RuntimeError) << "cannot open " << path << ": " << std::strerror(errno);
  }
  if (fseeko(file.get(), static_cast<off_t>(offset), SEEK_SET) != 0) {
    TVM_FFI_THROW(ValueError) << path << ": cannot seek to byte " << offset;
  }
  hash::Hasher hasher;
  std::vector<char> buffer(std::min<size_t>(kChunk, static_cast<size_t>(size)));
  uint64_t left = static_cast<uint64_t>(size);
  while (left > 0) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
    size_t got = std::fread(buffer.data(), 1, want, file.get());
    if (got != want) {
      if (std::ferror(file.get())) {
        TVM_FFI_THROW(RuntimeError) << "reading " << path << " failed: " << std::strerror(errno);
      }
      TVM_FFI_THROW(ValueError) << path << " is truncated: " << size << " bytes at offset "
                                << offset << " run past the end of the file";
    }
    hasher.Update(buffer.data(), got);
    left -= got;
    if (progress != nullptr) (*progress)(size - static_cast<int64_t>(left));
  }
  return static_cast<int64_t>(hasher.Final());  // the bits of the u64 the format records
}

int64_t HashFileRange(const ffi::String& path, int64_t offset, int64_t size) {
  return HashRange(path, offset, size, nullptr);
}

/*! \brief `HashFileRange` that calls `progress(bytes hashed so far)` after each 1 MiB chunk
 *         (what `verify(path, progress=...)` reports from). */
int64_t HashFileRangeProgress(const ffi::String& path, int64_t offset, int64_t size,
                              const ffi::Function& progress) {
  return HashRange(path, offset, size, &progress);
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("tvm_partial.HashFileRange", HashFileRange);
  detail::RegisterGlobalOnce("tvm_partial.HashFileRangeProgress", HashFileRangeProgress);
}

}  // namespace tvm_partial
