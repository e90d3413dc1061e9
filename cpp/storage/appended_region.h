// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/appended_region.h
 * \brief Internal: the region appended to a zero-copy artifact (flags 1 | 4), its trailer
 *        (layout: docs/format.md), and writing a region into any file.
 */
#ifndef TVM_PARTIAL_STORAGE_APPENDED_REGION_H_
#define TVM_PARTIAL_STORAGE_APPENDED_REGION_H_

#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>

#include <cstdint>
#include <string>
#include <vector>

#include "format/format.h"
#include "storage/file.h"

namespace tvm_partial {
namespace storage {

// The checked file offset of `library`'s appended region: intact trailer recording `size` and
// `link`, aligned start, ends at the trailer, header matching the metadata; else ValueError.
uint64_t LocateAppended(const File& library, uint64_t size, uint64_t link);

// Append `Encode(functions, &region)`'s payload region, then the trailer, to the library at
// `path`, calling `progress(done, total)` at least every 64 MiB and at the end. Returns the payload
// hashes (Encode's order), computed while writing; RuntimeError naming the file.
std::vector<uint64_t> AppendRegion(const std::vector<format::FunctionRecord>& functions,
                                   const format::ExternalRegion& region, const std::string& path,
                                   const ffi::Optional<ffi::Function>& progress);

// Write `Encode(functions, &region)`'s payload region to `path` (created or truncated) after
// `lead` zero bytes (room for a safetensors header or library code); RuntimeError on failure.
void WriteRegion(const std::vector<format::FunctionRecord>& functions,
                 const format::ExternalRegion& region, const std::string& path, uint64_t lead);

// Copy `source` into `path` (created, not truncated) at the same offsets but for the caller's
// `hole_size` bytes at `hole` (the new region); ValueError if `source` shrank, RuntimeError.
void CopyAround(const File& source, const std::string& path, uint64_t hole, uint64_t hole_size);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_APPENDED_REGION_H_
