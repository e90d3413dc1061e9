// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/device_copy.cc
 * \brief Copying a payload into a device tensor in pieces (storage/device_copy.h).
 */
#include "storage/device_copy.h"

#include <sys/mman.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "device.h"

namespace tvm_partial {
namespace storage {

namespace {

using Staging = DeviceCopyOptions::Staging;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr DLDataType kBytes{kDLUInt, 8, 1};
constexpr DLDevice kHostDevice{kDLCPU, 0};

ffi::Function RuntimeGlobal(const char* name) {
  auto f = ffi::Function::GetGlobal(name);
  if (!f.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "copying a payload to a device needs TVM's runtime (" << name
                                << " is not registered); import tvm first";
  }
  return *f;
}

// `n` bytes as a flat uint8 DLTensor, what TVM's copy takes; not copyable: `t.shape` points in.
struct FlatBytes {
  FlatBytes(void* data, DLDevice device, uint64_t byte_offset, uint64_t n)
      : extent(static_cast<int64_t>(n)),
        t{data, device, 1, kBytes, &extent, nullptr, byte_offset} {}
  FlatBytes(const FlatBytes&) = delete;
  FlatBytes& operator=(const FlatBytes&) = delete;
  int64_t extent;
  DLTensor t;
};

struct StagingBuffers {
  ffi::Tensor buffer[2];
  uint64_t size = 0;
  int32_t device_type = kDLCPU;  // kDLCUDAHost, kDLROCMHost (pinned) or kDLCPU
  char* data(uint64_t i) const { return static_cast<char*>(buffer[i % 2].data_ptr()); }
};

StagingBuffers Allocate(DLDevice device, uint64_t size) {
  StagingBuffers out{{}, size, device.device_type};
  for (ffi::Tensor& b : out.buffer) {
    b = AlignedEmpty(ffi::Shape({static_cast<int64_t>(size)}), kBytes, device);
  }
  return out;
}

// Pinned staging buffers kept per process, at most one pair per pinned kind: a copy holds the pair
// while it runs (a concurrent one allocates its own); of two pairs given back the larger is kept.
class PinnedCache {
 public:
  /*! \brief Never destroyed: freeing pinned memory after the runtime is gone at exit crashes. */
  static PinnedCache* Global() {
    static auto* cache = new PinnedCache();
    return cache;
  }

  std::optional<StagingBuffers> Take(int32_t host_type, uint64_t size, std::string* why_not) {
    std::optional<StagingBuffers> kept;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(host_type);
      if (it != free_.end()) {
        kept = std::move(it->second);
        free_.erase(it);
      }
    }
    if (kept.has_value() && kept->size >= size) return kept;
    kept.reset();  // too small: freed outside the lock, before allocating a larger pair
    const char* name = detail::DeviceName(host_type);
    if (!ffi::Function::GetGlobal(std::string("device_api.") + name).has_value()) {
      *why_not = std::string("TVM's runtime registers no device_api.") + name;
      return std::nullopt;
    }
    try {
      return Allocate(DLDevice{static_cast<DLDeviceType>(host_type), 0}, size);
    } catch (const ffi::Error& err) {
      *why_not = "allocating " + std::to_string(2 * size) + " bytes of " + name +
                 " memory failed: " + err.kind() + ": " + err.message();
      return std::nullopt;
    }
  }

  /*! \brief Back into the cache, once no copy reads from them any more. */
  void Give(StagingBuffers buffers) {
    std::lock_guard<std::mutex> lock(mu_);
    // Unless added, `buffers` is left as is (try_emplace); the smaller pair is freed on return.
    auto [kept, added] = free_.try_emplace(buffers.device_type, std::move(buffers));
    if (!added && kept->second.size < buffers.size) std::swap(kept->second, buffers);
  }

 private:
  std::mutex mu_;
  std::map<int32_t, StagingBuffers> free_;  // by pinned memory kind
};

// memcpy split over threads (the caller's too); workers live per payload, waiting between pieces.
class ParallelCopy {
 public:
  explicit ParallelCopy(int threads) {
    workers_.reserve(std::max(threads, 1));  // no reallocation, which could drop a running thread
    for (int i = 1; i < threads; ++i) {
      try {
        workers_.emplace_back([this, i] { Work(i); });
      } catch (const std::system_error&) {
        break;  // fewer threads than asked: still correct
      }
    }
  }
  ~ParallelCopy() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
  }
  ParallelCopy(const ParallelCopy&) = delete;
  ParallelCopy& operator=(const ParallelCopy&) = delete;

