// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format/format.h
 * \brief Internal: the serialisation format (docs/format.md): Encode, Parse, Describe; where
 *        external payloads live is storage/payload_source.h's concern.
 */
#ifndef TVM_PARTIAL_FORMAT_FORMAT_H_
#define TVM_PARTIAL_FORMAT_FORMAT_H_

#include <tvm/ffi/container/map.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bind/bindings.h"
#include "bind/outputs.h"
#include "format/shard.h"

namespace tvm_partial {
namespace format {

constexpr uint32_t kVersion = 3;        // always written, the only one read
constexpr uint32_t kRegionVersion = 1;  // a payload region's header has its own
constexpr size_t kPayloadAlignment = 64;
constexpr size_t kRegionHeaderSize = 64;
/*! \brief Region names: this, then a random hex id per export (messages and inspect use it). */
constexpr const char* kRegionSymbolPrefix = "__tvm_partial_payload_";
/*! \brief Bound tensors this large (as stored) make export_library zero-copy by default. */
constexpr uint64_t kZeroCopyBytes = uint64_t{16} << 20;

// A zero-copy export's payload region: its name, and a link number it and the metadata both record.
struct ExternalRegion {
  std::string symbol;
  uint64_t link;
  std::string weights_file = {};  // flag 2: a safetensors file, relative to the library's folder
  bool appended = false;          // flag 4: appended to the library file (exclusive with flag 2)
  // Payload hashes: Encode computes them unless `hashes_given` (AppendRegion computes them while
  // writing), or zeros while empty (the blob linked first, patched in place at the same length).
  bool hashes_given = false;
  std::vector<uint64_t> hashes = {};
};

struct FunctionRecord {
  ffi::String name;
  ffi::Array<ffi::String> param_names;  // empty when unknown
  detail::BoundList bound;
  Outputs outputs;                 // allocated per call and returned (outputs.h)
  std::vector<Shard> shards = {};  // tensor-parallel bindings, by position
};

// Serialise (device tensors copied via the TVM runtime); TypeError names an unsavable binding.
std::string Encode(const std::vector<FunctionRecord>& functions,
                   const ExternalRegion* region = nullptr);

/*! \brief The 64-byte region header for a region of `size` bytes recording `link`. */
std::string EncodeRegionHeader(uint64_t size, uint64_t link);

/*! \brief Whether the 64 bytes at `header` are a region header recording `size` and `link`. */
bool RegionHeaderMatches(const char* header, uint64_t size, uint64_t link);

// Per function, per binding: its tensor's number (0, 1, ... by first appearance; -1: none), each
// stored once; one tensor: the same object, or equal data, offset, device, dtype, shape, strides.
std::vector<std::vector<int64_t>> TensorNumbers(const std::vector<FunctionRecord>& functions);

/*! \brief The distinct bound tensors, one per TensorNumbers number (Encode's payload order). */
std::vector<ffi::Tensor> PayloadTensors(const std::vector<FunctionRecord>& functions);

/*! \brief Per payload (PayloadTensors' order), the shard record storing it shard-major, or null;
 *         the writers pass it to ForEachStoredPiece so every placement stores the same bytes. */
std::vector<const Shard*> PayloadShards(const std::vector<FunctionRecord>& functions);

// A contiguous tensor's ceil(elements * bits * lanes / 8) bytes; ValueError from 2^63 up.
uint64_t PayloadBytes(const DLTensor& tensor);

/*! \brief The size of a region holding `tensors` (header, payloads at multiples of 64). */
uint64_t RegionSize(const std::vector<ffi::Tensor>& tensors);

// Parsing: every field checked; no tensor built, no file opened.

/*! \brief Where a parsed blob's payloads are (flags). */
enum class Placement {
  kInline,       // flags 0: after the metadata, inside the blob
  kAppended,     // flags 1 | 4: appended to the library file (storage/appended_region.h)
  kWeightsFile,  // flags 1 | 2: a safetensors file beside the library (storage/weights_file.h)
};

/*! \brief A tensor binding as recorded; a shared one (kind 6) has its owner's. */
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
  /*! \brief Per payload, the kind-5 binding that stores it: function, then value index. */
  std::vector<std::pair<size_t, size_t>> payloads;
  bool external() const { return placement != Placement::kInline; }
  const ParsedValue& Owner(size_t k) const {
    return functions[payloads[k].first].values[payloads[k].second];
  }
  const ParsedFunction& OwnerFunction(size_t k) const { return functions[payloads[k].first]; }
  bool Sharded() const {
    return std::any_of(functions.begin(), functions.end(),
                       [](const ParsedFunction& fn) { return !fn.shards.empty(); });
  }
};

// Checks header, metadata hash, every field, payload layout (offsets, alignment, zero padding,
// nothing left over), not payload hashes; ValueError "corrupted partial_apply data: ...".
Parsed Parse(const char* data, size_t size);

// For inspection: version, sizes ("constant_bytes" counts a payload once), placement, per function
// its bindings (tensor metadata, payload number, shard, kind 6's "shared_with") and outputs.
ffi::Map<ffi::String, ffi::Any> Describe(const Parsed& parsed);

/*! \brief "function 'main' position 1", how messages name a binding. */
inline std::string Where(const ParsedFunction& fn, int64_t index) {
  return "function '" + std::string(fn.name) + "' position " + std::to_string(index);
}

}  // namespace format
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_FORMAT_H_
