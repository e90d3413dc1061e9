// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/shard.h
 * \brief The shard rules (shards=) that binding, writer, reader, loaders and verify share.
 */
#ifndef TVM_PARTIAL_FORMAT_SHARD_H_
#define TVM_PARTIAL_FORMAT_SHARD_H_

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/array.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tvm_partial {
namespace format {

// Either way rank r's bytes are the r-th of `world` equal ranges of the payload (docs/format.md).
constexpr uint8_t kShardRows = 0;   // one segment, every dim before `dim` 1: the tensor as bound
constexpr uint8_t kShardMajor = 1;  // any other split: [world, *shard shape], rank after rank
constexpr int64_t kMaxWorld = 1 << 16;
constexpr int64_t kMaxSegments = 1 << 16;  // blocks fused along `dim` (a QKV tensor: 3)

// A bound tensor split along `dim` over `world` ranks: rank r's view is its r-th slice, or with
// `segments` S > 1 (fused blocks such as Q, K, V) the r-th slice of each block, concatenated.
struct Shard {
  int64_t position;  // a tensor binding of the same function
  int64_t dim;
  int64_t world;
  int64_t segments = 1;
  uint8_t layout = kShardRows;        // ShardLayout(shape, dim, segments): decided, never chosen
  std::vector<uint64_t> hashes = {};  // per rank, of its byte range of the stored payload
};

// Why `shape`/`dtype` cannot be split along `dim` over `world` ranks in `segments` blocks, or "".
// Also each rank's bytes must be a multiple of 64 (aligned views) and each block whole bytes.
std::string ShardProblem(const std::vector<int64_t>& shape, DLDataType dtype, int64_t dim,
                         int64_t world, int64_t segments = 1);

// `shard` checked as (rank, world) with 0 <= rank < world; TypeError/ValueError name `who` (load).
std::pair<int64_t, int64_t> RankWorld(const char* who, const ::tvm::ffi::Array<int64_t>& shard);

// The layout a split implies (kShardRows or kShardMajor).
uint8_t ShardLayout(const std::vector<int64_t>& shape, int64_t dim, int64_t segments);

// `shape` with `shape[dim]` divided by `world` (ShardProblem checked first).
std::vector<int64_t> ShardShape(std::vector<int64_t> shape, int64_t dim, int64_t world);

// The payload's stored shape: `shape`, or [world, *shard shape] shard-major.
std::vector<int64_t> StoredShape(const std::vector<int64_t>& shape, const Shard* shard);

// Copy `rank`'s shard (nbytes / world bytes) of a shard-major split from row-major `rows` to `out`.
void GatherRank(const char* rows, char* out, uint64_t nbytes, const std::vector<int64_t>& shape,
                DLDataType dtype, const Shard& shard, int64_t rank);

// The inverse: `rank`'s shard at `in` put in its places of the row-major `rows`.
void ScatterRank(const char* in, char* rows, uint64_t nbytes, const std::vector<int64_t>& shape,
                 DLDataType dtype, const Shard& shard, int64_t rank);

}  // namespace format
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_SHARD_H_
