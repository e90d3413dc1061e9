// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/aligned_tensor.cc
 * \brief Contiguous, 64-byte-aligned tensors (TVM kernels assume the alignment): what bind
 *        converts values to and the loader materialises.
 */
#include "bind/aligned_tensor.h"

#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "device.h"

namespace tvm_partial {

namespace detail {

bool TensorBytes(uint64_t numel, DLDataType dtype, uint64_t* bytes) {
  // ceil(numel * bits / 8) without forming numel * bits (which can overflow): each group of 8
  // elements takes `bits` bytes, the rest under 7 * bits (< 2^27) bits.
  const uint64_t bits = static_cast<uint64_t>(dtype.bits) * dtype.lanes;
  uint64_t whole, total;
  if (__builtin_mul_overflow(numel / 8, bits, &whole) ||
      __builtin_add_overflow(whole, (numel % 8 * bits + 7) / 8, &total) ||
      total > static_cast<uint64_t>(INT64_MAX)) {
    return false;
  }
  *bytes = total;
  return true;
}

std::string ShapeString(const ffi::Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace detail

namespace {

uint64_t CheckedBytes(const ffi::Shape& shape, DLDataType dtype) {
  uint64_t numel = 1;
  bool overflow = false, empty = false;  // a 0 extent makes any product of the others 0 bytes
  for (int64_t extent : shape) {
    if (extent < 0) {
      TVM_FFI_THROW(ValueError) << "cannot allocate a tensor of shape "
                                << detail::ShapeString(shape) << ": negative extent " << extent;
    }
    overflow = __builtin_mul_overflow(numel, static_cast<uint64_t>(extent), &numel) || overflow;
    empty = empty || extent == 0;
  }
  uint64_t bytes = 0;
  if (!empty && (overflow || !detail::TensorBytes(numel, dtype, &bytes))) {
    TVM_FFI_THROW(ValueError) << "cannot allocate a tensor of shape " << detail::ShapeString(shape)
                              << " and dtype " << ffi::DLDataTypeToString(dtype)
                              << ": it takes 2^63 bytes or more";
  }
  return bytes;
}

// Host memory allocated before the tensor object (nothing leaks if that throws), then adopted.
struct AlignedHostAlloc {
  void* data;
  void AllocData(DLTensor* tensor) { tensor->data = data; }
  void FreeData(DLTensor* tensor) { std::free(tensor->data); }
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

ffi::Function RuntimeGlobal(const char* name, DLDevice device) {
  auto f = ffi::Function::GetGlobal(name);
  if (!f.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "a tensor on device type " << device.device_type
                                << " needs the TVM runtime (" << name << "); import tvm first";
  }
  return *f;
}

// Copy a strided host tensor into contiguous memory, one innermost run at a time.
void StridedCopy(const DLTensor& src, int dim, const char* from, char** to, size_t elem) {
  const int64_t n = src.shape[dim];
  const int64_t stride = src.strides ? src.strides[dim] : 1;
  if (dim == src.ndim - 1) {
    if (stride == 1) {
      std::memcpy(*to, from, n * elem);
      *to += n * elem;
    } else {
      for (int64_t i = 0; i < n; ++i, *to += elem) std::memcpy(*to, from + i * stride * elem, elem);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) StridedCopy(src, dim + 1, from + i * stride * elem, to, elem);
}

}  // namespace

ffi::Tensor AlignedEmpty(ffi::Shape shape, DLDataType dtype, DLDevice device) {
  const uint64_t nbytes = CheckedBytes(shape, dtype);
  if (device.device_type == kDLCPU) {
    // aligned_alloc needs a non-zero multiple of the alignment; nbytes <= INT64_MAX: no wrap.
    constexpr uint64_t kAlign = detail::kTensorAlignment;
    const uint64_t padded = (std::max<uint64_t>(nbytes, 1) + kAlign - 1) / kAlign * kAlign;
    std::unique_ptr<void, FreeDeleter> data(
        padded > SIZE_MAX
            ? nullptr
            : std::aligned_alloc(detail::kTensorAlignment, static_cast<size_t>(padded)));
    if (data == nullptr) {
      TVM_FFI_THROW(MemoryError) << "out of memory allocating a tensor of " << nbytes << " bytes";
    }
    ffi::Tensor tensor =
        ffi::Tensor::FromNDAlloc(AlignedHostAlloc{data.get()}, shape, dtype, device);
    data.release();  // the tensor owns it now
    return tensor;
  }
  // TVM's device allocators align to >= 64 bytes but size with GetDataSize, which counts bits in
  // 64 bits: past 2^61 bytes it would wrap and allocate less.
  if (nbytes >= (uint64_t{1} << 61)) {
    TVM_FFI_THROW(MemoryError) << "out of memory allocating a tensor of " << nbytes << " bytes on "
                               << detail::DeviceString(device.device_type, device.device_id)
                               << " (the TVM runtime allocates less than 2^61 bytes)";
  }
  return RuntimeGlobal("runtime.TVMTensorAllocWithScope", device)(shape, dtype, device, nullptr)
      .cast<ffi::Tensor>();
}

ffi::Tensor AlignedCopy(const ffi::Tensor& src, DLDevice device) {
  const DLTensor& s = *src.GetDLTensorPtr();
  ffi::Tensor dst = AlignedEmpty(ffi::Shape(src.shape()), s.dtype, device);
  const size_t nbytes = CheckedBytes(ffi::Shape(src.shape()), s.dtype);  // fits: dst holds it
  if (nbytes == 0) return dst;
  const bool contiguous = src.IsContiguous();
  if (detail::IsHostDevice(s.device) && device.device_type == kDLCPU) {
    const char* from = static_cast<const char*>(s.data) + s.byte_offset;
    char* to = static_cast<char*>(dst.data_ptr());
    if (contiguous || s.ndim == 0) {
      std::memcpy(to, from, nbytes);
    } else {
      if (s.dtype.bits % 8 != 0) {
        TVM_FFI_THROW(ValueError) << "cannot copy a strided tensor of a sub-byte dtype";
      }
      StridedCopy(s, 0, from, &to, s.dtype.bits / 8 * s.dtype.lanes);
    }
    return dst;
  }
  ffi::Tensor source = src;
  if (!contiguous) {
    if (!detail::IsHostDevice(s.device)) {
      TVM_FFI_THROW(ValueError) << "cannot bind a non-contiguous tensor that is not in host "
                                   "memory; make it contiguous first";
    }
    source = AlignedCopy(src, DLDevice{kDLCPU, 0});
  }
  RuntimeGlobal("runtime.TVMTensorCopyFromTo", device)(source, dst);
  return dst;
}

}  // namespace tvm_partial
