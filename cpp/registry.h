// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file registry.h
 * \brief Internal: registering globals from code loaded more than once (the installed
 *        libtvm_partial.so, and the copy embedded in each self-contained artifact). Each global
 *        reports a failed allocation as MemoryError (out_of_memory.h).
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

/*!
 * \brief Register `func` as global `name` with "type_schema" metadata (for tvm-ffi-stubgen), as
 *        GlobalDef does but honouring can_override, which GlobalDef lacks.
 *
 * Embedded copies never override: the first loaded serves until the installed library loads,
 * which takes over an embedded copy's registration (artifacts link with -z nodelete, so that
 * copy's closures and modules stay valid) and leaves any other alone. An embedded copy also
 * registers "tvm_partial.embedded_copy." + name, so the installed one can tell its registrations.
 * Never throws: a throw in a static initialiser during dlopen aborts the process.
 */
inline void RegisterGlobalWithSchemaOnce(const char* name, const ffi::Function& func,
                                         const std::string& type_schema) noexcept {
  try {
    const std::string marker = std::string("tvm_partial.embedded_copy.") + name;
    ffi::Optional<ffi::Function> existing = ffi::Function::GetGlobal(name);
    if (existing.has_value()) {
      if (IsEmbeddedCopy()) return;
      ffi::Optional<ffi::Function> embedded = ffi::Function::GetGlobal(marker);
      if (!embedded.has_value() || !embedded.value().same_as(existing.value()))
        return;  // not an embedded copy's
    }
    const std::string metadata = std::string(R"({"type_schema":)") +
                                 ffi::EscapeStringJSON(ffi::String(type_schema)).c_str() + "}";
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

/*! \brief Register packed `call` as `name`, a failed allocation in it raised as MemoryError. */
template <typename F>
inline void RegisterGuardedOnce(const char* name, F call, const std::string& type_schema) {
  auto guarded = [name, call = std::move(call)](ffi::PackedArgs args, ffi::Any* rv) {
    OutOfMemoryAsMemoryError([&] { call(args, rv); }, [name] { return std::string(name); });
  };
  RegisterGlobalWithSchemaOnce(name, ffi::Function::FromPacked(std::move(guarded)), type_schema);
}

/*! \brief Register typed `func` (as for Function::FromTyped) as global `name` with its signature's
 *         type schema (as GlobalDef().def records), guarded with its argument conversions;
 *         closures it returns are not guarded. */
template <typename F>
inline void RegisterGlobalOnce(const char* name, F func) noexcept {
  try {
    using Info = ffi::detail::FunctionInfo<std::decay_t<F>>;
    // CallPacked uses typed's cpp_call, which lets C++ exceptions reach the guard.
    RegisterGuardedOnce(
        name,
        [typed = ffi::Function::FromTyped(std::move(func))](ffi::PackedArgs args, ffi::Any* rv) {
          typed.CallPacked(args, rv);
        },
        Info::TypeSchema());
  } catch (...) {
    // Must not throw out of a static initialiser.
  }
}

/*! \brief Register packed `func` (ffi::PackedArgs, ffi::Any*) returning `R` as global `name`. Its
 *         schema has a return type and no "params" (stubgen: `def f(*args: Any) -> R`), where
 *         GlobalDef().def_packed records no return type. */
template <typename R, typename F>
inline void RegisterPackedGlobalOnce(const char* name, F func) noexcept {
  try {
    RegisterGuardedOnce(name, std::move(func),
                        std::string(R"({"type":")") + ffi::StaticTypeKey::kTVMFFIFunction +
                            R"(","named_args":{"return":[)" + ffi::detail::TypeSchema<R>::v() +
                            "]}}");
  } catch (...) {
    // As above.
  }
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_REGISTRY_H_
