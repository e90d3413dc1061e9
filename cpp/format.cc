// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format.cc
 * \brief Writer and bounds-checked reader of the partial module format (see format.h).
 */
#include "format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hash.h"
#include "payload_region.h"
#include "weights_file.h"

// The format is little-endian and written with plain memcpy of integers.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tvm-partial's format needs a little-endian host");

namespace tvm_partial {
namespace format {

namespace {

constexpr char kMagic[8] = {'T', 'V', 'M', 'P', 'A', 'R', 'T', 'L'};
constexpr char kRegionMagic[8] = {'T', 'V', 'M', 'P', 'R', 'E', 'G', 'N'};
constexpr uint32_t kFlagExternalPayloads = 1;  // payloads live in a region of the library file
constexpr uint32_t kFlagWeightsFile = 2;       // ... of a safetensors file beside it (with flag 1)
constexpr uint32_t kFlagAppended = 4;  // ... appended to the library file (with flag 1, not 2)
constexpr char kTrailerMagic[8] = {'T', 'V', 'M', 'P', 'T', 'R', 'L', 'R'};
constexpr size_t kHeaderSize = 40;    // magic, version, flags, total, metadata size, hash
constexpr size_t kHashedHeader = 32;  // the header bytes covered by the metadata hash
constexpr uint32_t kMaxNdim = 64;
#ifdef TVM_PARTIAL_FUZZING
// A coverage-guided fuzzer cannot get past a checksum; the fuzz build checks everything else.
constexpr bool kVerifyChecksums = false;
#else
constexpr bool kVerifyChecksums = true;
#endif

enum ValueKind : uint8_t { kNone = 0, kInt = 1, kFloat = 2, kBool = 3, kStr = 4, kTensor = 5 };

using hash::Hash;
using hash::Hasher;

uint64_t MetadataHash(const char* blob, size_t meta_size) {
  Hasher h;
  h.Update(blob, kHashedHeader);
  h.Update(blob + kHeaderSize, meta_size);
  return h.Final();
}

size_t AlignUp(size_t n) {
  return (n + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment;
}

// ---------------------------------------------------------------------------------------------
class Writer {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutStr(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    buf_.append(s);
  }
  template <typename T>
  void Patch(size_t at, T v) {
    std::memcpy(&buf_[at], &v, sizeof(T));
  }
  size_t size() const { return buf_.size(); }
  std::string& str() { return buf_; }

 private:
  std::string buf_;
};

const char* DeviceName(int32_t device_type) {
  switch (device_type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda_host";
    case kDLOpenCL:
      return "opencl";
    case kDLVulkan:
      return "vulkan";
    case kDLMetal:
      return "metal";
    case kDLROCM:
      return "rocm";
    case kDLROCMHost:
      return "rocm_host";
    case kDLCUDAManaged:
      return "cuda_managed";
    case kDLOneAPI:
      return "oneapi";
    case kDLWebGPU:
      return "webgpu";
    case kDLHexagon:
      return "hexagon";
    default:
      return nullptr;
  }
}

std::string DeviceString(int32_t device_type, int32_t device_id) {
  const char* name = DeviceName(device_type);
  std::ostringstream os;
  if (name) {
    os << name;
  } else {
    os << "device_type " << device_type;
  }
  os << ":" << device_id;
  return os.str();
}

/*! \brief Device ids at or above this are refused: no process has that many devices of a kind. */
constexpr int32_t kMaxDeviceId = 1024;

/*! \brief Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, at most
 *         U+10FFFF). The format stores text as UTF-8; tools decode it. */
bool IsValidUtf8(const char* data, size_t size) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  const auto* end = p + size;
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) <= n) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (size_t k = 2; k <= n; ++k) {
      if ((p[k] & 0xC0) != 0x80) return false;
    }
    p += n + 1;
  }
  return true;
}

/*!
 * \brief Why the format cannot hold a tensor of this dtype on this device, or "" when it can.
 *        The writer and the reader both use it, so what one accepts the other does.
 */
std::string TensorProblem(DLDataType dtype, int32_t device_type, int32_t device_id) {
  const bool known_code = dtype.code == kDLInt || dtype.code == kDLUInt || dtype.code == kDLFloat ||
                          dtype.code == kDLBfloat || dtype.code == kDLBool ||
                          (dtype.code >= kDLFloat8_e3m4 && dtype.code <= kDLFloat8_e8m0fnu);
  if (!known_code) {
    return "a dtype of type code " + std::to_string(dtype.code) +
           " cannot be stored (only int, uint, float, bfloat16, float8 and bool tensors can)";
  }
  const std::string name = ffi::DLDataTypeToString(dtype);
  if (dtype.bits == 0 || dtype.bits % 8 != 0) {
    return "dtype '" + name + "' has " + std::to_string(dtype.bits) +
           " bits per element; only whole bytes can be stored";
  }
  if (static_cast<int16_t>(dtype.lanes) < 1) {
    return "dtype with " + std::to_string(static_cast<int16_t>(dtype.lanes)) +
           " lanes cannot be stored (lanes must be 1 to 32767)";
  }
  if (DeviceName(device_type) == nullptr || device_id < 0 || device_id >= kMaxDeviceId ||
      (device_type == kDLCPU && device_id != 0)) {
    return "invalid device " + DeviceString(device_type, device_id) + " (ids are 0 to " +
           std::to_string(kMaxDeviceId - 1) + ", and 0 for cpu)";
  }
  return "";
}

/*!
 * \brief prod(shape) * bits * lanes / 8 into `bytes`; or why not: a negative dimension, or a
 *        product that overflows (even when another dimension is 0: no real tensor has such a
 *        shape). For dtypes TensorProblem accepts (whole bytes), so the size is exact.
 */
