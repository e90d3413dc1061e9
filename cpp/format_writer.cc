// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file format_writer.cc
 * \brief The writer of the partial module format (format.h): the blob, and the payload region of
 *        a zero-copy export.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "device.h"
#include "format.h"
#include "format_common.h"
#include "hash.h"
#include "unique_fd.h"

namespace tvm_partial {
namespace format {

namespace {

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

/*! \brief The tensor's data when it lives in host memory (readable directly), else null. */
const char* HostData(const DLTensor* t) {
  if (!detail::IsHostDevice(t->device)) return nullptr;
  return static_cast<const char*>(t->data) + t->byte_offset;
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
                                << detail::DeviceString(t->device.device_type, t->device.device_id)
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
                                       ? hash::Hash(HostBytes(p.tensor, p.nbytes).data(), p.nbytes)
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
      w.Patch<uint64_t>(p.hash_at, hash::Hash(w.str().data() + offset, p.nbytes));
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
  const uint64_t h = hash::Hash(trailer.data(), 40);
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
         h == hash::Hash(trailer, 40);
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
  const detail::UniqueFd closer(fd);
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
    hash::Hasher hasher;
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

}  // namespace format
}  // namespace tvm_partial
