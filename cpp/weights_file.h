// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file weights_file.h
 * \brief Internal: mapping the safetensors weights file of an artifact exported with
 *        `weights_file=` (format flag 2).
 *
 * The file's data section (after the u64 header length and the JSON header, at a file offset that
 * is a multiple of 64) is a payload region as the library would hold it: the region header as
 * the tensor `__tvm_partial_region__`, then each payload under its key. It is mapped privately:
 * pages are read when touched, writes to bound tensors stay in the process, the file never changes.
 */
#ifndef TVM_PARTIAL_WEIGHTS_FILE_H_
#define TVM_PARTIAL_WEIGHTS_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "payload_region.h"

namespace tvm_partial {
namespace weights {

/*! \brief `name` (relative) resolved against the folder of `library`; an absolute name as is. */
std::string Beside(const std::string& library, const std::string& name);

/*!
 * \brief Map the weights file at `path` and return its data section, which must hold at least
 *        `region_size` bytes.
 * \throws RuntimeError when the file cannot be opened (naming it and what to do); ValueError when
 *         it is not a safetensors file, its header is out of range, or it is cut short.
 */
region::MappedRegion Map(const std::string& path, size_t region_size);

/*! \brief A payload the metadata records: its byte range in the region and what to call it. */
struct Span {
  uint64_t begin;
  uint64_t end;
  std::string where;  // "function 'main' position 1"
};

/*!
 * \brief Check the JSON header of the weights file at `path` (parsed with tvm-ffi's JSON reader)
 *        against the metadata: the region header entry at [0, 64) and, for every payload in
 *        `spans`, an entry with exactly its data offsets.
 * \throws ValueError naming the file and the payload when the header is malformed or disagrees.
 */
void CheckHeader(const std::string& path, const std::vector<Span>& spans);

}  // namespace weights
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_WEIGHTS_FILE_H_
