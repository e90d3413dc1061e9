// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file registry.h
 * \brief Internal: registering globals from code loaded more than once (the installed
 *        libtvm_partial.so, and the copy embedded in each self-contained artifact).
 */
#ifndef TVM_PARTIAL_REGISTRY_H_
#define TVM_PARTIAL_REGISTRY_H_

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "out_of_memory.h"

namespace tvm_partial {

namespace ffi = ::tvm::ffi;

namespace detail {

/*! \brief Whether this is the copy embedded in an artifact: copy_embedded.cc (true) is linked
 *         into tvm_partial_embed.o, copy_installed.cc (false) into libtvm_partial.so. */
bool IsEmbeddedCopy() noexcept;

// Register `make()` as global `name` (failed allocations raised as MemoryError) with "type_schema"
// `schema()` (for tvm-ffi-stubgen), as GlobalDef does but honouring can_override. Embedded copies
// never override: the first loaded serves until the installed library takes over an embedded
// copy's registration (artifacts link with -z nodelete: its closures and modules stay valid),
// leaving others alone; each embedded one also registers "tvm_partial.embedded_copy." + name to be
// told apart. Never throws: a throw in a static initialiser during dlopen aborts the process.
template <typename Make, typename Schema>
inline void RegisterGuardedOnce(const char* name, Make make, Schema schema) noexcept {
  try {
    const std::string marker = std::string("tvm_partial.embedded_copy.") + name;
    ffi::Optional<ffi::Function> existing = ffi::Function::GetGlobal(name);
    if (existing.has_value()) {
      if (IsEmbeddedCopy()) return;
      ffi::Optional<ffi::Function> embedded = ffi::Function::GetGlobal(marker);
      if (!embedded.has_value() || !embedded.value().same_as(existing.value()))
        return;  // not an embedded copy's
    }
    // CallPacked uses the callable's cpp_call, which lets C++ exceptions reach the guard.
    auto guarded = [name, impl = make()](ffi::PackedArgs args, ffi::Any* rv) {
      OutOfMemoryAsMemoryError([&] { impl.CallPacked(args, rv); },
                               [name] { return std::string(name); });
    };
    const ffi::Function func = ffi::Function::FromPacked(std::move(guarded));
    const std::string metadata = std::string(R"({"type_schema":)") +
                                 ffi::EscapeStringJSON(ffi::String(schema())).c_str() + "}";
    TVMFFIMethodInfo info;
    info.name = TVMFFIByteArray{name, std::strlen(name)};
    info.doc = TVMFFIByteArray{nullptr, 0};
    info.metadata = TVMFFIByteArray{metadata.data(), metadata.size()};
    info.flags = kTVMFFIFieldFlagBitMaskIsStaticMethod;  // what Function::SetGlobal records
    info.method = ffi::AnyView(func).CopyToTVMFFIAny();  // borrowed: the table takes its own ref
    TVM_FFI_CHECK_SAFE_CALL(
        TVMFFIFunctionSetGlobalFromMethodInfo(&info, /*can_override=*/existing.has_value()));
    if (IsEmbeddedCopy()) ffi::Function::SetGlobal(marker, func, /*can_override=*/true);
  } catch (...) {
    // Keep whatever is registered; the process must survive being loaded.
  }
}

/*! \brief Register typed `func` (as for Function::FromTyped) as global `name` with its signature's
 *         type schema (as GlobalDef().def records); closures it returns are not guarded. */
template <typename F>
inline void RegisterGlobalOnce(const char* name, F func) noexcept {
  RegisterGuardedOnce(
      name, [&func] { return ffi::Function::FromTyped(std::move(func)); },
      ffi::detail::FunctionInfo<std::decay_t<F>>::TypeSchema);
}

// Register packed `func` (PackedArgs, Any*) returning `R` as global `name`: its schema has a return
// type, no "params" (stubgen: `def f(*args: Any) -> R`); GlobalDef().def_packed records no return.
template <typename R, typename F>
inline void RegisterPackedGlobalOnce(const char* name, F func) noexcept {
  RegisterGuardedOnce(
      name, [&func] { return ffi::Function::FromPacked(std::move(func)); },
      [] {
        return std::string(R"({"type":")") + ffi::StaticTypeKey::kTVMFFIFunction +
               R"(","named_args":{"return":[)" + ffi::detail::TypeSchema<R>::v() + "]}}";
      });
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_REGISTRY_H_