std::string ShapeProblem(const int64_t* shape, size_t ndim, DLDataType dtype, uint64_t* bytes) {
  uint64_t nonzero = 1;  // the product of the non-zero dimensions
  bool empty = false;
  for (size_t i = 0; i < ndim; ++i) {
    const int64_t d = shape[i];
    if (d < 0) return "negative dimension " + std::to_string(d);
    if (d == 0) {
      empty = true;
    } else if (__builtin_mul_overflow(nonzero, static_cast<uint64_t>(d), &nonzero) ||
               nonzero > static_cast<uint64_t>(INT64_MAX)) {
      return "the shape's element count overflows";
    }
  }
  const uint64_t elem_bytes =
      static_cast<uint64_t>(dtype.bits / 8) * static_cast<uint16_t>(dtype.lanes);
  if (__builtin_mul_overflow(nonzero, elem_bytes, bytes) ||
      *bytes > static_cast<uint64_t>(INT64_MAX)) {
    return "the shape's byte size overflows";
  }
  if (empty) *bytes = 0;
  return "";
}

/*! \brief The tensor's data when it lives in host memory (readable directly), else null. */
const char* HostData(const DLTensor* t) {
  const int type = t->device.device_type;
  if (type == kDLCPU || type == kDLCUDAHost || type == kDLROCMHost) {
    return static_cast<const char*>(t->data) + t->byte_offset;
  }
  return nullptr;
}

void CopyTensorToHost(const ffi::Tensor& tensor, char* dst, size_t nbytes) {
  if (nbytes == 0) return;
  const DLTensor* t = tensor.GetDLTensorPtr();
  if (const char* host = HostData(t)) {
    std::memcpy(dst, host, nbytes);
    return;
  }
  // Looked up each time: tvm may be imported after the first save.
  auto copy = ffi::Function::GetGlobal("runtime.TVMTensorCopyToBytes");
  if (!copy.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "saving a tensor on "
                                << DeviceString(t->device.device_type, t->device.device_id)
                                << " needs the TVM runtime (runtime.TVMTensorCopyToBytes); "
                                   "import tvm first";
  }
  (*copy)(tensor, static_cast<void*>(dst), static_cast<int64_t>(nbytes));
}

/*! \brief A tensor's bytes in host memory: the tensor's own for host tensors, else a copy. */
class HostBytes {
 public:
  HostBytes(const ffi::Tensor& tensor, size_t nbytes) : data_(HostData(tensor.GetDLTensorPtr())) {
    if (data_ == nullptr) {
      copy_.resize(nbytes);
      CopyTensorToHost(tensor, copy_.data(), nbytes);
      data_ = copy_.data();
    }
  }
  const char* data() const { return data_; }

 private:
  const char* data_;
  std::string copy_;
};

void WriteOutputs(Writer* w, const Outputs& outputs) {
  w->Put<uint32_t>(static_cast<uint32_t>(outputs.size()));
  for (const Output& o : outputs) {
    w->Put<int64_t>(o.position);
    w->PutStr(ffi::DLDataTypeToString(o.dtype));
    w->Put<uint32_t>(static_cast<uint32_t>(o.shape.size()));
    for (const OutputDim& dim : o.shape) {
      w->Put<int64_t>(dim.arg < 0 ? -1 : dim.arg);
      w->Put<int64_t>(dim.value);
    }
  }
}

}  // namespace

