// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/shard.h
 * \brief The home of the shard rules: which splits of a tensor bound with shards= are allowed,
 *        the layout its payload is stored in, one rank's shape and bytes, and which rank a
 *        (rank, world) names. Binding, the format's writer and reader, the loaders and verify
 *        ask here.
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

/*! \brief The layouts a shard record names. 0, rows: `dim` 0 (or its leading dims all 1) and
 *         one segment, so each rank's bytes are already a contiguous range of the row-major
 *         payload, in rank order. */
constexpr uint8_t kShardRows = 0;
/*! \brief 1, shard-major: any other split (a column shard, a fused segment split); the payload
 *         stores the tensor as [world, *shard shape], rank after rank, each rank's shard in
 *         row-major order, so a rank's bytes are again the r-th of `world` equal ranges. The
 *         record adds `segments`. */
constexpr uint8_t kShardMajor = 1;
/*! \brief The largest world a shard record may name. */
constexpr int64_t kMaxWorld = 1 << 16;
/*! \brief The most segments a shard may split `dim` into (fused QKV-style tensors: 3). */
constexpr int64_t kMaxSegments = 1 << 16;

/*! \brief A bound tensor split over `world` ranks along `dim` (shards={...}, world=): the
 *         whole tensor is bound; rank r's view is its r-th slice along `dim`, or with `segments`
 *         S > 1 (dim holding S fused blocks, such as Q, K and V), the r-th slice of each block,
 *         concatenated along `dim`. */
struct Shard {
  int64_t position;  // a tensor binding of the same function
  int64_t dim;
  int64_t world;
  int64_t segments = 1;
  uint8_t layout = kShardRows;  // ShardLayout(shape, dim, segments): decided, never chosen
  /*! \brief Per rank, the format's hash of its byte range of the payload (as stored: for
   *         shard-major, the rank's shard; written by Encode, checked by verify). */
  std::vector<uint64_t> hashes = {};
};

/*! \brief Why a tensor of `shape` and `dtype` cannot be split along `dim` over `world` ranks in
 *         `segments` blocks, or "" when it can: `dim` within its dims, `world` 2 to kMaxWorld,
 *         `segments` 1 to kMaxSegments, shape[dim] divisible by segments * world, each rank's
 *         bytes a multiple of 64 (every rank's view stays 64-byte aligned) and each rank's block
 *         (a row shard: its whole range) a whole number of bytes. The binding, the writer's
 *         caller and the reader share it. */
std::string ShardProblem(const std::vector<int64_t>& shape, DLDataType dtype, int64_t dim,
                         int64_t world, int64_t segments = 1);

/*! \brief Why (`rank`, `world`) names no rank to load or verify, or "" when 0 <= rank < world
 *         (the loaders, verify and Python's shard= share it). */
std::string RankProblem(int64_t rank, int64_t world);

/*! \brief `shard` = (rank, world) as a user gave it to `who` (load, verify): the pair, or a
 *         ValueError in their words ("load: shard=(2, 2): the rank must be 0 to 1"). */
std::pair<int64_t, int64_t> RankWorld(const char* who, const ::tvm::ffi::Array<int64_t>& shard);

/*! \brief The layout a split stores: rows when one segment and the dims before `dim` are all 1,
 *         else shard-major. */
uint8_t ShardLayout(const std::vector<int64_t>& shape, int64_t dim, int64_t segments);

/*! \brief `shape` with `shape[dim]` divided by `world` (checked by ShardProblem first). */
std::vector<int64_t> ShardShape(std::vector<int64_t> shape, int64_t dim, int64_t world);

/*! \brief The shape of the payload as stored: `shape`, or [world, *shard shape] shard-major (a
 *         weights file's entry says this shape, so other tools read the bytes as they are). */
std::vector<int64_t> StoredShape(const std::vector<int64_t>& shape, const Shard* shard);

/*! \brief For a tensor of `shape` and `dtype` (`nbytes` bytes) split by a shard-major `shard`:
 *         copy rank `rank`'s shard (nbytes / world bytes, row-major) out of the row-major bytes
 *         `rows` into `out`. */
void GatherRank(const char* rows, char* out, uint64_t nbytes, const std::vector<int64_t>& shape,
                DLDataType dtype, const Shard& shard, int64_t rank);

/*! \brief The inverse: rank `rank`'s shard at `in` put in its places of the row-major `rows`. */
void ScatterRank(const char* in, char* rows, uint64_t nbytes, const std::vector<int64_t>& shape,
                 DLDataType dtype, const Shard& shard, int64_t rank);

}  // namespace format
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_SHARD_H_
