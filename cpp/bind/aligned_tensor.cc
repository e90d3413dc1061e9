// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/aligned_tensor.cc
 * \brief Contiguous, 64-byte-aligned tensors: what bound values are converted to at bind time
 *        and what the loader materialises (TVM kernels assume the alignment).
 */
#include "bind/aligned_tensor.h"

#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm_partial/partial_apply.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "device.h"
#include "out_of_memory.h"
#include "registry.h"

namespace tvm_partial {

namespace detail {

bool TensorBytes(uint64_t numel, DLDataType dtype, uint64_t* bytes) {
  // ceil(numel * bits / 8) without forming numel * bits: whole groups of 8 elements take `bits`
  // bytes each, the rest at most 7 * bits (< 2^27) bits.
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

}  // namespace detail

namespace {

constexpr size_t kAlignment = 64;

std::string ShapeString(const ffi::Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

/*! \brief The byte size of a contiguous tensor of `shape` and `dtype`, checked. */
uint64_t CheckedBytes(const ffi::Shape& shape, DLDataType dtype) {
  uint64_t numel = 1;
  bool overflow = false, empty = false;  // a 0 extent makes any product of the others 0 bytes
  for (int64_t extent : shape) {
    if (extent < 0) {
      TVM_FFI_THROW(ValueError) << "cannot allocate a tensor of shape " << ShapeString(shape)
                                << ": negative extent " << extent;
    }
    overflow = __builtin_mul_overflow(numel, static_cast<uint64_t>(extent), &numel) || overflow;
    empty = empty || extent == 0;
  }
  uint64_t bytes = 0;
  if (!empty && (overflow || !detail::TensorBytes(numel, dtype, &bytes))) {
    TVM_FFI_THROW(ValueError) << "cannot allocate a tensor of shape " << ShapeString(shape)
                              << " and dtype " << ffi::DLDataTypeToString(dtype)
                              << ": it takes 2^63 bytes or more";
  }
  return bytes;
}

// Host memory with the alignment TVM kernels assume, allocated before the tensor object (so
// nothing leaks when that throws) and adopted by it.
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
    // aligned_alloc needs a multiple of the alignment; nbytes <= INT64_MAX, so this cannot wrap.
    const uint64_t padded =
        nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    std::unique_ptr<void, FreeDeleter> data(
        padded > SIZE_MAX ? nullptr : std::aligned_alloc(kAlignment, static_cast<size_t>(padded)));
    if (data == nullptr) {
      TVM_FFI_THROW(MemoryError) << "out of memory allocating a tensor of " << nbytes << " bytes";
    }
    ffi::Tensor tensor =
        ffi::Tensor::FromNDAlloc(AlignedHostAlloc{data.get()}, shape, dtype, device);
    data.release();  // the tensor owns it now
    return tensor;
  }
  // TVM's device allocators align to at least 64 bytes, and size the allocation with tvm-ffi's
  // GetDataSize, which counts bits in 64 bits: past 2^61 bytes it would wrap and allocate less.
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

namespace {

/*! \brief What makes two views one memory copied to one place: address, dtype, shape, strides
 *         (none when contiguous), device, and the device copied to. */
using MemoryKey = std::tuple<uintptr_t, uint32_t, std::vector<int64_t>, std::vector<int64_t>,
                             int32_t, int32_t, int32_t, int32_t>;

MemoryKey KeyOf(const ffi::Tensor& t, DLDevice to) {
  const DLTensor& d = *t.GetDLTensorPtr();
  std::vector<int64_t> strides;
  if (!t.IsContiguous()) strides.assign(t.strides().begin(), t.strides().end());
  return {reinterpret_cast<uintptr_t>(d.data) + d.byte_offset,
          uint32_t{d.dtype.code} << 24 | uint32_t{d.dtype.bits} << 16 | d.dtype.lanes,
          std::vector<int64_t>(t.shape().begin(), t.shape().end()),
          std::move(strides),
          d.device.device_type,
          d.device.device_id,
          to.device_type,
          to.device_id};
}

/*! \brief "cannot VERB LABEL", how Hold's errors about `item` begin. */
std::string Where(const ffi::Array<ffi::Any>& item, const ffi::String& verb) {
  return "cannot " + std::string(verb) + " " + std::string(item[5].cast<ffi::String>());
}

/*! \brief Refuse `item`'s view where its dtype or shape differs from its parameter's (None:
 *         any); the parameter as item[4] names it. */
void CheckAgainstParam(const ffi::Array<ffi::Any>& item, const ffi::String& verb) {
  const auto t = item[0].cast<ffi::Tensor>();
  const ffi::Any& dtype = item[2];
  if (dtype != nullptr && ffi::DLDataTypeToString(t.dtype()) != dtype.cast<ffi::String>()) {
    TVM_FFI_THROW(TypeError) << Where(item, verb) << ": dtype "
                             << ffi::DLDataTypeToString(t.dtype()) << " does not match "
                             << item[4].cast<ffi::String>();
  }
  if (item[3] == nullptr) return;
  const auto want = item[3].cast<ffi::Array<ffi::Any>>();
  bool same = want.size() == t.shape().size();
  for (size_t i = 0; same && i < want.size(); ++i) {
    same = want[i] == nullptr || want[i].cast<int64_t>() == t.shape()[i];
  }
  if (!same) {
    TVM_FFI_THROW(ValueError) << Where(item, verb) << ": shape "
                              << ShapeString(ffi::Shape(t.shape())) << " does not match "
                              << item[4].cast<ffi::String>();
  }
}

/*!
 * \brief The tensors a bind holds, made from views over the caller's memory (numpy, torch, any
 *        DLPack tensor): all checked against their parameters first, then each copied once into
 *        contiguous, 64-byte-aligned memory on `device`; the same memory given in several places
 *        (tied weights) is copied once, so those places hold one tensor. A tvm Tensor the caller
 *        gave (`keep`) is held as it is when already contiguous and aligned (or remote: its
 *        server's allocator aligns it), else copied on its own device.
 *
 *        Each item: [view, keep, dtype or None, shape (ints or None) or None, the parameter as
 *        the errors name it, the value's label]; errors read "cannot VERB LABEL: ...".
 */
ffi::Array<ffi::Tensor> Hold(const ffi::Array<ffi::Array<ffi::Any>>& items, DLDevice device,
                             const ffi::String& verb) {
  for (const auto& item : items) CheckAgainstParam(item, verb);
  std::map<MemoryKey, ffi::Tensor> made;
  ffi::Array<ffi::Tensor> out;
  for (const auto& item : items) {
    auto view = item[0].cast<ffi::Tensor>();
    const DLTensor& d = *view.GetDLTensorPtr();
    const bool remote = d.device.device_type >= detail::kRPCSessMask;
    const bool keep = item[1].cast<bool>();
    const DLDevice to = keep ? d.device : device;
    if (keep && view.IsContiguous() &&
        (remote || (reinterpret_cast<uintptr_t>(d.data) + d.byte_offset) % kAlignment == 0)) {
      out.push_back(view);
      continue;
    }
    const bool shared = d.data != nullptr && view.numel() > 0;
    const MemoryKey key = shared ? KeyOf(view, to) : MemoryKey{};
    if (auto found = made.find(key); shared && found != made.end()) {
      out.push_back(found->second);
      continue;
    }
    ffi::Tensor copy;
    try {
      copy = AlignedCopy(view, to);
    } catch (const ffi::Error& err) {
      uint64_t bytes = 0;
      if (!detail::IsOutOfMemory(err)) {
        TVM_FFI_THROW(TypeError) << Where(item, verb) << ": not a usable tensor (" << err.message()
                                 << ")";
      }
      detail::TensorBytes(view.numel(), d.dtype, &bytes);
      TVM_FFI_THROW(MemoryError) << Where(item, verb) << ": out of memory copying " << bytes
                                 << " bytes into an aligned tensor on "
                                 << detail::DeviceString(to.device_type, to.device_id) << " ("
                                 << err.message() << "); free memory or bind a smaller tensor";
    }
    if (shared) made.emplace(key, copy);
    out.push_back(copy);
  }
  return out;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() { detail::RegisterGlobalOnce("tvm_partial.Hold", Hold); }

}  // namespace tvm_partial