// =============================================================================================
std::string Encode(const std::vector<FunctionRecord>& functions, const ExternalRegion* region) {
  struct Pending {
    ffi::Tensor tensor;
    size_t nbytes;
    size_t offset_at;  // where the payload offset is patched in
    size_t hash_at;    // where the payload hash is patched in
  };
  std::vector<Pending> tensors;
  Writer w;
  w.str().append(kMagic, sizeof(kMagic));
  const bool with_outputs =
      std::any_of(functions.begin(), functions.end(),
                  [](const FunctionRecord& fn) { return !fn.outputs.empty(); });
  w.Put<uint32_t>(with_outputs ? kVersion : kVersionNoOutputs);
  w.Put<uint32_t>(region ? (kFlagExternalPayloads |
                            (region->weights_file.empty() ? 0 : kFlagWeightsFile) |
                            (region->appended ? kFlagAppended : 0))
                         : 0);
  w.Put<uint64_t>(0);  // total size, patched
  w.Put<uint64_t>(0);  // metadata size, patched
  w.Put<uint64_t>(0);  // metadata hash, patched
  size_t region_size_at = 0;
  if (region) {
    w.PutStr(region->symbol);
    w.Put<uint64_t>(region->link);
    region_size_at = w.size();
    w.Put<uint64_t>(0);  // region size, patched
    if (!region->weights_file.empty()) w.PutStr(region->weights_file);
  }

  // The format stores text as UTF-8 and the reader checks it: refuse anything else here.
  auto utf8 = [](const FunctionRecord& fn, const ffi::String& text, const char* what) {
    if (!IsValidUtf8(text.data(), text.size())) {
      TVM_FFI_THROW(ValueError) << "cannot save function '" << fn.name << "': its " << what
                                << " is not valid UTF-8";
    }
  };
  w.Put<uint32_t>(static_cast<uint32_t>(functions.size()));
  for (const FunctionRecord& fn : functions) {
    if (!IsValidUtf8(fn.name.data(), fn.name.size())) {
      TVM_FFI_THROW(ValueError) << "cannot save a function whose name is not valid UTF-8";
    }
    w.PutStr(fn.name);
    w.Put<uint32_t>(static_cast<uint32_t>(fn.param_names.size()));
    for (const ffi::String& p : fn.param_names) {
      utf8(fn, p, "parameter name");
      w.PutStr(p);
    }
    w.Put<uint32_t>(static_cast<uint32_t>(fn.bound.size()));
    for (const auto& [index, value] : fn.bound) {
      w.Put<int64_t>(index);
      switch (value.type_index()) {
        case ffi::TypeIndex::kTVMFFINone:
          w.Put<uint8_t>(kNone);
          break;
        case ffi::TypeIndex::kTVMFFIInt:
          w.Put<uint8_t>(kInt);
          w.Put<int64_t>(value.cast<int64_t>());
          break;
        case ffi::TypeIndex::kTVMFFIFloat:
          w.Put<uint8_t>(kFloat);
          w.Put<double>(value.cast<double>());
          break;
        case ffi::TypeIndex::kTVMFFIBool:
          w.Put<uint8_t>(kBool);
          w.Put<uint8_t>(value.cast<bool>() ? 1 : 0);
          break;
        case ffi::TypeIndex::kTVMFFIStr:
        case ffi::TypeIndex::kTVMFFISmallStr:
          w.Put<uint8_t>(kStr);
          utf8(fn, value.cast<ffi::String>(), "bound string");
          w.PutStr(value.cast<ffi::String>());
          break;
        case ffi::TypeIndex::kTVMFFITensor: {
          ffi::Tensor tensor = value.cast<ffi::Tensor>();
          const DLTensor* t = tensor.GetDLTensorPtr();
          if (!tensor.IsContiguous()) {
            TVM_FFI_THROW(ValueError) << "cannot save function '" << fn.name << "' position "
                                      << index << ": the bound tensor is not contiguous";
          }
          std::string problem = TensorProblem(t->dtype, t->device.device_type, t->device.device_id);
          uint64_t shape_bytes = 0;
          if (problem.empty()) problem = ShapeProblem(t->shape, t->ndim, t->dtype, &shape_bytes);
          if (!problem.empty()) {
            TVM_FFI_THROW(ValueError)
                << "cannot save function '" << fn.name << "' position " << index << ": " << problem;
          }
          w.Put<uint8_t>(kTensor);
          w.PutStr(ffi::DLDataTypeToString(t->dtype));
          w.Put<int32_t>(t->device.device_type);
          w.Put<int32_t>(t->device.device_id);
          w.Put<uint32_t>(static_cast<uint32_t>(t->ndim));
          for (int i = 0; i < t->ndim; ++i) w.Put<int64_t>(t->shape[i]);
          size_t nbytes = ffi::GetDataSize(*t);
          w.Put<uint64_t>(nbytes);
          size_t offset_at = w.size();
          w.Put<uint64_t>(0);
          size_t hash_at = w.size();
          w.Put<uint64_t>(0);
          tensors.push_back({tensor, nbytes, offset_at, hash_at});
          break;
        }
        default:
          TVM_FFI_THROW(TypeError)
              << "cannot save function '" << fn.name << "' position " << index << ": a bound "
              << value.GetTypeKey()
              << " cannot be serialised (only tensors, int, float, bool, str and None can)";
      }
    }
    if (with_outputs) WriteOutputs(&w, fn.outputs);
  }
  const size_t meta_size = w.size() - kHeaderSize;
  if (region) {
    // Offsets count from the region's start; the payloads are written by WriteRegion.
    size_t end = kRegionHeaderSize;
    if (region->hashes_given && !region->hashes.empty() &&
        region->hashes.size() != tensors.size()) {
      TVM_FFI_THROW(ValueError) << "payload hashes: " << region->hashes.size() << " given for "
                                << tensors.size() << " tensors";
    }
    for (size_t k = 0; k < tensors.size(); ++k) {
      Pending& p = tensors[k];
      size_t offset = AlignUp(end);
      w.Patch<uint64_t>(p.offset_at, offset);
      w.Patch<uint64_t>(p.hash_at, !region->hashes_given
                                       ? Hash(HostBytes(p.tensor, p.nbytes).data(), p.nbytes)
                                   : region->hashes.empty() ? 0
                                                            : region->hashes[k]);
      end = offset + p.nbytes;
    }
    w.Patch<uint64_t>(region_size_at, end);
  }
  if (!region) {  // payloads follow the metadata, each at the next multiple of 64
    for (Pending& p : tensors) {
      size_t offset = AlignUp(w.size());
      w.str().resize(offset, '\0');
      w.str().resize(offset + p.nbytes);
      CopyTensorToHost(p.tensor, &w.str()[offset], p.nbytes);
      w.Patch<uint64_t>(p.offset_at, offset);
      w.Patch<uint64_t>(p.hash_at, Hash(w.str().data() + offset, p.nbytes));
    }
  }
  w.Patch<uint64_t>(16, w.size());
  w.Patch<uint64_t>(24, meta_size);
  w.Patch<uint64_t>(32, MetadataHash(w.str().data(), meta_size));
  return std::move(w.str());
}

namespace {

/*! \brief The bound tensors in the order Encode lays out their payloads. */
std::vector<ffi::Tensor> RegionTensors(const std::vector<FunctionRecord>& functions) {
  std::vector<ffi::Tensor> tensors;
  for (const FunctionRecord& fn : functions) {
    for (const auto& [index, value] : fn.bound) {
      if (value.type_index() == ffi::TypeIndex::kTVMFFITensor)
        tensors.push_back(value.cast<ffi::Tensor>());
    }
  }
  return tensors;
}

/*! \brief The size of the region holding `tensors` (header, payloads at multiples of 64). */
size_t RegionEnd(const std::vector<ffi::Tensor>& tensors) {
  size_t end = kRegionHeaderSize;
  for (const ffi::Tensor& t : tensors) end = AlignUp(end) + ffi::GetDataSize(*t.GetDLTensorPtr());
  return end;
}

std::string HeaderOfRegion(uint64_t size, uint64_t link) {
  std::string header(kRegionHeaderSize, '\0');
  const uint32_t version = kVersionNoOutputs;
  std::memcpy(&header[0], kRegionMagic, 8);
  std::memcpy(&header[8], &version, 4);
  std::memcpy(&header[16], &size, 8);
  std::memcpy(&header[24], &link, 8);
  return header;
}

}  // namespace

