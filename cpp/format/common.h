// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/common.h
 * \brief Internal: constants and checks shared by writer and reader, so both accept the same.
 */
#ifndef TVM_PARTIAL_FORMAT_COMMON_H_
#define TVM_PARTIAL_FORMAT_COMMON_H_

#include <tvm/ffi/container/tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/format.h"

// The format is little-endian and written with plain memcpy of integers.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tvm-partial's format needs a little-endian host");

namespace tvm_partial {
namespace format {

constexpr char kMagic[8] = {'T', 'V', 'M', 'P', 'A', 'R', 'T', 'L'};
constexpr char kRegionMagic[8] = {'T', 'V', 'M', 'P', 'R', 'E', 'G', 'N'};
constexpr uint32_t kFlagExternalPayloads = 1;  // payloads live in a region of the library file
constexpr uint32_t kFlagWeightsFile = 2;       // ... of a safetensors file beside it (with flag 1)
constexpr uint32_t kFlagAppended = 4;  // ... appended to the library file (with flag 1, not 2)
constexpr size_t kHeaderSize = 40;     // magic, version, flags, total, metadata size, hash
constexpr size_t kHashedHeader = 32;   // the header bytes covered by the metadata hash
constexpr uint32_t kMaxNdim = 64;      // the most dimensions a record may give a tensor

// A binding's kind byte as written (docs/format.md).
enum ValueKind : uint8_t { kNone, kInt, kFloat, kBool, kStr, kTensor, kSharedTensor };

// Over the header's first kHashedHeader bytes and the metadata.
uint64_t MetadataHash(const char* blob, size_t meta_size);

inline size_t AlignUp(size_t n) {
  return (n + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment;
}

// RFC 3629: no overlong forms or surrogates, at most U+10FFFF.
bool IsValidUtf8(const char* data, size_t size);

/*! \brief Why the format cannot hold a tensor of this dtype on this device, or "". */
std::string TensorProblem(DLDataType dtype, int32_t device_type, int32_t device_id);

// ceil(prod(shape) * bits * lanes / 8) into `bytes`, or why not: a negative dimension, or an
// element count or byte size past int64 (even with another dimension 0: no real tensor has one).
std::string ShapeProblem(const int64_t* shape, size_t ndim, DLDataType dtype, uint64_t* bytes);

// `[8, 16]`, as Python prints a list.
std::string Dims(const std::vector<int64_t>& shape);

// Any device: through the TVM runtime.
void CopyTensorToHost(const ffi::Tensor& tensor, char* dst, size_t nbytes);

// `visit(data, n)` over a payload as stored: its host bytes (copied off a device) in one piece, or
// for a shard-major `shard` one rank at a time through a one-rank buffer (no second whole copy).
void ForEachStoredPiece(const ffi::Tensor& tensor, size_t nbytes, const Shard* shard,
                        const std::function<void(const char*, size_t)>& visit);

/*! \brief The format's hash of a tensor's payload as stored (ForEachStoredPiece). */
uint64_t StoredHash(const ffi::Tensor& tensor, size_t nbytes, const Shard* shard);

}  // namespace format
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_COMMON_H_
