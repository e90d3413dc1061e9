// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/appended_region.h
 * \brief Internal: the payload region of a zero-copy artifact (format flags 1 | 4), appended to
 *        the library file after the linked code, and the trailer at the file's end that locates
 *        it; and the writer of a region into any file (a weights file's data, an updated copy).
 *
 *   file     [linked library] [zeros to a multiple of kAppendAlignment] [region] [trailer]
 *   region   the 64-byte region header (format.h), then each payload at a multiple of 64
 *   trailer  "TVMPTRLR" | u32 version (1) | u32 0 | u64 region offset | u64 region size
 *            | u64 link | u64 hash of the 40 bytes before it, padded with zeros to 64 bytes
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

/*! \brief The appended region starts at a file offset that is a multiple of this (a multiple of
 *         every page size, so it is mapped by file offset as it lies). */
constexpr uint64_t kAppendAlignment = 64 * 1024;
constexpr size_t kTrailerSize = 64;
constexpr uint32_t kTrailerVersion = 1;

/*! \brief The trailer of a library whose region of `size` bytes was appended at `offset`. */
std::string EncodeTrailer(uint64_t offset, uint64_t size, uint64_t link);

/*! \brief A trailer as read: whether magic, version and hash hold, and what it records. */
struct Trailer {
  bool intact = false;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t link = 0;
};
Trailer DecodeTrailer(const char* trailer);

/*!
 * \brief Where the region appended to `library` lies (its file offset), checked against the
 *        metadata: the trailer is intact, records the metadata's size and link, the region starts
 *        at a multiple of kAppendAlignment and ends where the trailer begins, and its header is
 *        the one the metadata describes.
 * \throws ValueError naming the file and what does not hold ("is truncated or was rewritten",
 *         "is damaged: ...").
 */
uint64_t LocateAppended(const File& library, uint64_t size, uint64_t link);

/*!
 * \brief Append the payload region of `Encode(functions, &region)` to the library file at `path`
 *        (flag 4): zeros up to the next multiple of kAppendAlignment, the region in one sequential
 *        write, then the trailer. `progress`, when given, is called as progress(done, total) with
 *        the region bytes written so far, after each chunk of at most 64 MiB and at the end.
 * \return The payload hashes, in Encode's order, computed as each piece is written (one pass
 *         over the weights).
 * \throws RuntimeError naming the file and the system's error (a full disk, a file too large).
 */
std::vector<uint64_t> AppendRegion(const std::vector<format::FunctionRecord>& functions,
                                   const format::ExternalRegion& region, const std::string& path,
                                   const ffi::Optional<ffi::Function>& progress);

/*!
 * \brief Write the payload region of `Encode(functions, &region)` into the file at `path`
 *        (created or truncated) after `lead` zero bytes (room for what comes before it: a
 *        safetensors header, or the code of a library copied around it).
 * \throws RuntimeError naming the file and the system's error.
 */
void WriteRegion(const std::vector<format::FunctionRecord>& functions,
                 const format::ExternalRegion& region, const std::string& path, uint64_t lead);

/*!
 * \brief Copy `source` into the file at `path` (created when missing, not truncated) at the same
 *        offsets, except the `hole_size` bytes at `hole` (what the caller writes there: the new
 *        payload region of a loaded artifact's update).
 * \throws ValueError when `source` ends before its size when opened; RuntimeError naming the
 *         file and the system's error when a write fails.
 */
void CopyAround(const File& source, const std::string& path, uint64_t hole, uint64_t hole_size);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_APPENDED_REGION_H_