std::string RegionHeader(const std::vector<FunctionRecord>& functions,
                         const ExternalRegion& region) {
  return HeaderOfRegion(RegionEnd(RegionTensors(functions)), region.link);
}

std::string EncodeTrailer(uint64_t offset, uint64_t size, uint64_t link) {
  std::string trailer(kTrailerSize, '\0');
  std::memcpy(&trailer[0], kTrailerMagic, 8);
  std::memcpy(&trailer[8], &kTrailerVersion, 4);
  std::memcpy(&trailer[16], &offset, 8);
  std::memcpy(&trailer[24], &size, 8);
  std::memcpy(&trailer[32], &link, 8);
  const uint64_t h = Hash(trailer.data(), 40);
  std::memcpy(&trailer[40], &h, 8);
  return trailer;
}

bool DecodeTrailer(const char* trailer, uint64_t* offset, uint64_t* size, uint64_t* link) {
  uint32_t version;
  uint64_t h;
  std::memcpy(&version, trailer + 8, 4);
  std::memcpy(offset, trailer + 16, 8);
  std::memcpy(size, trailer + 24, 8);
  std::memcpy(link, trailer + 32, 8);
  std::memcpy(&h, trailer + 40, 8);
  return std::memcmp(trailer, kTrailerMagic, 8) == 0 && version == kTrailerVersion &&
         h == Hash(trailer, 40);
}

std::vector<uint64_t> AppendRegion(const std::vector<FunctionRecord>& functions,
                                   const ExternalRegion& region, const std::string& path,
                                   const ffi::Optional<ffi::Function>& progress) {
  const std::vector<ffi::Tensor> tensors = RegionTensors(functions);
  const size_t total = RegionEnd(tensors);
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot append the payload region to " << path << ": "
                                << std::strerror(errno);
  }
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    close(*f);
    delete f;
  });
  struct stat st;
  if (fstat(fd, &st) != 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot append the payload region to " << path << ": "
                                << std::strerror(errno);
  }
  const uint64_t start =
      static_cast<uint64_t>(st.st_size) + kAppendAlignment - 1 -
      (static_cast<uint64_t>(st.st_size) + kAppendAlignment - 1) % kAppendAlignment;
  uint64_t at = static_cast<uint64_t>(st.st_size);
  // pwrite at explicit offsets: every byte goes to the file once, straight from the tensor.
  auto put = [&](const char* data, size_t n) {
    while (n > 0) {
      const ssize_t done = pwrite(fd, data, std::min<size_t>(n, size_t{1} << 30), at);
      if (done < 0 && errno == EINTR) continue;
      if (done <= 0) {
        TVM_FFI_THROW(RuntimeError)
            << "writing the payload region to " << path
            << " failed: " << (done < 0 ? std::strerror(errno) : "no progress");
      }
      data += done;
      n -= static_cast<size_t>(done);
      at += static_cast<uint64_t>(done);
    }
  };
  static const char zeros[kPayloadAlignment] = {};
  auto pad_to = [&](uint64_t target) {
    while (at < target) put(zeros, std::min<uint64_t>(target - at, sizeof(zeros)));
  };
  constexpr size_t kChunk = size_t{64} << 20;  // progress granularity
  constexpr size_t kPiece = size_t{4} << 20;   // hashed, then written while still in the cache
  std::vector<uint64_t> hashes;
  auto report = [&](uint64_t done) {
    if (progress.has_value()) (*progress)(static_cast<int64_t>(done), static_cast<int64_t>(total));
  };
  pad_to(start);
  const std::string header = HeaderOfRegion(total, region.link);
  put(header.data(), header.size());
  for (const ffi::Tensor& t : tensors) {
    const size_t nbytes = ffi::GetDataSize(*t.GetDLTensorPtr());
    pad_to(start + AlignUp(at - start));
    HostBytes host(t, nbytes);
    Hasher hasher;
    for (size_t done = 0; done < nbytes;) {
      const size_t n = std::min(kChunk, nbytes - done);
      for (size_t piece = 0; piece < n; piece += kPiece) {
        const size_t m = std::min(kPiece, n - piece);
        hasher.Update(host.data() + done + piece, m);
        put(host.data() + done + piece, m);
      }
      done += n;
      if (at - start < total) report(at - start);
    }
    hashes.push_back(hasher.Final());
  }
  const std::string trailer = EncodeTrailer(start, total, region.link);
  put(trailer.data(), trailer.size());
  report(total);
  return hashes;
}

