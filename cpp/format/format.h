// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/format.h
 * \brief Internal: the serialisation format of a partial module (`SaveToBytes`): its writer
 *        (`Encode`), its parser (`Parse`) and its description (`Describe`). The parser checks the
 *        bytes it is given and nothing else: where the payloads of external placements live is
 *        decided by storage/payload_source.h, which sits on top of it.
 *
 * Layout (version 3, the only one; little-endian). Flags: 0, the payloads follow the metadata
 * inside the blob; 1 | 4, they are appended to the library file after the linked code, located by
 * a trailer at the file's end (storage/appended_region.h); 1 | 2, they are the data of a
 * safetensors weights file beside the library (storage/weights_file.h), whose first 64 bytes are
 * that header. Other flags are refused. With flag 1 the metadata starts with str symbol | u64 link
 * | u64 region size, then (flag 2) str weights file, a path relative to the library's folder.
 *
 *   header   magic "TVMPARTL" | u32 version | u32 flags | u64 total size | u64 metadata size
 *            | u64 metadata hash (over the header before it and the metadata)      = 40 bytes
 *   metadata u32 function count, then per function:
 *              str name | u32 parameter-name count | str names... | u32 binding count
 *              per binding: i64 position | u8 kind | value
 *                kind 0 None; 1 int: i64; 2 float: f64; 3 bool: u8; 4 str: str;
 *                kind 5 tensor: str dtype | i32 device type | i32 device id | u32 ndim
 *                               | i64 shape[ndim] | u64 byte length | u64 payload offset | u64 hash
 *                kind 6 shared tensor: u64 payload, the number of an earlier kind-5 binding
 *                               (0 for the first in the blob): the very tensor bound there, its
 *                               payload stored once
 *              u32 output count (may be 0), per output (in the order the call returns them):
 *                i64 position | str dtype | u32 ndim | per dimension: i64 source | i64 value
 *                  source -1: value is a static extent (>= 0); source >= 0: the extent of axis
 *                  `value` of the call's argument at position `source` (a free input)
 *              u32 shard count (may be 0), per shard (positions increasing, each a kind-5
 *              tensor binding of this function):
 *                i64 position | u32 dim | u32 world | u8 layout (0 rows, 1 shard-major)
 *                | layout 1 only: u32 segments | u64 hash[world] (of each rank's byte range
 *                  of the payload, so a rank can verify its own range alone)
 *   payloads one per kind-5 binding, in their order, each at an offset from the start that is a
 *            multiple of 64; byte length ceil(elements * bits * lanes / 8) (sub-byte dtypes
 *            packed as TVM packs them); padding bytes are zero.
 *
 *   str = u32 length + UTF-8 bytes. Every read is bounds-checked, every tensor payload hashed.
 */
#ifndef TVM_PARTIAL_FORMAT_FORMAT_H_
#define TVM_PARTIAL_FORMAT_FORMAT_H_

#include <tvm/ffi/container/map.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bind/bindings.h"
#include "bind/outputs.h"
#include "format/shard.h"

