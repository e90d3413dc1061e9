// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/device_copy.h
 * \brief Internal: copying a payload from host memory (a private mapping of an artifact or a
 *        weights file) into a device tensor in pieces (16 MiB by default), not one TVM copy,
 *        which goes through the driver's pageable staging and faults in the whole mapping.
 * - pinned (`cuda_host`, `rocm_host`): threads fill two staging buffers in turn, each piece's async
 *   copy overlapping the next read; the buffers are kept (pinning costs more than a copy).
 * - direct: otherwise, or for one piece, each piece is copied from the source and synced.
 * `release_source` drops pages once read, only for an unwritten private file mapping (dropped
 * pages are read again from the file; other memory would read zeros). Defaults measured on an
 * H200 (docs/benchmarks.md; 4 fill threads were not timed).
 */
#ifndef TVM_PARTIAL_STORAGE_DEVICE_COPY_H_
#define TVM_PARTIAL_STORAGE_DEVICE_COPY_H_

#include <tvm/ffi/container/tensor.h>

#include <cstdint>

namespace tvm_partial {
namespace storage {

namespace ffi = ::tvm::ffi;

struct DeviceCopyOptions {
  enum class Staging {
    kAuto,    // pinned where the runtime offers it and there are 2+ pieces; else direct
    kPinned,  // pinned, or an error saying why there is none
    kDirect,  // from the source, piece by piece
    kHost,    // through two buffers of ordinary host memory (tests the staged path without a GPU)
  };
  Staging staging = Staging::kAuto;
  uint64_t chunk_bytes = uint64_t{16} << 20;  // bytes per piece; 0: the payload in one piece
  int fill_threads = 4;  // threads reading a piece into staging, the calling one included
  bool release_source = false;

  // The defaults, overridden by TVM_PARTIAL_COPY_STAGING, _CHUNK_MIB and _THREADS where set;
  // fill_threads capped at the core count. ValueError names a bad one.
  static DeviceCopyOptions FromEnvironment(bool release_source);
};

// Copy `nbytes` at host `src` into contiguous `dst` on any device TVM copies to (CPU included).
// ValueError when `dst` is not contiguous or not `nbytes` long, or kPinned finds no pinned memory;
// RuntimeError without TVM's runtime; the runtime's error when a copy fails.
void CopyToDevice(const char* src, uint64_t nbytes, const ffi::Tensor& dst,
                  const DeviceCopyOptions& options);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_DEVICE_COPY_H_