void WriteRegion(const std::vector<FunctionRecord>& functions, const ExternalRegion& region,
                 const std::string& path, size_t lead) {
  const std::vector<ffi::Tensor> tensors = RegionTensors(functions);
  const size_t end = RegionEnd(tensors);
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), std::fclose);
  if (!file) TVM_FFI_THROW(RuntimeError) << "cannot write the payload region to " << path;
  auto put = [&](const void* data, size_t n) {
    if (n != 0 && std::fwrite(data, 1, n, file.get()) != n) {
      TVM_FFI_THROW(RuntimeError) << "writing the payload region to " << path << " failed";
    }
  };
  static const char zeros[kPayloadAlignment] = {};
  for (size_t left = lead; left > 0;) {  // room for an object file's header before the region
    size_t n = std::min(left, sizeof(zeros));
    put(zeros, n);
    left -= n;
  }
  const std::string header = HeaderOfRegion(end, region.link);
  put(header.data(), header.size());
  size_t written = kRegionHeaderSize;
  for (const ffi::Tensor& t : tensors) {
    size_t nbytes = ffi::GetDataSize(*t.GetDLTensorPtr());
    put(zeros, AlignUp(written) - written);
    written = AlignUp(written);
    put(HostBytes(t, nbytes).data(), nbytes);
    written += nbytes;
  }
  // A write error can surface only when the buffered data is flushed (a full disk): check it.
  if (std::fclose(file.release()) != 0) {
    TVM_FFI_THROW(RuntimeError) << "writing the payload region to " << path << " failed";
  }
}

// =============================================================================================
namespace {

class Reader {
 public:
  Reader(const char* data, size_t begin, size_t end) : data_(data), pos_(begin), end_(end) {}

