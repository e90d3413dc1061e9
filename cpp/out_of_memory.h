// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file out_of_memory.h
 * \brief Internal: a failed allocation reaches the caller as tvm-ffi's MemoryError (Python's
 *        MemoryError), not as the InternalError that tvm-ffi's safe-call boundary makes of a
 *        std::bad_alloc. Used at the boundary of every global (registry.h) and around the
 *        closure's per-call allocations (partial_apply.cc).
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

/*! \brief Throw MemoryError "WHO: out of memory (WHAT)". */
[[noreturn]] TVM_FFI_NO_INLINE inline void ThrowOutOfMemory(const std::string& who,
                                                            const std::exception& err) {
  TVM_FFI_THROW(MemoryError) << who << ": out of memory (" << err.what() << ")";
  TVM_FFI_UNREACHABLE();
}

/*! \brief Whether an allocator's error says it ran out of memory: AlignedEmpty's own kind, or
 *         TVM's device allocators, which raise other kinds that say so in words. */
inline bool IsOutOfMemory(const ::tvm::ffi::Error& err) {
  return err.kind() == "MemoryError" || err.message().find("out of memory") != std::string::npos;
}

/*!
 * \brief `body()`, with a std::bad_alloc or std::length_error (a size past max_size) that escapes
 *        it turned into MemoryError from `who()` (called only then, so naming costs nothing).
 *        Other errors pass unchanged. With table-based unwinding the try costs nothing until
 *        something throws.
 */
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