  void operator()(char* to, const char* from, uint64_t n) {
    if (workers_.empty() || n < 2 * kMiB) {
      std::memcpy(to, from, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      to_ = to;
      from_ = from;
      n_ = n;
      pending_ = workers_.size();
      ++generation_;
    }
    wake_.notify_all();
    Slice(0);
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  // Slices start at 64 KiB bounds (file pages map in 64 KiB at a time): no two fault a page in.
  void Slice(int i) const {
    const uint64_t k = workers_.size() + 1;
    auto bound = [&](uint64_t j) {
      return j >= k ? n_ : std::min(n_, n_ / k * j / (64 << 10) * (64 << 10));
    };
    const uint64_t begin = bound(i), end = bound(i + 1);
    if (end > begin) std::memcpy(to_ + begin, from_ + begin, end - begin);
  }

  void Work(int i) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      lock.unlock();
      Slice(i);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;  // a new copy, or stop
  std::condition_variable done_;  // every worker finished its slice
  uint64_t generation_ = 0;       // the copies started
  size_t pending_ = 0;            // workers still copying the current one
  bool stop_ = false;
  char* to_ = nullptr;
  const char* from_ = nullptr;
  uint64_t n_ = 0;
};

// The staging `kind` asks for, for `pieces` pieces of `piece` bytes to `device`; none: direct.
std::optional<StagingBuffers> ChooseStaging(Staging kind, DLDevice device, uint64_t pieces,
                                            uint64_t piece) {
  if (kind == Staging::kDirect) return std::nullopt;
  if (kind == Staging::kHost) return Allocate(kHostDevice, piece);
  const int32_t host_type = device.device_type == kDLCUDA   ? kDLCUDAHost
                            : device.device_type == kDLROCM ? kDLROCMHost
                                                            : -1;
  if (kind == Staging::kAuto && (pieces < 2 || host_type < 0)) return std::nullopt;
  // Here kind is kPinned whenever host_type < 0.
  std::string why_not = "TVM offers it for CUDA and ROCm devices only";
  std::optional<StagingBuffers> out;
  if (host_type >= 0) out = PinnedCache::Global()->Take(host_type, piece, &why_not);
  if (!out.has_value() && kind == Staging::kPinned) {
    TVM_FFI_THROW(ValueError) << "no pinned host memory to stage a copy to "
                              << detail::DeviceString(device.device_type, device.device_id)
                              << " through: " << why_not;
  }
  return out;
}

uint64_t ParseCount(const char* value, uint64_t least, uint64_t most, const char* what) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(value, &end, 10);  // NOLINT(runtime/int)
  if (errno != 0 || end == value || *end != '\0' || value[0] == '-' || n < least || n > most) {
    TVM_FFI_THROW(ValueError) << what << " is '" << value << "'; use a whole number from " << least
                              << " to " << most;
  }
  return n;
}

Staging ParseStaging(const std::string& value, const char* what) {
  if (value == "auto") return Staging::kAuto;
  if (value == "pinned") return Staging::kPinned;
  if (value == "direct") return Staging::kDirect;
  if (value == "host") return Staging::kHost;
  TVM_FFI_THROW(ValueError) << what << " is '" << value << "'; use auto, pinned, direct or host";
  TVM_FFI_UNREACHABLE();
}

}  // namespace

DeviceCopyOptions DeviceCopyOptions::FromEnvironment(bool release_source) {
  DeviceCopyOptions out;
  out.release_source = release_source;
  const unsigned cores = std::thread::hardware_concurrency();
  out.fill_threads = std::max(1, std::min(out.fill_threads, static_cast<int>(cores)));
  auto env = [](const char* name) -> const char* {
    const char* value = std::getenv(name);
    return value != nullptr && value[0] != '\0' ? value : nullptr;
  };
  if (const char* v = env("TVM_PARTIAL_COPY_STAGING")) {
    out.staging = ParseStaging(v, "TVM_PARTIAL_COPY_STAGING");
  }
  if (const char* v = env("TVM_PARTIAL_COPY_CHUNK_MIB")) {
    out.chunk_bytes = ParseCount(v, 0, uint64_t{1} << 20, "TVM_PARTIAL_COPY_CHUNK_MIB") * kMiB;
  }
  if (const char* v = env("TVM_PARTIAL_COPY_THREADS")) {
    out.fill_threads = static_cast<int>(ParseCount(v, 1, 256, "TVM_PARTIAL_COPY_THREADS"));
  }
  return out;
}

void CopyToDevice(const char* src, uint64_t nbytes, const ffi::Tensor& dst,
                  const DeviceCopyOptions& options) {
  const DLTensor& d = *dst.GetDLTensorPtr();
  if (!dst.IsContiguous()) {
    TVM_FFI_THROW(ValueError) << "CopyToDevice: the destination tensor is not contiguous";
  }
  if (ffi::GetDataSize(d) != nbytes) {
    TVM_FFI_THROW(ValueError) << "CopyToDevice: the destination tensor holds "
                              << ffi::GetDataSize(d) << " bytes, the payload " << nbytes;
  }
  if (nbytes == 0) return;
  const ffi::Function copy = RuntimeGlobal("runtime.TVMTensorCopyFromTo");
  const ffi::Function sync = RuntimeGlobal("runtime.Device_StreamSync");
  const int64_t default_stream = 0;  // TVMTensorCopyFromTo copies on it
  const uint64_t piece = options.chunk_bytes == 0 ? nbytes : std::min(options.chunk_bytes, nbytes);
  const uint64_t pieces = (nbytes + piece - 1) / piece;
  auto length = [&](uint64_t i) { return std::min(piece, nbytes - i * piece); };
  // Every byte of the source before `end` has been read: its whole pages go, but not the ones
  // holding the first byte or byte `end` (they may hold what precedes or follows the payload).
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t base = reinterpret_cast<uintptr_t>(src);
  uintptr_t released = (base + page - 1) / page * page;
  auto read_up_to = [&](uint64_t end) {
    const uintptr_t upto = (base + end) / page * page;
    if (!options.release_source || upto <= released) return;
    // Best effort: if refused, the pages merely stay until the mapping goes.
    madvise(reinterpret_cast<void*>(released), upto - released, MADV_DONTNEED);
    released = upto;
  };

  std::optional<StagingBuffers> staging = ChooseStaging(options.staging, d.device, pieces, piece);
  if (!staging.has_value()) {
    for (uint64_t i = 0; i < pieces; ++i) {
      FlatBytes from(const_cast<char*>(src) + i * piece, kHostDevice, 0, length(i));
      FlatBytes to(d.data, d.device, d.byte_offset + i * piece, length(i));
      copy(&from.t, &to.t);
      sync(d.device, default_stream);
      read_up_to(i * piece + length(i));
    }
    return;
  }

  ParallelCopy fill(piece >= 2 * kMiB ? options.fill_threads : 1);
  fill(staging->data(0), src, length(0));
  read_up_to(length(0));
  try {
    for (uint64_t i = 0; i < pieces; ++i) {
      // Piece i travels from one buffer while i + 1 fills the other; synced before refilling.
      FlatBytes from(staging->data(i), kHostDevice, 0, length(i));
      FlatBytes to(d.data, d.device, d.byte_offset + i * piece, length(i));
      copy(&from.t, &to.t);
      if (i + 1 < pieces) {
        fill(staging->data(i + 1), src + (i + 1) * piece, length(i + 1));
        read_up_to((i + 1) * piece + length(i + 1));
      }
      sync(d.device, default_stream);
    }
  } catch (...) {
    // A copy may still read from a buffer: wait for it before the buffers can be freed.
    try {
      sync(d.device, default_stream);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the first error is the one to report
    }
    throw;
  }
  if (staging->device_type != kDLCPU) PinnedCache::Global()->Give(std::move(*staging));
}

}  // namespace storage
}  // namespace tvm_partial
