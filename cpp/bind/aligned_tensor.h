// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/aligned_tensor.h
 * \brief Internal: a tensor's byte size as AlignedEmpty allocates it, for checks before allocating.
 */
#ifndef TVM_PARTIAL_BIND_ALIGNED_TENSOR_H_
#define TVM_PARTIAL_BIND_ALIGNED_TENSOR_H_

#include <dlpack/dlpack.h>
#include <tvm/ffi/container/shape.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tvm_partial {
namespace detail {

// The alignment of the tensors bind time makes (TVM kernels assume it).
constexpr size_t kTensorAlignment = 64;

// The bytes `numel` elements of `dtype` take contiguously, sub-byte dtypes packed and rounded up
// (as tvm-ffi's GetDataSize, whose bit count wraps past 2^61 bytes); false from 2^63 bytes on.
bool TensorBytes(uint64_t numel, DLDataType dtype, uint64_t* bytes);

// `(2, 3)`, `(4,)`: a shape as Python prints a tuple.
std::string ShapeString(const ::tvm::ffi::Shape& shape);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_ALIGNED_TENSOR_H_
