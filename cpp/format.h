// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format.h
 * \brief Internal: the serialisation format of a partial module (`SaveToBytes`).
 *
 * Layout (versions 1 and 2, little-endian; flag 1: payloads in a region of the library file, see
 * kRegionHeaderSize, the metadata then starting with str symbol | u64 link | u64 region size;
 * flag 2, only with flag 1: that region, payloads included, is the data of a safetensors weights
 * file beside the library (the library's region keeps only its header), then str weights file,
 * a path relative to the library's folder; flag 4, only with flag 1 and not with flag 2: that
 * region, payloads included, is appended to the library file after the linked code, located by a
 * trailer at the file's end (kTrailerSize), and the library's region keeps only its header):
 *
 *   header   magic "TVMPARTL" | u32 version | u32 flags (0) | u64 total size | u64 metadata size
 *            | u64 metadata hash (over the header before it and the metadata)      = 40 bytes
 *   metadata u32 function count, then per function:
 *              str name | u32 parameter-name count | str names... | u32 binding count
 *              per binding: i64 position | u8 kind | value
 *                kind 0 None; 1 int: i64; 2 float: f64; 3 bool: u8; 4 str: str;
 *                kind 5 tensor: str dtype | i32 device type | i32 device id | u32 ndim
 *                               | i64 shape[ndim] | u64 byte length | u64 payload offset | u64 hash
 *              version 2 only (written when some function has outputs, else version 1):
 *              u32 output count, per output (in the order the call returns them):
 *                i64 position | str dtype | u32 ndim | per dimension: i64 source | i64 value
 *                  source -1: value is a static extent (>= 0); source >= 0: the extent of axis
 *                  `value` of the call's argument at position `source` (a free input)
 *   payloads each at an offset from the start that is a multiple of 64; padding bytes are zero.
 *
 *   str = u32 length + UTF-8 bytes. Every read is bounds-checked, every tensor payload hashed.
 */
#ifndef TVM_PARTIAL_FORMAT_H_
#define TVM_PARTIAL_FORMAT_H_

#include <tvm/ffi/container/map.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bindings.h"
#include "outputs.h"

namespace tvm_partial {
namespace format {

/*! \brief The newest version: written for blobs that carry outputs, and read. */
constexpr uint32_t kVersion = 2;
/*! \brief Blobs without outputs are written as version 1 (byte-identical to before version 2
 *         existed, so older readers read them); payload regions are always version 1. */
constexpr uint32_t kVersionNoOutputs = 1;
constexpr size_t kPayloadAlignment = 64;
/*! \brief A zero-copy payload region starts with "TVMPREGN" | u32 version | u32 0 | u64 size
 *         | u64 link, padded to 64 bytes; payloads follow as in a blob, offsets from its start. */
constexpr size_t kRegionHeaderSize = 64;
/*! \brief Flag 4: the appended region starts at a file offset that is a multiple of this (a
 *         multiple of every page size, so it is mapped by file offset as it lies). */
constexpr size_t kAppendAlignment = 64 * 1024;
/*! \brief Flag 4: the last bytes of the library file, "TVMPTRLR" | u32 version (1) | u32 0
 *         | u64 region offset | u64 region size | u64 link | u64 hash of the 40 bytes before it,
 *         padded with zeros to 64 bytes. The region ends where the trailer begins. */
constexpr size_t kTrailerSize = 64;
constexpr uint32_t kTrailerVersion = 1;
/*! \brief Region symbols start with this (then a random hex id per export). */
constexpr const char* kRegionSymbolPrefix = "__tvm_partial_payload_";

/*! \brief Where a zero-copy export puts the payloads: a symbol of the library, and a number
 *         that the region and the metadata both record so a mismatch is caught. */
struct ExternalRegion {
  std::string symbol;
  uint64_t link;
  /*! \brief Flag 2: non-empty when the payloads live in this safetensors file (a path relative
   *         to the library's folder) and the library's region holds only the region header. */
  std::string weights_file = {};
  /*! \brief Flag 4: the region is appended to the library file (AppendRegion) and the library's
   *         region holds only the region header. */
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
  Outputs outputs;  // version 2: allocated per call and returned (outputs.h)
};

/*!
 * \brief Serialise. Tensors are copied to host memory (through the TVM runtime for devices).
 * \throws TypeError naming the function and position of a value that cannot be serialised.
 */
std::string Encode(const std::vector<FunctionRecord>& functions,
                   const ExternalRegion* region = nullptr);

/*! \brief Write the payload region that `Encode(functions, &region)` refers to, after `lead`
 *         zero bytes (room for the header of the object file that will hold it). */
void WriteRegion(const std::vector<FunctionRecord>& functions, const ExternalRegion& region,
                 const std::string& path, size_t lead = 0);

/*! \brief The 64-byte header of the payload region that `Encode(functions, &region)` refers to
 *         (what a library whose region lies elsewhere keeps under the region's symbol). */
std::string RegionHeader(const std::vector<FunctionRecord>& functions,
                         const ExternalRegion& region);

/*!
 * \brief Append the payload region of `Encode(functions, &region)` to the library file at `path`
 *        (flag 4): zeros up to the next multiple of kAppendAlignment, the region in one sequential
 *        write, then the trailer. `progress`, when given, is called as progress(done, total) with
 *        the region bytes written so far, after each chunk of at most 64 MiB and at the end.
 * \return The payload hashes, in Encode's order, computed as each piece is written (one pass
 *         over the weights).
 */
std::vector<uint64_t> AppendRegion(const std::vector<FunctionRecord>& functions,
                                   const ExternalRegion& region, const std::string& path,
                                   const ffi::Optional<ffi::Function>& progress);

/*! \brief The trailer of a library whose region of `size` bytes was appended at `offset`. */
std::string EncodeTrailer(uint64_t offset, uint64_t size, uint64_t link);

/*! \brief Read the kTrailerSize bytes at `trailer`; false unless magic, version and hash hold. */
bool DecodeTrailer(const char* trailer, uint64_t* offset, uint64_t* size, uint64_t* link);

/*!
 * \brief Parse and rebuild every value; tensors go to 64-byte-aligned memory on the device
 *        they were bound on.
 * \throws ValueError saying what is wrong with malformed input; RuntimeError for a missing device.
 */
std::vector<FunctionRecord> Decode(const char* data, size_t size);

/*!
 * \brief Parse without materialising tensors, for inspection: {"version", "total_bytes",
 *        "constant_bytes", "payloads" ("inline" | "region SYMBOL"), ["region_link", "region_size"],
 *        "functions": [{"name", "param_names", "bindings": [{"index", "kind", "value" | "dtype",
 *        "shape", "device", "bytes", "offset", "hash"}]}]}. A tensor's "offset" counts from the
 *        blob's start (inline) or the region's; "hash" is the recorded payload hash (hash.h) as
 *        the int64 of its bits. Payload bytes are not read (`verify` checks them).
 */
ffi::Map<ffi::String, ffi::Any> Describe(const char* data, size_t size);

}  // namespace format
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_FORMAT_H_
