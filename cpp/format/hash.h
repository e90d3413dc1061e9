// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/hash.h
 * \brief Internal: the format's 64-bit payload and metadata hash (defined in format/common.cc).
 *
 * Our own multiply-rotate hash (not xxHash64, though it borrows its primes): four lanes over
 * 32-byte blocks (fast enough for every payload at load), then the tail and an avalanche. Detects
 * accidental damage, not tampering. Artifacts record it: its output must never change.
 */
#ifndef TVM_PARTIAL_HASH_H_
#define TVM_PARTIAL_HASH_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace tvm_partial {
namespace hash {

/*! \brief Incremental: `Update` repeatedly, then `Final`; equals hashing the bytes at once. */
class Hasher {
 public:
  Hasher();
  void Update(const void* data, size_t size);
  uint64_t Final() const;

 private:
  void Block(const unsigned char* p);
  uint64_t acc_[4];
  unsigned char buffer_[32];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

uint64_t Hash(const void* data, size_t size);

/*! \brief A hash as it is written and shown: 16 lowercase hex digits. */
std::string HashHex(uint64_t h);

}  // namespace hash
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_HASH_H_
