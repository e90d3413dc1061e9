// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file out_of_memory.h
 * \brief Internal: failed allocations raise MemoryError, not tvm-ffi's InternalError.
 */
#ifndef TVM_PARTIAL_OUT_OF_MEMORY_H_
#define TVM_PARTIAL_OUT_OF_MEMORY_H_

#include <tvm/ffi/error.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

namespace tvm_partial {
namespace detail {

[[noreturn]] TVM_FFI_NO_INLINE inline void ThrowOutOfMemory(const std::string& who,
                                                            const std::exception& err) {
  TVM_FFI_THROW(MemoryError) << who << ": out of memory (" << err.what() << ")";
  TVM_FFI_UNREACHABLE();
}

// Out of memory: AlignedEmpty's MemoryError, or a TVM device allocator's error saying so in words.
inline bool IsOutOfMemory(const ::tvm::ffi::Error& err) {
  return err.kind() == "MemoryError" || err.message().find("out of memory") != std::string::npos;
}

// `body()`; bad_alloc or length_error (past max_size) become MemoryError from `who()`, called then.
template <typename Body, typename Who>
TVM_FFI_INLINE decltype(auto) OutOfMemoryAsMemoryError(Body&& body, Who&& who) {
  try {
    return body();
  } catch (const std::bad_alloc& err) {
    ThrowOutOfMemory(who(), err);
  } catch (const std::length_error& err) {
    ThrowOutOfMemory(who(), err);
  }
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_OUT_OF_MEMORY_H_
