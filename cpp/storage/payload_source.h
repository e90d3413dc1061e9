// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/payload_source.h
 * \brief Internal: the one place that decides where the tensor payloads of a partial module's
 *        bytes lie, and the tensors built from them.
 *
 * `Locate` answers it for every reader alike (the loader, `inspect`, `verify`): inside the
 * bytes (inline), in the region appended to the artifact's file, in the weights file beside it,
 * or, for `load(path, weights_file=...)`, in another weights file by key. It is given what the
 * artifact being decoded offers (`Origin`: its bytes, the proven file of its library, an
 * override) and asks nothing of the process: no symbol
 * searched across loaded objects, no path but the artifact's own and those it records.
 */
#ifndef TVM_PARTIAL_STORAGE_PAYLOAD_SOURCE_H_
#define TVM_PARTIAL_STORAGE_PAYLOAD_SOURCE_H_

#include <tvm/ffi/container/tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/format.h"
#include "format/model_record.h"
#include "storage/file.h"

namespace tvm_partial {
namespace storage {

/*! \brief What a loader of ours asks of the partial modules of an artifact it loaded, before
 *         their values are built: where the payloads lie and which view of them to build. */
struct LoadOptions {
  /*! \brief The file the loader opened and loaded the library from (LoadArtifactFile): the
   *         payloads are read from it, not from the file the library's name leads to now. */
  std::shared_ptr<File> library_file;
  /*! \brief load(path, weights_file=...): every tensor from this file (or the files of this
   *         index) by key instead. */
  std::string weights_file;
  /*! \brief load(path, shard=(rank, world)): rank `shard_rank`'s view, each sharded tensor its
   *         slice (MakeTensors); world 0: whole tensors. A tensor bound on a device of
   *         `rank_device`'s type (a GPU) is placed on it, so rank r's tensors go to cuda:r (a
   *         disco worker's `runtime.disco.device`); CPU, the default, changes nothing. */
  int64_t shard_rank = -1;
  int64_t shard_world = 0;
  DLDevice rank_device{kDLCPU, 0};
};

/*! \brief What decoding a partial module's bytes can draw on besides the parsed bytes. */
struct Origin {
  /*! \brief The bytes being decoded, in memory (inline payloads are read from them), or null. */
  const char* blob = nullptr;
  /*! \brief The artifact's file: for a loaded artifact, the file its library was proven to be
   *         mapped from; for inspect and verify, the file they read. Null: bytes alone. */
  std::shared_ptr<File> library;
  /*! \brief That file's absolute path, symlinks resolved (recorded weights files lie beside it). */
  std::string library_path;
  /*! \brief The file the bytes lie in and where (inspect, verify, which read them from a file
   *         rather than memory): an artifact (then the same as `library`) or save_to_bytes output.
   */
  std::shared_ptr<File> blob_file;
  uint64_t blob_offset = 0;
  /*! \brief What a frontend compiled into the wrapped code: a weights file given to the load
   *         may hold these names only with the compiled values. */
  ModelRecord model;
  /*! \brief What the loader asked (a weights file, a rank): LoadOptions. */
  LoadOptions options;
};

/*! \brief Where each tensor payload lies, in the order of the metadata's payloads (one per
 *         distinct tensor: Parsed::payloads). */
struct PayloadSource {
  /*! \brief "inline", "appended", "weights file", or "weights file given to load". */
  std::string placement;
  /*! \brief The file holding them; null when they are in `Origin::blob` (inline, in memory). */
  std::shared_ptr<File> file;
  /*! \brief Per tensor: its file offset, or its offset in the blob when `file` is null. */
  std::vector<uint64_t> offsets;
  /*! \brief Where the recorded payload offsets count from in `file` (the region's start, the
   *         weights file's data, the bytes' place in the file); 0 for the override and in memory.
   */
  uint64_t base = 0;
  /*! \brief A weights set given to `load` that spans several files (an index): each payload's
   *         file, `files[file_of[k]]`; empty otherwise (every payload in `file`). */
  std::vector<std::shared_ptr<File>> files;
  std::vector<size_t> file_of;
};

/*!
 * \brief Decide where the payloads of `parsed` lie and check that they are there: each rule of
 *        the placement (the trailer, the region header, the weights file and its header) once.
 * \throws ValueError saying what is missing or damaged and what to do.
 */
PayloadSource Locate(const format::Parsed& parsed, const Origin& origin);

/*!
 * \brief What the bytes alone can tell, checked when they are loaded: every device a tensor was
 *        bound on is reachable here, and every inline payload (in `blob`) matches its hash.
 * \throws RuntimeError naming the binding whose device is missing; ValueError for a payload whose
 *         hash does not match.
 */
void CheckBytes(const format::Parsed& parsed, const char* blob);

/*!
 * \brief The tensors of `parsed`'s payloads (one per distinct tensor, Parsed::payloads), in
 *        order, built from `source`: host tensors whose payload is 64-byte aligned in a file are
 *        views of a private mapping of it (pages read when touched, writes stay in the process);
 *        inline payloads (checked by CheckBytes) are copied into aligned memory; tensors bound
 *        on a device are copied there. With a shard asked (`origin.options`), a sharded tensor
 *        is its rank's slice: only its bytes are copied or read (the one mapping spans from the
 *        first slice the load binds to the last, other ranks' bytes between them untouched).
 * \throws RuntimeError naming the binding when its device is not available in this process.
 */
std::vector<ffi::Tensor> MakeTensors(const format::Parsed& parsed, const PayloadSource& source,
                                     const Origin& origin);

/*!
 * \brief A host tensor of `dtype` and `shape` holding the payload at `payload` (inside a private
 *        mapping kept alive by `keepalive`): a view when it is 64-byte aligned, else an aligned
 *        copy (TVM kernels assume that alignment).
 */
ffi::Tensor HostPayloadTensor(const char* payload, const std::shared_ptr<void>& keepalive,
                              DLDataType dtype, const std::vector<int64_t>& shape, uint64_t nbytes);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_PAYLOAD_SOURCE_H_
