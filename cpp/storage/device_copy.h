// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/device_copy.h
 * \brief Internal: copying a payload from host memory (a private mapping of an artifact or a
 *        weights file) into a tensor on a device, in pieces.
 *
 * One call of TVM's copy for a whole payload copies from pageable memory, which the driver
 * stages through buffers of its own, and faults every page of the mapping in before the mapping
 * is let go. `CopyToDevice` copies in pieces (16 MiB by default) instead:
 *
 * - pinned staging: where the runtime offers pinned host memory for the destination's device
 *   (TVM's `cuda_host` and `rocm_host` allocations, through `runtime.TVMTensorAllocWithScope`),
 *   each piece is read from the source into one of two staging buffers there, by several
 *   threads, and copied from it to the device with `runtime.TVMTensorCopyFromTo`. The copy of a
 *   piece is issued before the next piece is read into the other buffer, and waited for
 *   (`runtime.Device_StreamSync` on the default stream) after: where the runtime's copy is
 *   asynchronous (CUDA: `cudaMemcpyAsync` from pinned memory) reading and transfer overlap;
 *   where it blocks (ROCm without a stream) the pieces go one after the other. The two buffers
 *   are kept for the process and reused by every later copy (allocating pinned memory costs
 *   more than copying a piece), so host memory held after a load is these 2 x 16 MiB.
 * - direct: without pinned memory (or for a payload of one piece), each piece is copied from
 *   the source itself, and waited for.
 *
 * With `release_source`, the whole pages of the source are released (`madvise(MADV_DONTNEED)`)
 * as soon as they have been read, so a load holds one piece of the mapping at a time, not the
 * whole payload. Only for a private mapping of a file that nothing has written to: there, a
 * released page is read again from the file if touched; in other memory it would read zeros.
 *
 * The defaults are not tuned on a device (none was lent when this was written);
 * benchmarks/bench_gpu_load.py measures them against alternatives set through the environment:
 * `TVM_PARTIAL_COPY_STAGING` (auto, pinned, direct, host), `TVM_PARTIAL_COPY_CHUNK_MIB` (0: one
 * piece), `TVM_PARTIAL_COPY_THREADS` (threads reading a piece into staging).
 */
#ifndef TVM_PARTIAL_STORAGE_DEVICE_COPY_H_
#define TVM_PARTIAL_STORAGE_DEVICE_COPY_H_

#include <tvm/ffi/container/tensor.h>

#include <cstdint>
#include <string>

namespace tvm_partial {
namespace storage {

namespace ffi = ::tvm::ffi;

/*! \brief How `CopyToDevice` copies. */
struct DeviceCopyOptions {
  enum class Staging {
    kAuto,    // pinned where the runtime offers it and there are 2+ pieces; else direct
    kPinned,  // pinned, or an error saying why there is none
    kDirect,  // from the source, piece by piece
    kHost,    // through two buffers of ordinary host memory (tests the staged path without a GPU)
  };
  Staging staging = Staging::kAuto;
  /*! \brief Bytes per piece; 0 copies the payload in one piece. */
  uint64_t chunk_bytes = uint64_t{16} << 20;
  /*! \brief Threads reading a piece into staging, the calling one included. */
  int fill_threads = 4;
  /*! \brief Release the source's pages once read (a private file mapping only; see above). */
  bool release_source = false;

  /*!
   * \brief The defaults, overridden by TVM_PARTIAL_COPY_STAGING, TVM_PARTIAL_COPY_CHUNK_MIB and
   *        TVM_PARTIAL_COPY_THREADS where they are set; fill_threads at most the machine's cores.
   * \throws ValueError naming the variable whose value is not one of those allowed.
   */
  static DeviceCopyOptions FromEnvironment(bool release_source);

  /*! \brief "auto", "pinned", "direct" or "host"; \throws ValueError naming `what` otherwise. */
  static Staging ParseStaging(const std::string& value, const char* what);
};

/*! \brief What a copy did. */
struct DeviceCopyStats {
  std::string staging;          // "pinned", "host", "direct", or "none" (0 bytes)
  uint64_t pieces = 0;          // copies issued
  uint64_t released_bytes = 0;  // bytes of the source released after reading
  int fill_threads = 1;         // threads that read into staging
};

/*!
 * \brief Copy the `nbytes` bytes at `src` (host memory) into the contiguous tensor `dst` (any
 *        device TVM's runtime copies to, the CPU included), through the staging `options` say.
 * \throws ValueError when `dst` is not contiguous or does not hold `nbytes` bytes, or staging is
 *         kPinned and the runtime offers no pinned memory for `dst`'s device; RuntimeError when
 *         TVM's runtime is not loaded; the runtime's error when a copy fails.
 */
DeviceCopyStats CopyToDevice(const char* src, uint64_t nbytes, const ffi::Tensor& dst,
                             const DeviceCopyOptions& options);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_DEVICE_COPY_H_
