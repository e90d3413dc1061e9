// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/verify.h
 * \brief Internal: the format's hash of a file range, read in 1 MiB chunks (fixed memory).
 */
#ifndef TVM_PARTIAL_STORAGE_VERIFY_H_
#define TVM_PARTIAL_STORAGE_VERIFY_H_

#include <tvm/ffi/error.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "format/hash.h"
#include "storage/file.h"

namespace tvm_partial {
namespace storage {

// `progress`, if set, gets the bytes hashed so far after each chunk; ValueError past the end.
inline uint64_t HashRange(const File& file, uint64_t offset, uint64_t size,
                          const std::function<void(uint64_t)>& progress = {}) {
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

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_VERIFY_H_
