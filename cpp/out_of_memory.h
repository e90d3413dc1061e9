// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file out_of_memory.h
 * \brief Internal: failed allocations reach the caller as MemoryError, not the InternalError
 *        tvm-ffi's safe-call boundary makes of std::bad_alloc.
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

// The cold path, kept out of line.
[[noreturn]] TVM_FFI_NO_INLINE inline void ThrowOutOfMemory(const std::string& who,
                                                            const std::exception& err) {
  TVM_FFI_THROW(MemoryError) << who << ": out of memory (" << err.what() << ")";
  TVM_FFI_UNREACHABLE();
}

/*! \brief Whether an allocator's error means out of memory: AlignedEmpty's MemoryError, or TVM's
 *         device allocators' other kinds that say so in words. */
inline bool IsOutOfMemory(const ::tvm::ffi::Error& err) {
  return err.kind() == "MemoryError" || err.message().find("out of memory") != std::string::npos;
}

/*! \brief `body()`, turning an escaping std::bad_alloc or std::length_error (size past max_size)
 *         into MemoryError from `who()` (called only then). */
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