  template <typename T>
  T Get(const char* what) {
    Need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string GetStr(const char* what) {
    uint32_t n = Get<uint32_t>(what);
    Need(n, what);
    if (!IsValidUtf8(data_ + pos_, n)) {
      TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << what << " at byte " << pos_
                                << " is not valid UTF-8";
    }
    std::string s(data_ + pos_, n);
    pos_ += n;
    return s;
  }
  /*! \brief A count of items each at least `min_item` bytes long: refuse counts that cannot fit. */
  uint32_t GetCount(const char* what, size_t min_item) {
    uint32_t n = Get<uint32_t>(what);
    if (static_cast<uint64_t>(n) * min_item > end_ - pos_) {
      TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << what << " " << n
                                << " cannot fit in the " << (end_ - pos_)
                                << " bytes of metadata left";
    }
    return n;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return end_ - pos_; }

 private:
  void Need(size_t n, const char* what) {
    if (n > end_ - pos_) {
      TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << what << " at byte " << pos_
                                << " needs " << n << " bytes, " << (end_ - pos_) << " left";
    }
  }
  const char* data_;
  size_t pos_;
  size_t end_;
};

struct TensorMeta {
  DLDataType dtype;
  int32_t device_type;
  int32_t device_id;
  std::vector<int64_t> shape;
  uint64_t nbytes;
  uint64_t offset;
  uint64_t hash;
};

struct ParsedValue {
  int64_t index;
  uint8_t kind;
  ffi::Any scalar;  // kinds 0-4
  TensorMeta tensor;
};

struct ParsedFunction {
  ffi::String name;
  ffi::Array<ffi::String> param_names;
  std::vector<ParsedValue> values;
  Outputs outputs;  // version 2
};

struct Parsed {
  uint32_t version;
  uint64_t total;
  bool external = false;     // payloads in a region of the library file
  std::string weights_file;  // flag 2: the region is the data of this safetensors file
  bool appended = false;     // flag 4: the region is appended to the library file
  std::string symbol;        // that region's symbol
  uint64_t link = 0;         // the number the region header must repeat
  uint64_t region_size = 0;
  std::vector<ParsedFunction> functions;
};

[[noreturn]] void Corrupt(const std::string& msg) {
  TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: " << msg;
  TVM_FFI_UNREACHABLE();
}

uint64_t CheckedByteSize(const std::vector<int64_t>& shape, DLDataType dtype,
                         const std::string& where) {
  uint64_t bytes = 0;
  std::string problem = ShapeProblem(shape.data(), shape.size(), dtype, &bytes);
  if (!problem.empty()) Corrupt(where + ": " + problem);
  return bytes;
}

/*! \brief Version 2: the outputs of one function, bounds-checked and checked for consistency. */
void ReadOutputs(Reader* r, ParsedFunction* fn, uint32_t num_names) {
  const std::string who = "function '" + std::string(fn->name) + "'";
  uint32_t count = r->GetCount("output count", 16);
  for (uint32_t k = 0; k < count; ++k) {
    Output o;
    o.position = r->Get<int64_t>("output position");
    std::string dtype = r->GetStr("output dtype");
    try {
      o.dtype = ffi::StringToDLDataType(dtype);
    } catch (const ffi::Error&) {
      Corrupt(who + " output at position " + std::to_string(o.position) + ": unknown dtype '" +
              dtype + "'");
    }
    uint32_t ndim = r->Get<uint32_t>("output ndim");
    if (ndim > kMaxNdim) {
      Corrupt(who + " output at position " + std::to_string(o.position) + ": ndim " +
              std::to_string(ndim) + " exceeds " + std::to_string(kMaxNdim));
    }
    for (uint32_t d = 0; d < ndim; ++d) {
      int64_t source = r->Get<int64_t>("output dimension source");
      int64_t value = r->Get<int64_t>("output dimension value");
      o.shape.push_back(OutputDim{source, value});
    }
    fn->outputs.push_back(std::move(o));
  }
  std::vector<int64_t> bound;
  for (const ParsedValue& v : fn->values) bound.push_back(v.index);
  try {
    detail::ValidateRecordedOutputs(fn->outputs, bound, num_names, who);
  } catch (const ffi::Error& err) {
    Corrupt(err.message());
  }
}

Parsed Parse(const char* data, size_t size) {
  static_assert(sizeof(uint64_t) == 8 && sizeof(double) == 8);
  if (size < kHeaderSize) {
    Corrupt("truncated: " + std::to_string(size) + " bytes is shorter than the " +
            std::to_string(kHeaderSize) + "-byte header");
  }
  if (std::memcmp(data, kMagic, sizeof(kMagic)) != 0) {
    TVM_FFI_THROW(ValueError) << "not partial_apply data: bad magic (expected \"TVMPARTL\")";
  }
  Reader header(data, sizeof(kMagic), kHeaderSize);
  Parsed out;
  out.version = header.Get<uint32_t>("version");
  if (out.version > kVersion) {
    TVM_FFI_THROW(ValueError) << "partial_apply data has format version " << out.version
                              << ", newer than this tvm-partial reads (" << kVersion
                              << "); upgrade tvm-partial";
  }
  if (out.version == 0) Corrupt("format version 0 is invalid");
  uint32_t flags = header.Get<uint32_t>("flags");
  if (flags != 0 && flags != kFlagExternalPayloads &&
      flags != (kFlagExternalPayloads | kFlagWeightsFile) &&
      flags != (kFlagExternalPayloads | kFlagAppended)) {
    Corrupt("unknown flags " + std::to_string(flags));
  }
  out.appended = (flags & kFlagAppended) != 0;
  out.external = (flags & kFlagExternalPayloads) != 0;
  out.total = header.Get<uint64_t>("total size");
  if (out.total != size) {
    Corrupt("size mismatch: the header says " + std::to_string(out.total) + " bytes, got " +
            std::to_string(size) + (size < out.total ? " (truncated)" : ""));
  }
  uint64_t meta_size = header.Get<uint64_t>("metadata size");
  if (meta_size > size - kHeaderSize) {
    Corrupt("metadata of " + std::to_string(meta_size) + " bytes runs past the end (" +
            std::to_string(size) + " bytes)");
  }
  uint64_t meta_hash = header.Get<uint64_t>("metadata hash");
  if (kVerifyChecksums && meta_hash != MetadataHash(data, meta_size)) {
    Corrupt("metadata checksum mismatch");
  }

  const size_t meta_end = kHeaderSize + meta_size;
  Reader r(data, kHeaderSize, meta_end);
  // Payloads follow the metadata in the blob, or fill a region of the library file.
  uint64_t limit = size;
  if (out.external) {
    out.symbol = r.GetStr("payload region symbol");
    out.link = r.Get<uint64_t>("payload region link");
    out.region_size = r.Get<uint64_t>("payload region size");
    if (flags & kFlagWeightsFile) {
      out.weights_file = r.GetStr("weights file name");
      if (out.weights_file.empty() || out.weights_file.find('\0') != std::string::npos) {
        Corrupt("the weights file name is empty or holds a NUL byte");
      }
    }
    if (out.symbol.rfind(kRegionSymbolPrefix, 0) != 0) {
      Corrupt("payload region symbol '" + out.symbol + "' does not start with " +
              kRegionSymbolPrefix);
    }
    if (size != meta_end) Corrupt("data after the metadata of a blob whose payloads are external");
    limit = out.region_size;
  }
  uint32_t num_functions = r.GetCount("function count", 12);
  size_t expected_offset =
      out.external ? kRegionHeaderSize : AlignUp(meta_end);  // canonical layout
  size_t payload_end = out.external ? kRegionHeaderSize : meta_end;
  std::unordered_set<std::string> seen;  // function names so far: duplicates in O(1) each
  seen.reserve(num_functions);
  out.functions.reserve(num_functions);
  for (uint32_t f = 0; f < num_functions; ++f) {
    ParsedFunction fn;
    std::string name = r.GetStr("function name");
    if (!seen.insert(name).second) Corrupt("function '" + name + "' appears twice");
    fn.name = std::move(name);
    uint32_t num_names = r.GetCount("parameter name count", 4);
    for (uint32_t i = 0; i < num_names; ++i) fn.param_names.push_back(r.GetStr("parameter name"));
    uint32_t num_bound = r.GetCount("binding count", 9);
    int64_t last_index = -1;
    for (uint32_t b = 0; b < num_bound; ++b) {
      ParsedValue v;
      v.index = r.Get<int64_t>("position");
      const std::string where =
          "function '" + std::string(fn.name) + "' position " + std::to_string(v.index);
      if (v.index <= last_index) Corrupt(where + " is negative or out of order");
      if (v.index > detail::kMaxPosition) {
        Corrupt(where + " cannot be reached: a call passes at most " +
                std::to_string(detail::kMaxCallArgs) + " arguments, so positions go up to " +
                std::to_string(detail::kMaxPosition));
      }
      last_index = v.index;
      if (num_names > 0 && v.index >= static_cast<int64_t>(num_names)) {
        Corrupt(where + " is past its " + std::to_string(num_names) + " parameters");
      }
      v.kind = r.Get<uint8_t>("value kind");
      switch (v.kind) {
        case kNone:
          v.scalar = nullptr;
          break;
        case kInt:
          v.scalar = r.Get<int64_t>("int value");
          break;
        case kFloat:
          v.scalar = r.Get<double>("float value");
          break;
        case kBool: {
          uint8_t b8 = r.Get<uint8_t>("bool value");
          if (b8 > 1) Corrupt(where + ": bool value " + std::to_string(b8));
          v.scalar = b8 == 1;
          break;
        }
        case kStr:
          v.scalar = ffi::String(r.GetStr("str value"));
          break;
        case kTensor: {
          TensorMeta& t = v.tensor;
          std::string dtype = r.GetStr("tensor dtype");
          try {
            t.dtype = ffi::StringToDLDataType(dtype);
          } catch (const ffi::Error&) {
            Corrupt(where + ": unknown dtype '" + dtype + "'");
          }
          if (std::string(ffi::DLDataTypeToString(t.dtype)) != dtype) {
            Corrupt(where + ": dtype '" + dtype + "' is not written as the writer writes it ('" +
                    std::string(ffi::DLDataTypeToString(t.dtype)) + "')");
          }
          t.device_type = r.Get<int32_t>("device type");
          t.device_id = r.Get<int32_t>("device id");
          std::string problem = TensorProblem(t.dtype, t.device_type, t.device_id);
          if (!problem.empty()) Corrupt(where + ": " + problem);
          uint32_t ndim = r.Get<uint32_t>("tensor ndim");
          if (ndim > kMaxNdim)
            Corrupt(where + ": ndim " + std::to_string(ndim) + " exceeds " +
                    std::to_string(kMaxNdim));
          for (uint32_t i = 0; i < ndim; ++i) t.shape.push_back(r.Get<int64_t>("tensor shape"));
          t.nbytes = r.Get<uint64_t>("tensor byte length");
          t.offset = r.Get<uint64_t>("tensor payload offset");
          t.hash = r.Get<uint64_t>("tensor payload hash");
          uint64_t expected_bytes = CheckedByteSize(t.shape, t.dtype, where);
          if (t.nbytes != expected_bytes) {
            Corrupt(where + ": byte length " + std::to_string(t.nbytes) +
                    " does not match its shape and dtype (" + std::to_string(expected_bytes) + ")");
          }
          if (t.offset != expected_offset) {
            Corrupt(where + ": payload offset " + std::to_string(t.offset) +
                    " is not the expected " + std::to_string(expected_offset));
          }
          if (t.offset > limit || t.nbytes > limit - t.offset) {
            Corrupt(where + ": payload of " + std::to_string(t.nbytes) + " bytes at offset " +
                    std::to_string(t.offset) + " runs past the end (" + std::to_string(limit) +
                    " bytes)");
          }
          for (size_t pad = payload_end; !out.external && pad < t.offset; ++pad) {
            if (data[pad] != 0) Corrupt("non-zero padding byte at " + std::to_string(pad));
          }
          payload_end = t.offset + t.nbytes;
          expected_offset = AlignUp(payload_end);
          break;
        }
        default:
          Corrupt(where + ": unknown value kind " + std::to_string(v.kind));
      }
      fn.values.push_back(std::move(v));
    }
    if (out.version >= 2) ReadOutputs(&r, &fn, num_names);
    out.functions.push_back(std::move(fn));
  }
  if (out.version >= 2 &&
      std::all_of(out.functions.begin(), out.functions.end(),
                  [](const ParsedFunction& fn) { return fn.outputs.empty(); })) {
    Corrupt("format version 2 without outputs (such data is written as version 1)");
  }
  if (r.left() != 0) Corrupt(std::to_string(r.left()) + " unread bytes at the end of the metadata");
  if (payload_end != limit) {
    Corrupt(std::to_string(limit - payload_end) + " bytes after the last payload");
  }
  return out;
}

// A host tensor viewing a payload region: no copy; it keeps the library that maps it loaded.
struct RegionView {
  const char* data;
  std::shared_ptr<void> keepalive;
  void AllocData(DLTensor* tensor) { tensor->data = const_cast<char*>(data); }
  void FreeData(DLTensor* tensor) { tensor->data = nullptr; }
};

/*!
 * \brief The tensor for one binding. `region` is null for payloads inside the blob (hashed and
 *        copied); otherwise the payload is in a mapped region and host tensors view it in place.
 */
ffi::Tensor Materialise(const TensorMeta& t, const char* payload, const std::string& where,
                        const region::MappedRegion* mapped) {
  if (mapped == nullptr && kVerifyChecksums && Hash(payload, t.nbytes) != t.hash) {
    Corrupt(where + ": tensor payload checksum mismatch");
  }
  DLDevice device{static_cast<DLDeviceType>(t.device_type), t.device_id};
  if (t.device_type == kDLCPU && mapped != nullptr &&
      reinterpret_cast<uintptr_t>(payload) % kPayloadAlignment == 0) {
    return ffi::Tensor::FromNDAlloc(RegionView{payload, mapped->keepalive}, ffi::Shape(t.shape),
                                    t.dtype, device);
  }
  if (t.device_type == kDLCPU) {
    ffi::Tensor out = AlignedEmpty(ffi::Shape(t.shape), t.dtype, device);
    if (t.nbytes) std::memcpy(out.data_ptr(), payload, t.nbytes);
    return out;
  }
  const std::string dev = DeviceString(t.device_type, t.device_id);
  auto api = ffi::Function::GetGlobal(std::string("device_api.") + DeviceName(t.device_type));
  auto copy = ffi::Function::GetGlobal("runtime.TVMTensorCopyFromBytes");
  if (!api.has_value() || !copy.has_value()) {
    TVM_FFI_THROW(RuntimeError) << where << " was bound on device " << dev
                                << ", which this process cannot reach: no TVM runtime for "
                                << DeviceName(t.device_type) << " is loaded";
  }
  auto exists = ffi::Function::GetGlobal("runtime.GetDeviceAttr");
  if (exists.has_value() && !(*exists)(t.device_type, t.device_id, 0).cast<bool>()) {
    TVM_FFI_THROW(RuntimeError) << where << " was bound on device " << dev
                                << ", which does not exist in this process";
  }
  ffi::Tensor out = AlignedEmpty(ffi::Shape(t.shape), t.dtype, device);
  (*copy)(out, const_cast<void*>(static_cast<const void*>(payload)),
          static_cast<int64_t>(t.nbytes));
  return out;
}

}  // namespace

std::vector<FunctionRecord> Decode(const char* data, size_t size) {
  Parsed parsed = Parse(data, size);
  region::MappedRegion mapped;
  const char* payloads = data;
  if (parsed.external) {
    auto matches = [&parsed](const char* h) {
      uint32_t version;
      uint64_t region_size, link;
      std::memcpy(&version, h + 8, 4);
      std::memcpy(&region_size, h + 16, 8);
      std::memcpy(&link, h + 24, 8);
      return std::memcmp(h, kRegionMagic, 8) == 0 && version == kVersionNoOutputs &&
             region_size == parsed.region_size && link == parsed.link;
    };
    const bool in_file = !parsed.weights_file.empty();
    // With a weights file or an appended region the library's region is its header alone (it
    // says which library this is).
    const bool header_only = in_file || parsed.appended;
    mapped = region::Find(parsed.symbol, header_only ? kRegionHeaderSize : parsed.region_size);
    if (!matches(mapped.data)) {
      Corrupt("the payload region " + parsed.symbol + " in " + mapped.library +
              " does not match its metadata (bad magic, version, size or link)");
    }
    if (parsed.appended) {
      mapped = region::MapAppended(mapped.library, parsed.region_size, parsed.link);
      if (!matches(mapped.data)) {
        Corrupt("the payload region appended to " + mapped.library +
                " does not match its metadata (bad magic, version, size or link)");
      }
    }
    if (in_file) {
      const std::string path = weights::Beside(mapped.library, parsed.weights_file);
      mapped = weights::Map(path, parsed.region_size);
      std::vector<weights::Span> spans;
      for (const ParsedFunction& fn : parsed.functions) {
        for (const ParsedValue& v : fn.values) {
          if (v.kind != kTensor) continue;
          spans.push_back(
              {v.tensor.offset, v.tensor.offset + v.tensor.nbytes,
               "function '" + std::string(fn.name) + "' position " + std::to_string(v.index)});
        }
      }
      weights::CheckHeader(path, spans);
      if (!matches(mapped.data)) {
        TVM_FFI_THROW(ValueError)
            << "weights file " << path << " was not written with this artifact "
            << "(its region header does not match the metadata): export again, "
            << "or load(path, weights_file=...) to bind other weights";
      }
    }
    payloads = mapped.data;
  }
  std::vector<FunctionRecord> out;
  for (ParsedFunction& fn : parsed.functions) {
    FunctionRecord rec{fn.name, fn.param_names, {}};
    rec.outputs = fn.outputs;
    for (ParsedValue& v : fn.values) {
      if (v.kind == kTensor) {
        std::string where =
            "function '" + std::string(fn.name) + "' position " + std::to_string(v.index);
        rec.bound.emplace_back(v.index, Materialise(v.tensor, payloads + v.tensor.offset, where,
                                                    parsed.external ? &mapped : nullptr));
      } else {
        rec.bound.emplace_back(v.index, std::move(v.scalar));
      }
    }
    out.push_back(std::move(rec));
  }
  return out;
}

ffi::Map<ffi::String, ffi::Any> Describe(const char* data, size_t size) {
  static const char* kKindNames[] = {"None", "int", "float", "bool", "str", "tensor"};
  Parsed parsed = Parse(data, size);
  ffi::Array<ffi::Any> functions;
  uint64_t constant_bytes = 0;
  for (const ParsedFunction& fn : parsed.functions) {
    ffi::Array<ffi::Any> bindings;
    for (const ParsedValue& v : fn.values) {
      ffi::Map<ffi::String, ffi::Any> b;
      b.Set("index", v.index);
      b.Set("kind", ffi::String(kKindNames[v.kind]));
      if (v.kind == kTensor) {
        b.Set("dtype", ffi::DLDataTypeToString(v.tensor.dtype));
        b.Set("shape", ffi::Array<int64_t>(v.tensor.shape.begin(), v.tensor.shape.end()));
        b.Set("device", ffi::String(DeviceString(v.tensor.device_type, v.tensor.device_id)));
        b.Set("bytes", static_cast<int64_t>(v.tensor.nbytes));
        // Where the payload is (from the blob's start, or the region's) and its recorded hash.
        b.Set("offset", static_cast<int64_t>(v.tensor.offset));
        b.Set("hash", static_cast<int64_t>(v.tensor.hash));
        constant_bytes += v.tensor.nbytes;
      } else {
        b.Set("value", v.scalar);
      }
      bindings.push_back(b);
    }
    ffi::Map<ffi::String, ffi::Any> f;
    f.Set("name", fn.name);
    f.Set("param_names", fn.param_names);
    f.Set("bindings", bindings);
    f.Set("outputs", detail::OutputsToAny(fn.outputs));
    functions.push_back(f);
  }
  ffi::Map<ffi::String, ffi::Any> out;
  out.Set("version", static_cast<int64_t>(parsed.version));
  out.Set("total_bytes", static_cast<int64_t>(parsed.total));
  out.Set("constant_bytes", static_cast<int64_t>(constant_bytes));
  out.Set("payloads", ffi::String(parsed.external ? "region " + parsed.symbol : "inline"));
  if (!parsed.weights_file.empty()) out.Set("weights_file", ffi::String(parsed.weights_file));
  if (parsed.appended) out.Set("region_appended", true);
  if (parsed.external) {
    out.Set("region_link", static_cast<int64_t>(parsed.link));
    out.Set("region_size", static_cast<int64_t>(parsed.region_size));
  }
  out.Set("functions", functions);
  return out;
}

std::string ResealForTesting(std::string blob) {
  if (blob.size() < kHeaderSize) Corrupt("too short to reseal");
  uint64_t meta_size;
  std::memcpy(&meta_size, blob.data() + 24, 8);
  if (meta_size > blob.size() - kHeaderSize) Corrupt("metadata size past the end; cannot reseal");
  uint64_t h = MetadataHash(blob.data(), meta_size);
  std::memcpy(&blob[32], &h, 8);
  return blob;
}

}  // namespace format
}  // namespace tvm_partial
