// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/payload_source.h
 * \brief Internal: where a partial module's tensor payloads lie, and the tensors built from them.
 *
 * `Locate` decides alike for loader, `inspect` and `verify`, from the artifact (`Origin`) alone: no
 * symbol searched across loaded objects, no path but its own and those it records (docs/format.md).
 */
#ifndef TVM_PARTIAL_STORAGE_PAYLOAD_SOURCE_H_
#define TVM_PARTIAL_STORAGE_PAYLOAD_SOURCE_H_

#include <tvm/ffi/container/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/format.h"
#include "format/model_record.h"
#include "storage/file.h"

namespace tvm_partial {
namespace storage {

// What a loader asks of an artifact's partial modules before their values are built.
struct LoadOptions {
  // The file LoadArtifactFile loaded: payloads are read from it, not what its name leads to now.
  std::shared_ptr<File> library_file;
  std::string weights_file;  // load(path, weights_file=...): every tensor by key from this file
  // load(path, shard=(rank, world)): each sharded tensor is rank `shard_rank`'s slice; world 0:
  // whole tensors. A tensor bound on a device of `rank_device`'s type goes to it (rank r to
  // cuda:r, a disco worker's `runtime.disco.device`); CPU changes nothing.
  int64_t shard_rank = -1;
  int64_t shard_world = 0;
  DLDevice rank_device{kDLCPU, 0};
};

// What decoding a partial module's bytes can draw on besides the parsed bytes.
struct Origin {
  const char* blob = nullptr;  // the bytes, in memory (inline payloads are read from them), or null
  // The artifact's file (proven mapped, or read by inspect/verify); null: bytes only.
  std::shared_ptr<File> library;
  // That file's absolute path, symlinks resolved (recorded weights files lie beside it).
  std::string library_path;
  // Where the bytes lie when read from a file (inspect, verify): `library` or save_to_bytes output.
  std::shared_ptr<File> blob_file;
  uint64_t blob_offset = 0;
  // Compiled-in tensors: a weights file given to load may hold these only with the compiled values.
  ModelRecord model;
  LoadOptions options;
};

// Where each tensor payload lies, in Parsed::payloads order.
struct PayloadSource {
  std::string placement;       // "inline", "appended", "weights file", "weights file given to load"
  std::shared_ptr<File> file;  // null when they are in `Origin::blob` (inline, in memory)
  std::vector<uint64_t> offsets;  // per tensor, in `file`, or in the blob when `file` is null
  // Origin of recorded offsets in `file` (region, weights data, bytes); 0: the override, in memory.
  uint64_t base = 0;
  // Payload k lies in `files[file_of[k]]` (one file but for an index given to `load`).
  std::vector<std::shared_ptr<File>> files;
  std::vector<size_t> file_of;
};

// Decide where `parsed`'s payloads lie, checking each placement rule (trailer, region header,
// weights file and its header) once. \throws ValueError saying what is missing or damaged.
PayloadSource Locate(const format::Parsed& parsed, const Origin& origin);

// Check at load what the bytes alone can: bound devices reachable, inline payloads (in `blob`)
// match their hash. \throws RuntimeError naming a binding's missing device; ValueError on mismatch.
void CheckBytes(const format::Parsed& parsed, const char* blob);

// `parsed`'s payload tensors, in order, from `source`: host payloads 64-byte aligned in a file view
// a private mapping (pages read on touch, writes private); others are copied (inline ones checked
// by CheckBytes). A shard load gives a sharded tensor's rank slice, touching only its bytes.
// \throws RuntimeError naming a binding whose device is unavailable here.
std::vector<ffi::Tensor> MakeTensors(const format::Parsed& parsed, const PayloadSource& source,
                                     const Origin& origin);

// A host tensor of the payload at `payload` (in a mapping kept alive by `keepalive`): a view if
// 64-byte aligned, else an aligned copy (TVM kernels assume that alignment).
ffi::Tensor HostPayloadTensor(const char* payload, const std::shared_ptr<void>& keepalive,
                              DLDataType dtype, const std::vector<int64_t>& shape, uint64_t nbytes);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_PAYLOAD_SOURCE_H_
