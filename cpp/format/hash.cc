// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/hash.cc
 * \brief The format's 64-bit multiply-rotate hash (see hash.h).
 */
#include "format/hash.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace tvm_partial {
namespace hash {

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only (the format asserts it)
  return v;
}
inline uint64_t Lane(uint64_t acc, uint64_t word) { return Rotl(acc + word * kP2, 31) * kP1; }

}  // namespace

Hasher::Hasher() : acc_{kP1 + kP2, kP2, 0, 0 - kP1} {}

void Hasher::Update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (buffered_ > 0) {
    size_t take = std::min(size, sizeof(buffer_) - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < sizeof(buffer_)) return;
    Block(buffer_);
    buffered_ = 0;
  }
  for (; size >= 32; p += 32, size -= 32) Block(p);
  if (size > 0) std::memcpy(buffer_, p, size);
  buffered_ = size;
}

uint64_t Hasher::Final() const {
  uint64_t h = Rotl(acc_[0], 1) + Rotl(acc_[1], 7) + Rotl(acc_[2], 12) + Rotl(acc_[3], 18);
  h ^= total_ * kP3;
  size_t i = 0;
  for (; i + 8 <= buffered_; i += 8) h = Rotl(h ^ Lane(0, Load64(buffer_ + i)), 27) * kP1 + kP3;
  for (; i < buffered_; ++i) h = Rotl(h ^ (buffer_[i] * kP3), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

void Hasher::Block(const unsigned char* p) {
  for (int k = 0; k < 4; ++k) acc_[k] = Lane(acc_[k], Load64(p + 8 * k));
}

uint64_t Hash(const void* data, size_t size) {
  Hasher h;
  h.Update(data, size);
  return h.Final();
}

std::string HashHex(uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, h);
  return text;
}

}  // namespace hash
}  // namespace tvm_partial