namespace tvm_partial {
namespace format {

/*! \brief The one version of the layout: always written, the only one read. */
constexpr uint32_t kVersion = 3;
/*! \brief The version of a payload region's header (a header of its own). */
constexpr uint32_t kRegionVersion = 1;
constexpr size_t kPayloadAlignment = 64;
/*! \brief A payload region starts with "TVMPREGN" | u32 version | u32 0 | u64 size | u64 link,
 *         padded to 64 bytes; payloads follow as in a blob, offsets from its start. */
constexpr size_t kRegionHeaderSize = 64;
/*! \brief Region names start with this (then a random hex id per export). The name is recorded
 *         in the metadata, where messages and inspect name the region by it; artifacts exported
 *         before 0.1.0 also defined a symbol of that name in the library, holding a copy of the
 *         region header, which nothing reads any more. */
constexpr const char* kRegionSymbolPrefix = "__tvm_partial_payload_";
/*! \brief An export whose bound tensors reach this many bytes (as stored) appends them to the
 *         library (zero-copy) unless told otherwise (export_library's zero_copy=). */
constexpr uint64_t kZeroCopyBytes = uint64_t{16} << 20;

/*! \brief Where a zero-copy export puts the payloads: a region with a name, and a number that
 *         the region and the metadata both record so a mismatch is caught. */
struct ExternalRegion {
  std::string symbol;
  uint64_t link;
  /*! \brief Flag 2: non-empty when the payloads live in this safetensors file (a path relative
   *         to the library's folder). */
  std::string weights_file = {};
  /*! \brief Flag 4: the region is appended to the library file. Exports write either this or
   *         `weights_file`. */
  bool appended = false;
  /*! \brief The payload hashes Encode records: computed by Encode when `hashes_given` is false;
   *         else these (AppendRegion computes them while writing), or zeros while empty (the
   *         blob that is linked first, then patched in place with the same length). */
  bool hashes_given = false;
  std::vector<uint64_t> hashes = {};
};

/*! \brief What one function of a partial module records. */
struct FunctionRecord {
  ffi::String name;
  ffi::Array<ffi::String> param_names;  // empty when unknown
  detail::BoundList bound;
  Outputs outputs;                 // allocated per call and returned (outputs.h)
  std::vector<Shard> shards = {};  // tensor-parallel bindings, by position
};

/*!
 * \brief Serialise. Tensors are copied to host memory (through the TVM runtime for devices).
 * \throws TypeError naming the function and position of a value that cannot be serialised.
 */
std::string Encode(const std::vector<FunctionRecord>& functions,
                   const ExternalRegion* region = nullptr);

/*! \brief The 64-byte region header for a region of `size` bytes recording `link`. */
std::string EncodeRegionHeader(uint64_t size, uint64_t link);

/*! \brief Whether the 64 bytes at `header` are a region header recording `size` and `link`. */
bool RegionHeaderMatches(const char* header, uint64_t size, uint64_t link);

/*!
 * \brief Which bound values are one tensor: per function, per binding (in `bound` order), the
 *        number of the distinct tensor it holds (0, 1, ... in the order they first appear), or -1
 *        for a value that is not a tensor. Two bindings hold one tensor when they hold the same
 *        tensor object, or tensors with the same data pointer, byte offset, device, dtype, shape
 *        and strides (views of one buffer that differ in any of these are distinct tensors).
 *        Encode stores each distinct tensor once, in this order.
 */
std::vector<std::vector<int64_t>> TensorNumbers(const std::vector<FunctionRecord>& functions);

/*! \brief The distinct bound tensors of `functions` in the order Encode lays out their payloads
 *         (one per TensorNumbers number). */
std::vector<ffi::Tensor> PayloadTensors(const std::vector<FunctionRecord>& functions);

/*! \brief Per payload (PayloadTensors' order), the shard record that stores it shard-major, or
 *         null: what the writers give ForEachStoredPiece so every placement stores the same
 *         bytes. */
std::vector<const Shard*> PayloadShards(const std::vector<FunctionRecord>& functions);

/*! \brief The bytes of a contiguous tensor's payload: ceil(elements * bits * lanes / 8), exact in
 *         64-bit arithmetic (tvm-ffi's GetDataSize counts bits, which wraps past 2^61 bytes).
 * \throws ValueError when that is 2^63 bytes or more. */
uint64_t PayloadBytes(const DLTensor& tensor);

/*! \brief The size of a region holding `tensors` (header, payloads at multiples of 64). */
uint64_t RegionSize(const std::vector<ffi::Tensor>& tensors);

// ------------------------------------------------------------------------------------------
// Parsing: the bytes as they are, every field checked; no tensor is built, no file opened.

/*! \brief Where the payloads of a parsed blob are (flags). */
enum class Placement {
  kInline,       // flags 0: after the metadata, inside the blob
  kAppended,     // flags 1 | 4: appended to the library file
  kWeightsFile,  // flags 1 | 2: the data of a safetensors file beside the library
};

/*! \brief A tensor binding as recorded: no payload read. A shared tensor (kind 6) has the
 *         metadata of the binding whose payload it shares. */
struct TensorMeta {
  DLDataType dtype;
  int32_t device_type;
  int32_t device_id;
  std::vector<int64_t> shape;
  uint64_t nbytes;
  uint64_t offset;  // from the blob's start (inline) or the region's
  uint64_t hash;
};

struct ParsedValue {
  int64_t index;
  uint8_t kind;          // ValueKind (common.h)
  ffi::Any scalar;       // kinds 0-4
  TensorMeta tensor;     // kinds 5 and 6
  uint64_t payload = 0;  // kinds 5 and 6: the number of the payload (Parsed::payloads)
};

struct ParsedFunction {
  ffi::String name;
  ffi::Array<ffi::String> param_names;
  std::vector<ParsedValue> values;
  Outputs outputs;
  std::vector<Shard> shards;
};

struct Parsed {
  uint32_t version = 0;
  uint64_t total = 0;
  Placement placement = Placement::kInline;
  std::string symbol;        // external: the region's name (kRegionSymbolPrefix ...)
  uint64_t link = 0;         // external: the number the region header must repeat
  uint64_t region_size = 0;  // external: the region's size, header included
  std::string weights_file;  // kWeightsFile: relative to the library's folder (or absolute)
  std::vector<ParsedFunction> functions;
  /*! \brief Per payload, the binding that stores it (kind 5): function, then value index. */
  std::vector<std::pair<size_t, size_t>> payloads;
  bool external() const { return placement != Placement::kInline; }
  /*! \brief The kind-5 binding that stores payload `k`. */
  const ParsedValue& Owner(size_t k) const {
    return functions[payloads[k].first].values[payloads[k].second];
  }
  const ParsedFunction& OwnerFunction(size_t k) const { return functions[payloads[k].first]; }
  /*! \brief Whether some function records shards. */
  bool Sharded() const;
};

/*!
 * \brief Parse `size` bytes at `data`: header, metadata hash, every field, the layout of the
 *        payloads (offsets, alignment, zero padding, nothing left over). Inline payloads are not
 *        hashed here (the loader hashes each as it copies it, verify as it reads it).
 * \throws ValueError saying what is wrong ("corrupted partial_apply data: ...").
 */
Parsed Parse(const char* data, size_t size);

/*!
 * \brief The structure as data, for inspection: {"version", "total_bytes", "constant_bytes",
 *        "payloads" ("inline" | "region SYMBOL"), ["weights_file"], ["region_appended"],
 *        ["region_symbol", "region_link", "region_size"], "functions": [{"name", "param_names",
 * "bindings":
 *        [{"index", "kind", "value" | "dtype", "shape", "device", "bytes", "offset", "hash",
 *        "payload", ["shared_with"]}], "outputs"}]}. A tensor's "offset" counts from the blob's
 *        start (inline) or the region's; "hash" is the recorded payload hash as the int64 of its
 *        bits; "payload" numbers its payload; a shared tensor (kind 6) has "kind" "tensor" and
 *        "shared_with": {"function", "position"}, the binding that stores its payload.
 *        "constant_bytes" counts each payload once.
 */
ffi::Map<ffi::String, ffi::Any> Describe(const Parsed& parsed);

/*! \brief "function 'main' position 1", how messages name a binding. */
std::string Where(const ParsedFunction& fn, int64_t index);

}  // namespace format
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_FORMAT_H_
