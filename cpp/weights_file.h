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

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <cstddef>
#include <cstdint>
#include <map>
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

/*! \brief A tensor entry of a safetensors file: TVM dtype name, shape, byte range in the data. */
struct Entry {
  std::string dtype;  // "float32"
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
};

/*! \brief Any safetensors weights file (`save_weights`, another tool), mapped privately. */
struct File {
  std::string path;
  region::MappedRegion data;             // `data.data` is the start of the data section
  std::map<std::string, Entry> entries;  // `__padding__/N` and the region header left out
};

/*!
 * \brief Open and map the safetensors file at `path`, checking what weights.py's reader checks:
 *        header length (at most 100 MiB, inside the file), JSON object, each entry's dtype, shape
 *        and data offsets (span = dtype size x element count, inside the data), no overlaps.
 * \throws FileNotFoundError when it does not exist; ValueError naming the file and the tensor.
 */
File Open(const std::string& path);

/*! \brief The key of a bound tensor: `FUNCTION/PARAMETER`, or `FUNCTION/POSITION` where the
 *         name is unknown or not unique (as weights.py's `_key`). */
std::string Key(const std::string& function, int64_t position,
                const ffi::Array<ffi::String>& param_names);

/*! \brief A bound tensor that a weights file must supply. */
struct Wanted {
  std::string key;
  std::string dtype;
  std::vector<int64_t> shape;
};

/*!
 * \brief Where each of `wanted` lies in `file` (pointers into its mapping, in order). The file
 *        must hold every key with the same dtype and shape, and nothing else.
 * \throws ValueError naming the file and the tensor otherwise.
 */
std::vector<const char*> Payloads(const File& file, const std::vector<Wanted>& wanted);

/*!
 * \brief While alive, artifacts loaded on this thread take their tensors from the weights file
 *        `path` (by key, through `Open` and `Payloads`) instead of their own payloads, which are
 *        not read: their recorded weights file is never opened. What `LoadWithWeights` uses.
 */
class ScopedWeightsFile {
 public:
  explicit ScopedWeightsFile(std::string path);
  ~ScopedWeightsFile();
  ScopedWeightsFile(const ScopedWeightsFile&) = delete;
  ScopedWeightsFile& operator=(const ScopedWeightsFile&) = delete;
  /*! \brief The file of the innermost live scope on this thread, or null. */
  static const std::string* Current();
  /*! \brief Called by the loader when it took the tensors of a partial module from the file. */
  static void MarkUsed();
  /*! \brief How many partial modules took their tensors from the file. */
  int used() const { return used_; }

 private:
  std::string path_;
  ScopedWeightsFile* outer_;
  int used_ = 0;
};

}  // namespace weights
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_WEIGHTS_FILE_H_
