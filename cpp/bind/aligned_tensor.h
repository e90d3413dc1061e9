// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/aligned_tensor.h
 * \brief Internal: the byte size of a tensor, counted as the aligned tensors (AlignedEmpty, public
 *        header) allocate it, for the checks made before an allocation.
 */
#ifndef TVM_PARTIAL_BIND_ALIGNED_TENSOR_H_
#define TVM_PARTIAL_BIND_ALIGNED_TENSOR_H_

#include <dlpack/dlpack.h>

#include <cstdint>

namespace tvm_partial {
namespace detail {

/*!
 * \brief The bytes `numel` elements of `dtype` take contiguously: sub-byte dtypes packed and
 *        rounded up to a whole byte (as tvm-ffi's GetDataSize counts, whose product in bits
 *        wraps past 2^64 bits, i.e. 2^61 bytes; this one is exact).
 * \return false when that is 2^63 bytes or more: no tensor can hold it (sizes are int64).
 */
bool TensorBytes(uint64_t numel, DLDataType dtype, uint64_t* bytes);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_ALIGNED_TENSOR_H_
