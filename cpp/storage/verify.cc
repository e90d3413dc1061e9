// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/verify.cc
 * \brief Hashing payloads where they lie in a file (storage/verify.h): a payload is read in
 *        chunks, so checking a multi-GiB artifact needs a fixed, small amount of memory.
 */
#include "storage/verify.h"

#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "format/hash.h"
#include "registry.h"

namespace tvm_partial {
namespace storage {

namespace ffi = ::tvm::ffi;

uint64_t HashRange(const File& file, uint64_t offset, uint64_t size,
                   const std::function<void(uint64_t)>& progress) {
  if (offset > file.size || size > file.size - offset) {
    TVM_FFI_THROW(ValueError) << file.path << " is truncated: " << size << " bytes at offset "
                              << offset << " run past the end of the file (" << file.size
                              << " bytes)";
  }
  constexpr size_t kChunk = size_t{1} << 20;
  hash::Hasher hasher;
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(kChunk, size)));
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kChunk));
    if (!ReadAt(file, offset + done, n, buffer.data())) {
      TVM_FFI_THROW(ValueError) << file.path << " is truncated: " << size << " bytes at offset "
                                << offset << " run past the end of the file";
    }
    hasher.Update(buffer.data(), n);
    done += n;
    if (progress) progress(done);
  }
  return hasher.Final();
}

namespace {

int64_t HashFileRange(const ffi::String& path, int64_t offset, int64_t size,
                      const ffi::Optional<ffi::Function>& progress) {
  if (offset < 0 || size < 0) {
    TVM_FFI_THROW(ValueError) << "HashFileRange: offset " << offset << " and size " << size
                              << " must not be negative";
  }
  auto file = OpenRegular(path, "file");
  std::function<void(uint64_t)> report;
  if (progress.has_value())
    report = [&](uint64_t done) { (*progress)(static_cast<int64_t>(done)); };
  // The bits of the u64 the format records.
  return static_cast<int64_t>(
      HashRange(*file, static_cast<uint64_t>(offset), static_cast<uint64_t>(size), report));
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // The format's hash of `size` bytes of a file from `offset` (tests check the chunked reader).
  detail::RegisterGlobalOnce("tvm_partial.HashFileRange",
                             [](ffi::String path, int64_t offset, int64_t size) {
                               return HashFileRange(path, offset, size, std::nullopt);
                             });
}

}  // namespace storage
}  // namespace tvm_partial
