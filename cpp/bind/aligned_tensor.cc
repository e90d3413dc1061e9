// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/aligned_tensor.cc
 * \brief Contiguous, 64-byte-aligned tensors: what bound values are converted to at bind time
 *        and what the loader materialises (TVM kernels assume the alignment).
 */
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "device.h"
#include "registry.h"

namespace tvm_partial {

namespace {

constexpr size_t kAlignment = 64;

// Host memory with the alignment TVM kernels assume; the size is rounded up as aligned_alloc needs.
struct AlignedHostAlloc {
  void AllocData(DLTensor* tensor) {
    size_t nbytes = ffi::GetDataSize(*tensor);
    size_t padded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    tensor->data = std::aligned_alloc(kAlignment, padded == 0 ? kAlignment : padded);
    if (tensor->data == nullptr) {
      TVM_FFI_THROW(RuntimeError) << "out of memory allocating a tensor of " << nbytes << " bytes";
    }
  }
  void FreeData(DLTensor* tensor) { std::free(tensor->data); }
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
  if (device.device_type == kDLCPU) {
    return ffi::Tensor::FromNDAlloc(AlignedHostAlloc(), shape, dtype, device);
  }
  // TVM's device allocators align to at least 64 bytes.
  return RuntimeGlobal("runtime.TVMTensorAllocWithScope", device)(shape, dtype, device, nullptr)
      .cast<ffi::Tensor>();
}

ffi::Tensor AlignedCopy(const ffi::Tensor& src, DLDevice device) {
  const DLTensor& s = *src.GetDLTensorPtr();
  ffi::Tensor dst = AlignedEmpty(ffi::Shape(src.shape()), s.dtype, device);
  const size_t nbytes = ffi::GetDataSize(s);
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

TVM_FFI_STATIC_INIT_BLOCK() { detail::RegisterGlobalOnce("tvm_partial.AlignedCopy", AlignedCopy); }

}  // namespace tvm_partial
