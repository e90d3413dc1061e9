// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file registry.h
 * \brief Internal: registration of globals when the code is loaded more than once (the installed
 *        libtvm_partial.so and the copy embedded in each self-contained artifact).
 */
#ifndef TVM_PARTIAL_REGISTRY_H_
#define TVM_PARTIAL_REGISTRY_H_

#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>

#include <string>

namespace tvm_partial {
namespace detail {

/*! \brief An embedded copy also registers what it registered under this prefix + name, so the
 *         installed library can tell that registration apart from anyone else's. */
constexpr const char* kEmbeddedPrefix = "tvm_partial.embedded_copy.";

/*!
 * \brief Register `func` as global `name`, from a static initialiser.
 *
 * Embedded copies (built with TVM_PARTIAL_EMBEDDED) never override: the first one loaded serves
 * until the installed library is loaded. The installed library takes over a registration that an
 * embedded copy made (artifacts are linked with -z nodelete, so the code of the closures and
 * modules that copy made stays valid), and leaves any other existing registration alone.
 * Never throws: a throw in a static initialiser during dlopen aborts the process.
 */
inline void RegisterGlobalOnce(const char* name, ::tvm::ffi::Function func) noexcept {
  namespace ffi = ::tvm::ffi;
  try {
    const std::string marker = std::string(kEmbeddedPrefix) + name;
    ffi::Optional<ffi::Function> existing = ffi::Function::GetGlobal(name);
#ifdef TVM_PARTIAL_EMBEDDED
    if (existing.has_value()) return;
    ffi::Function::SetGlobal(name, func, /*can_override=*/false);
    ffi::Function::SetGlobal(marker, func, /*can_override=*/true);
#else
    if (existing.has_value()) {
      ffi::Optional<ffi::Function> embedded = ffi::Function::GetGlobal(marker);
      if (!embedded.has_value() || !embedded.value().same_as(existing.value()))
        return;  // not an embedded copy's
    }
    ffi::Function::SetGlobal(name, std::move(func), /*can_override=*/existing.has_value());
#endif
  } catch (...) {
    // Keep whatever is registered; the process must survive being loaded.
  }
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_REGISTRY_H_
