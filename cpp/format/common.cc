// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/common.cc
 * \brief The format's hash (format/hash.h) and the writer's and reader's shared checks (common.h).
 */
#include "format/common.h"

#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bind/aligned_tensor.h"
#include "device.h"
#include "format/hash.h"

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

namespace format {

namespace {
constexpr int32_t kMaxDeviceId = 1024;  // no process has that many devices of a kind

const char* HostData(const DLTensor* t) {
  if (!detail::IsHostDevice(t->device)) return nullptr;
  return static_cast<const char*>(t->data) + t->byte_offset;
}
}  // namespace

uint64_t MetadataHash(const char* blob, size_t meta_size) {
  hash::Hasher h;
  h.Update(blob, kHashedHeader);
  h.Update(blob + kHeaderSize, meta_size);
  return h.Final();
}

bool IsValidUtf8(const char* data, size_t size) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  const auto* end = p + size;
  while (p < end) {
    const unsigned char c = *p;
    // Continuation bytes after `c` (4: `c` cannot start a character).
    const size_t n = c < 0x80 ? 0 : c < 0xC2 ? 4 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF5 ? 3 : 4;
    if (n == 4 || static_cast<size_t>(end - p) <= n) return false;
    // The second byte's range: no overlong forms (E0, F0), surrogates (ED) or past U+10FFFF (F4).
    const unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (n > 0 && (p[1] < lo || p[1] > hi)) return false;
    for (size_t k = 2; k <= n; ++k) {
      if ((p[k] & 0xC0) != 0x80) return false;
    }
    p += n + 1;
  }
  return true;
}

std::string TensorProblem(DLDataType dtype, int32_t device_type, int32_t device_id) {
  const bool known_code = dtype.code == kDLInt || dtype.code == kDLUInt || dtype.code == kDLFloat ||
                          dtype.code == kDLBfloat || dtype.code == kDLBool ||
                          (dtype.code >= kDLFloat8_e3m4 && dtype.code <= kDLFloat4_e2m1fn);
  if (!known_code) {
    return "a dtype of type code " + std::to_string(dtype.code) +
           " cannot be stored (only int, uint, float, bfloat16, float8, float6, float4 and bool "
           "tensors can)";
  }
  const std::string name = ffi::DLDataTypeToString(dtype);
  // TVM's sub-byte dtypes, stored packed as TVM allocates them.
  const bool sub_byte =
      ((dtype.code == kDLInt || dtype.code == kDLUInt) &&
       (dtype.bits == 1 || dtype.bits == 2 || dtype.bits == 4)) ||
      ((dtype.code == kDLFloat6_e2m3fn || dtype.code == kDLFloat6_e3m2fn) && dtype.bits == 6) ||
      (dtype.code == kDLFloat4_e2m1fn && dtype.bits == 4);
  if (dtype.bits == 0 || (dtype.bits % 8 != 0 && !sub_byte)) {
    return "dtype '" + name + "' has " + std::to_string(dtype.bits) +
           " bits per element; only whole bytes and TVM's sub-byte dtypes (int1/2/4, uint1/2/4, "
           "float6_e2m3fn, float6_e3m2fn, float4_e2m1fn) can be stored";
  }
  if (static_cast<int16_t>(dtype.lanes) < 1) {
    return "dtype with " + std::to_string(static_cast<int16_t>(dtype.lanes)) +
           " lanes cannot be stored (lanes must be 1 to 32767)";
  }
  if (detail::DeviceName(device_type) == nullptr || device_id < 0 || device_id >= kMaxDeviceId ||
      (device_type == kDLCPU && device_id != 0)) {
    return "invalid device " + detail::DeviceString(device_type, device_id) + " (ids are 0 to " +
           std::to_string(kMaxDeviceId - 1) + ", and 0 for cpu)";
  }
  return "";
}

std::string ShapeProblem(const int64_t* shape, size_t ndim, DLDataType dtype, uint64_t* bytes) {
  uint64_t nonzero = 1;  // the product of the non-zero dimensions
  bool empty = false;
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t d = shape[i];
    if (d < 0) return "negative dimension " + std::to_string(d);
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(nonzero, static_cast<uint64_t>(d), &nonzero) ||
               nonzero > static_cast<uint64_t>(INT64_MAX)) {
      return "the shape's element count overflows";
    }
  }
  if (!detail::TensorBytes(nonzero, dtype, bytes)) return "the shape's byte size overflows";
  if (empty) *bytes = 0;
  return "";
}

std::string Dims(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

void CopyTensorToHost(const ffi::Tensor& tensor, char* dst, size_t nbytes) {
  if (nbytes == 0) return;
  const DLTensor* t = tensor.GetDLTensorPtr();
  if (const char* host = HostData(t)) {
    std::memcpy(dst, host, nbytes);
    return;
  }
  // Looked up each time: tvm may be imported after the first save.
  auto copy = ffi::Function::GetGlobal("runtime.TVMTensorCopyToBytes");
  if (!copy.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "saving a tensor on "
                                << detail::DeviceString(t->device.device_type, t->device.device_id)
                                << " needs the TVM runtime (runtime.TVMTensorCopyToBytes); "
                                   "import tvm first";
  }
  (*copy)(tensor, static_cast<void*>(dst), static_cast<int64_t>(nbytes));
}

void ForEachStoredPiece(const ffi::Tensor& tensor, size_t nbytes, const Shard* shard,
                        const std::function<void(const char*, size_t)>& visit) {
  const char* host = HostData(tensor.GetDLTensorPtr());
  std::string copy;
  if (host == nullptr) {
    copy.resize(nbytes);
    CopyTensorToHost(tensor, copy.data(), nbytes);
    host = copy.data();
  }
  if (shard == nullptr || shard->layout != kShardMajor) {
    visit(host, nbytes);
    return;
  }
  const size_t per_rank = nbytes / static_cast<size_t>(shard->world);
  std::string buffer(per_rank, '\0');
  const std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  for (int64_t r = 0; r < shard->world; ++r) {
    GatherRank(host, buffer.data(), nbytes, shape, tensor.dtype(), *shard, r);
    visit(buffer.data(), per_rank);
  }
}

uint64_t StoredHash(const ffi::Tensor& tensor, size_t nbytes, const Shard* shard) {
  hash::Hasher hasher;
  ForEachStoredPiece(tensor, nbytes, shard, [&](const char* d, size_t n) { hasher.Update(d, n); });
  return hasher.Final();
}

}  // namespace format
}  // namespace tvm_partial
