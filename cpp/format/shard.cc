// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/shard.cc
 * \brief The shard rules (format/shard.h).
 */
#include "format/shard.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/string.h>

#include <cstring>
#include <string>
#include <vector>

#include "format/common.h"
#include "format/format.h"

namespace tvm_partial {
namespace format {

namespace {
// A shard-major split is (dims before `dim`) x `segments` x `world` blocks, row-major. Sets
// `*block` to a block's bytes (0: empty) of checked `shape` (`bytes` in all), or says why not.
std::string BlockBytes(const std::vector<int64_t>& shape, DLDataType dtype, int64_t dim,
                       int64_t world, int64_t segments, uint64_t bytes, uint64_t* block) {
  uint64_t count = static_cast<uint64_t>(segments) * static_cast<uint64_t>(world);
  for (int64_t i = 0; i < dim; ++i) count *= static_cast<uint64_t>(shape[i]);
  *block = 0;
  if (count == 0) return "";  // an empty tensor: nothing to reorder
  // In bits: a block of a sub-byte dtype may not end on a byte.
  unsigned __int128 bits = 1;
  for (int64_t d : shape) bits *= static_cast<uint64_t>(d);
  bits *= static_cast<unsigned>(dtype.bits) * static_cast<unsigned>(dtype.lanes);
  if (bits % (static_cast<unsigned __int128>(count) * 8) != 0 || bytes % count != 0) {
    return "a rank's block of dimension " + std::to_string(dim) + " of shape " + Dims(shape) +
           " is not a whole number of bytes (" + std::string(ffi::DLDataTypeToString(dtype)) +
           " packs several elements per byte), so the ranks' bytes cannot be kept apart";
  }
  *block = bytes / count;
  return "";
}

// `copy(row-major offset, offset in the rank's shard, bytes)` for each block of `rank`: its k-th
// block (k = o * segments + s) lies at (k * world + rank) in row-major order, at k in the shard.
template <typename F>
void ForEachBlock(uint64_t nbytes, const std::vector<int64_t>& shape, DLDataType dtype,
                  const Shard& shard, int64_t rank, F copy) {
  uint64_t block = 0;
  const std::string problem =
      BlockBytes(shape, dtype, shard.dim, shard.world, shard.segments, nbytes, &block);
  if (!problem.empty()) TVM_FFI_THROW(InternalError) << "shard-major blocks: " << problem;
  if (block == 0) return;  // an empty tensor (its data may be null)
  const uint64_t world = static_cast<uint64_t>(shard.world);
  for (uint64_t k = 0; k < nbytes / block / world; ++k) {
    copy((k * world + static_cast<uint64_t>(rank)) * block, k * block, block);
  }
}

}  // namespace

std::pair<int64_t, int64_t> RankWorld(const char* who, const ffi::Array<int64_t>& shard) {
  if (shard.size() != 2) {
    TVM_FFI_THROW(TypeError) << who << ": shard= must be (rank, world), two ints";
  }
  const int64_t rank = shard[0], world = shard[1];
  if (world < 1 || rank < 0 || rank >= world) {
    TVM_FFI_THROW(ValueError) << who << ": shard=(" << rank << ", " << world << "): "
                              << (world < 1 ? "the world must be at least 1 (the number of ranks)"
                                            : "the rank must be 0 to " + std::to_string(world - 1));
  }
  return {rank, world};
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
  // Any layout: a rank's blocks must end on a byte, or two ranks share one (int4 [2] over 2 ranks).
  uint64_t block = 0;
  const std::string whole = BlockBytes(shape, dtype, dim, world, segments, bytes, &block);
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

}  // namespace format
}  // namespace tvm_partial
