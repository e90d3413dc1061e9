// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/common.cc
 * \brief The checks the format's writer and reader share (format/common.h).
 */
#include "format/common.h"

#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bind/aligned_tensor.h"
#include "device.h"
#include "format/hash.h"

namespace tvm_partial {
namespace format {

namespace {
/*! \brief Device ids at or above this are refused: no process has that many devices of a kind. */
constexpr int32_t kMaxDeviceId = 1024;
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
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) <= n) return false;
    if (p[1] < lo || p[1] > hi) return false;
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
  // Sub-byte dtypes are the ones TVM names: int and uint of 1, 2 or 4 bits, float6 (6 bits) and
  // float4 (4 bits), packed (ceil(elements * bits / 8) bytes, as TVM allocates them).
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

namespace {
/*! \brief `[8, 16]`, as Python prints a list. */
std::string Dims(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}
}  // namespace

namespace {

/*! \brief The split of a shard-major tensor as blocks: `outer` (the product of the dims before
 *         `dim`) x `segments` x `world` blocks of `block` bytes each; row-major source order. */
struct Blocks {
  uint64_t outer = 1, segments = 1, world = 1, block = 0;
};

/*! \brief `shape` (checked) split by `dim`, `world` and `segments`, or why its blocks are not
 *         whole bytes. `bytes` is the tensor's byte length. */
std::string BlocksOf(const std::vector<int64_t>& shape, DLDataType dtype, int64_t dim,
                     int64_t world, int64_t segments, uint64_t bytes, Blocks* out) {
  uint64_t outer = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= static_cast<uint64_t>(shape[i]);
  const uint64_t count = outer * static_cast<uint64_t>(segments) * static_cast<uint64_t>(world);
  if (count == 0) {  // an empty tensor: nothing to reorder
    *out = {outer, static_cast<uint64_t>(segments), static_cast<uint64_t>(world), 0};
    return "";
  }
  // In bits: a block of a sub-byte dtype may not end on a byte.
  unsigned __int128 bits = 1;
  for (int64_t d : shape) bits *= static_cast<uint64_t>(d);
  bits *= static_cast<unsigned>(dtype.bits) * static_cast<unsigned>(dtype.lanes);
  if (bits % (static_cast<unsigned __int128>(count) * 8) != 0 || bytes % count != 0) {
    return "a rank's block of dimension " + std::to_string(dim) + " of shape " + Dims(shape) +
           " is not a whole number of bytes (" + std::string(ffi::DLDataTypeToString(dtype)) +
           " packs several elements per byte), so the ranks' bytes cannot be kept apart";
  }
  *out = {outer, static_cast<uint64_t>(segments), static_cast<uint64_t>(world), bytes / count};
  return "";
}

}  // namespace

std::string RankProblem(int64_t rank, int64_t world) {
  if (world < 1) return "the world must be at least 1 (the number of ranks)";
  if (rank < 0 || rank >= world) return "the rank must be 0 to " + std::to_string(world - 1);
  return "";
}

std::string ShardProblem(const std::vector<int64_t>& shape, DLDataType dtype, int64_t dim,
                         int64_t world, int64_t segments) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (world < 2 || world > kMaxWorld) {
    return "world " + std::to_string(world) + " is not 2 to " + std::to_string(kMaxWorld) +
           " ranks";
  }
  if (segments < 1 || segments > kMaxSegments) {
    return "segments " + std::to_string(segments) + " is not 1 to " + std::to_string(kMaxSegments);
  }
  if (dim < 0 || dim >= ndim) {
    return "dim " + std::to_string(dim) + " is not a dimension of a tensor with " +
           std::to_string(ndim) + (ndim == 1 ? " dimension" : " dimensions");
  }
  uint64_t bytes = 0;
  const std::string problem = ShapeProblem(shape.data(), shape.size(), dtype, &bytes);
  if (!problem.empty()) return problem;
  if (shape[dim] % (segments * world) != 0) {
    return "dimension " + std::to_string(dim) + " of shape " + Dims(shape) + " (" +
           std::to_string(shape[dim]) + ") is not divisible by " +
           (segments == 1
                ? "world " + std::to_string(world)
                : std::to_string(segments) + " segments x world " + std::to_string(world));
  }
  // Every layout: a rank's bytes (rows) or each of its blocks (shard-major) must end on a byte,
  // or two ranks would share one (a packed int4 [2] over 2 ranks: half a byte each).
  Blocks blocks;
  const std::string whole = BlocksOf(shape, dtype, dim, world, segments, bytes, &blocks);
  if (!whole.empty()) return whole;
  const uint64_t per_rank = bytes / static_cast<uint64_t>(world);
  if (per_rank % kPayloadAlignment != 0) {
    return "each rank's slice of shape " + Dims(ShardShape(shape, dim, world)) + " holds " +
           std::to_string(per_rank) + " bytes, not a multiple of " +
           std::to_string(kPayloadAlignment) +
           ", so the ranks' views would not all be 64-byte aligned (TVM kernels assume it)";
  }
  return "";
}

