// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/appended_region.h
 * \brief Internal: the payload region appended to a zero-copy artifact's library (format flags
 *        1 | 4), the trailer that locates it, and writing a region into any file.
 *
 * Layout (docs/format.md): [library] [zeros to a multiple of 64 KiB] [region] [64-byte trailer].
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

/*! \brief The file offset of the region appended to `library`, checked: intact trailer recording
 *         `size` and `link`, aligned start, ends at the trailer, header matching the metadata.
 *         \throws ValueError naming the file ("is truncated or was rewritten", "is damaged"). */
uint64_t LocateAppended(const File& library, uint64_t size, uint64_t link);

/*! \brief Append the payload region of `Encode(functions, &region)`, then the trailer, to the
 *         library at `path`; `progress(done, total)` gets the region bytes written at least every
 *         64 MiB and at the end. \return The payload hashes in Encode's order, computed while
 *         writing. \throws RuntimeError naming the file and the system's error. */
std::vector<uint64_t> AppendRegion(const std::vector<format::FunctionRecord>& functions,
                                   const format::ExternalRegion& region, const std::string& path,
                                   const ffi::Optional<ffi::Function>& progress);

/*! \brief Write the payload region of `Encode(functions, &region)` to `path` (created or
 *         truncated) after `lead` zero bytes (room for a safetensors header or library code).
 *         \throws RuntimeError naming the file and the system's error. */
void WriteRegion(const std::vector<format::FunctionRecord>& functions,
                 const format::ExternalRegion& region, const std::string& path, uint64_t lead);

/*! \brief Copy `source` into `path` (created if missing, not truncated) at the same offsets,
 *         except the `hole_size` bytes at `hole` the caller fills (an update's new region).
 *         \throws ValueError if `source` shrank since opened; RuntimeError if a write fails. */
void CopyAround(const File& source, const std::string& path, uint64_t hole, uint64_t hole_size);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_APPENDED_REGION_H_
