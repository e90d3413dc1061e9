// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/format.h
 * \brief Internal: the serialisation format of a partial module (`SaveToBytes`): writer
 *        (`Encode`), parser (`Parse`), description (`Describe`). The parser checks only the bytes
 *        it is given; where external payloads live is storage/payload_source.h's concern.
 *
 * Layout (version 3, little-endian): docs/format.md; placements: `Placement` below.
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
/*! \brief A payload region's header, before its payloads (layout: docs/format.md, flag 1). */
constexpr size_t kRegionHeaderSize = 64;
/*! \brief Region names: this, then a random hex id per export. Recorded in the metadata; messages
 *         and inspect name the region by it. */
constexpr const char* kRegionSymbolPrefix = "__tvm_partial_payload_";
/*! \brief Bound tensors of this many bytes (as stored) make an export append them to the library
 *         (zero-copy), unless export_library's zero_copy= says otherwise. */
constexpr uint64_t kZeroCopyBytes = uint64_t{16} << 20;

/*! \brief Where a zero-copy export puts the payloads: a named region, and a link number that
 *         region and metadata both record, so a mismatch is caught. */
struct ExternalRegion {
  std::string symbol;
  uint64_t link;
  /*! \brief Flag 2: the payloads' safetensors file, relative to the library's folder; or "". */
  std::string weights_file = {};
  /*! \brief Flag 4: the region is appended to the library file. Exclusive with `weights_file`. */
  bool appended = false;
  /*! \brief Payload hashes: Encode computes them unless `hashes_given`; then it records these
   *         (AppendRegion computes them while writing), or zeros while empty (the blob linked
   *         first, patched in place later at the same length). */
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

/*! \brief Serialise. Tensors are copied to host memory (through the TVM runtime for devices).
 * \throws TypeError naming the function and position of a value that cannot be serialised. */
std::string Encode(const std::vector<FunctionRecord>& functions,
                   const ExternalRegion* region = nullptr);

/*! \brief The 64-byte region header for a region of `size` bytes recording `link`. */
std::string EncodeRegionHeader(uint64_t size, uint64_t link);

/*! \brief Whether the 64 bytes at `header` are a region header recording `size` and `link`. */
bool RegionHeaderMatches(const char* header, uint64_t size, uint64_t link);

/*! \brief Per function, per binding (`bound` order): the number of the distinct tensor it holds (0,
 *         1, ... by first appearance), or -1 for a non-tensor. Bindings hold one tensor when they
 *         hold the same object, or tensors with equal data pointer, byte offset, device, dtype,
 *         shape and strides. Encode stores each distinct tensor once, in this order. */
std::vector<std::vector<int64_t>> TensorNumbers(const std::vector<FunctionRecord>& functions);

/*! \brief The distinct bound tensors of `functions` in the order Encode lays out their payloads
 *         (one per TensorNumbers number). */
std::vector<ffi::Tensor> PayloadTensors(const std::vector<FunctionRecord>& functions);

/*! \brief Per payload (PayloadTensors' order), the shard record storing it shard-major, or null;
 *         the writers pass it to ForEachStoredPiece so every placement stores the same bytes. */
std::vector<const Shard*> PayloadShards(const std::vector<FunctionRecord>& functions);

/*! \brief A contiguous tensor's payload bytes, ceil(elements * bits * lanes / 8), exact
 *         (detail::TensorBytes).
 * \throws ValueError when that is 2^63 bytes or more. */
uint64_t PayloadBytes(const DLTensor& tensor);

/*! \brief The size of a region holding `tensors` (header, payloads at multiples of 64). */
uint64_t RegionSize(const std::vector<ffi::Tensor>& tensors);

// ------------------------------------------------------------------------------------------
// Parsing: every field checked; no tensor built, no file opened.

/*! \brief Where a parsed blob's payloads are (flags). */
enum class Placement {
  kInline,       // flags 0: after the metadata, inside the blob
  kAppended,     // flags 1 | 4: appended to the library file (storage/appended_region.h)
  kWeightsFile,  // flags 1 | 2: a safetensors file beside the library (storage/weights_file.h)
};

/*! \brief A tensor binding as recorded (no payload read). A shared tensor (kind 6) has the
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
  bool Sharded() const;
};

/*! \brief Parse `size` bytes at `data`: header, metadata hash, every field, the payloads' layout
 *         (offsets, alignment, zero padding, nothing left over). Payloads are not hashed here (the
 *         loader hashes each as it copies it, verify as it reads it).
 * \throws ValueError saying what is wrong ("corrupted partial_apply data: ..."). */
Parsed Parse(const char* data, size_t size);

/*! \brief The structure as data, for inspection: {"version", "total_bytes", "constant_bytes" (each
 *         payload once), "payloads" ("inline" | "region SYMBOL"), ["weights_file"],
 *         ["region_appended"], ["region_symbol", "region_link", "region_size"], "functions":
 *         [{"name", "param_names", "bindings", "outputs"}]}. A binding: {"position", "kind",
 *         "value"}, or for a tensor {"position", "kind": "tensor", "dtype", "shape", "device",
 *         "bytes", "offset" (from the blob's start, or the region's), "hash" (the int64 of its
 *         bits), "payload" (its number), ["shard"], ["shared_with": {"function", "position"}] (kind
 *         6: the binding that stores its payload)}. */
ffi::Map<ffi::String, ffi::Any> Describe(const Parsed& parsed);

/*! \brief "function 'main' position 1", how messages name a binding. */
std::string Where(const ParsedFunction& fn, int64_t index);

}  // namespace format
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_FORMAT_H_