uint8_t ShardLayout(const std::vector<int64_t>& shape, int64_t dim, int64_t segments) {
  if (segments != 1) return kShardMajor;
  for (int64_t i = 0; i < dim && i < static_cast<int64_t>(shape.size()); ++i) {
    if (shape[i] != 1) return kShardMajor;
  }
  return kShardRows;
}

std::vector<int64_t> ShardShape(std::vector<int64_t> shape, int64_t dim, int64_t world) {
  shape[dim] /= world;
  return shape;
}

std::vector<int64_t> StoredShape(const std::vector<int64_t>& shape, const Shard* shard) {
  if (shard == nullptr || shard->layout != kShardMajor) return shape;
  std::vector<int64_t> out = ShardShape(shape, shard->dim, shard->world);
  out.insert(out.begin(), shard->world);
  return out;
}

namespace {

/*! \brief `copy(row-major offset, offset in the rank's shard, bytes)` for each block of rank
 *         `rank`: block (o, s, r) lies at ((o * S + s) * W + r) in row-major order and at
 *         (o * S + s) in the rank's shard. */
template <typename F>
void ForEachBlock(uint64_t nbytes, const std::vector<int64_t>& shape, DLDataType dtype,
                  const Shard& shard, int64_t rank, F copy) {
  Blocks b;
  const std::string problem =
      BlocksOf(shape, dtype, shard.dim, shard.world, shard.segments, nbytes, &b);
  if (!problem.empty()) TVM_FFI_THROW(InternalError) << "shard-major blocks: " << problem;
  if (b.block == 0) return;  // an empty tensor (its data may be null)
  const uint64_t r = static_cast<uint64_t>(rank);
  for (uint64_t o = 0; o < b.outer; ++o) {
    for (uint64_t s = 0; s < b.segments; ++s) {
      copy(((o * b.segments + s) * b.world + r) * b.block, (o * b.segments + s) * b.block, b.block);
    }
  }
}

}  // namespace

void GatherRank(const char* rows, char* out, uint64_t nbytes, const std::vector<int64_t>& shape,
                DLDataType dtype, const Shard& shard, int64_t rank) {
  ForEachBlock(nbytes, shape, dtype, shard, rank,
               [&](uint64_t at, uint64_t to, uint64_t n) { std::memcpy(out + to, rows + at, n); });
}

void ScatterRank(const char* in, char* rows, uint64_t nbytes, const std::vector<int64_t>& shape,
                 DLDataType dtype, const Shard& shard, int64_t rank) {
  ForEachBlock(nbytes, shape, dtype, shard, rank, [&](uint64_t at, uint64_t from, uint64_t n) {
    std::memcpy(rows + at, in + from, n);
  });
}

/*! \brief The tensor's data when it lives in host memory (readable directly), else null. */
const char* HostData(const DLTensor* t) {
  if (!detail::IsHostDevice(t->device)) return nullptr;
  return static_cast<const char*>(t->data) + t->byte_offset;
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

/*! \brief A tensor's bytes in host memory: the tensor's own for host tensors, else a copy. */
HostBytes::HostBytes(const ffi::Tensor& tensor, size_t nbytes)
    : data_(HostData(tensor.GetDLTensorPtr())) {
  if (data_ == nullptr) {
    copy_.resize(nbytes);
    CopyTensorToHost(tensor, copy_.data(), nbytes);
    data_ = copy_.data();
  }
}

void ForEachStoredPiece(const ffi::Tensor& tensor, size_t nbytes, const Shard* shard,
                        const std::function<void(const char*, size_t)>& visit) {
  const HostBytes host(tensor, nbytes);
  if (shard == nullptr || shard->layout != kShardMajor) {
    visit(host.data(), nbytes);
    return;
  }
  // Rank by rank through one rank's buffer: never a second copy of the whole tensor.
  const size_t per_rank = nbytes / static_cast<size_t>(shard->world);
  std::string buffer(per_rank, '\0');
  const std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
  for (int64_t r = 0; r < shard->world; ++r) {
    GatherRank(host.data(), buffer.data(), nbytes, shape, tensor.dtype(), *shard, r);
    visit(buffer.data(), per_rank);
  }
}

bool Parsed::Sharded() const {
  return std::any_of(functions.begin(), functions.end(),
                     [](const ParsedFunction& fn) { return !fn.shards.empty(); });
}

std::string Where(const ParsedFunction& fn, int64_t index) {
  return "function '" + std::string(fn.name) + "' position " + std::to_string(index);
}

}  // namespace format
}  // namespace tvm_partial
