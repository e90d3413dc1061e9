// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file registry.h
 * \brief Internal: registration of globals when the code is loaded more than once (the installed
 *        libtvm_partial.so and the copy embedded in each self-contained artifact). Every global
 *        registered here reports a failed allocation as MemoryError (out_of_memory.h).
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
namespace detail {

/*! \brief An embedded copy also registers what it registered under this prefix + name, so the
 *         installed library can tell that registration apart from anyone else's. */
constexpr const char* kEmbeddedPrefix = "tvm_partial.embedded_copy.";

/*!
 * \brief Whether this copy of the code is the one embedded in a self-contained artifact. The same
 *        objects make both copies; each links one definition: copy_installed.cc (false) into
 *        libtvm_partial.so, copy_embedded.cc (true) into tvm_partial_embed.o.
 */
bool IsEmbeddedCopy() noexcept;

/*!
 * \brief Set global `name` to `func` with "type_schema" metadata, as reflection::GlobalDef does
 *        (tvm-ffi-stubgen reads it), but honouring `can_override`, which GlobalDef does not take.
 *        Throws on failure.
 */
inline void SetGlobalWithSchema(const char* name, const ::tvm::ffi::Function& func,
                                const std::string& type_schema, bool can_override) {
  namespace ffi = ::tvm::ffi;
  const std::string metadata = std::string(R"({"type_schema":)") +
                               ffi::EscapeStringJSON(ffi::String(type_schema)).c_str() + "}";
  TVMFFIMethodInfo info;
  info.name = TVMFFIByteArray{name, std::strlen(name)};
  info.doc = TVMFFIByteArray{nullptr, 0};
  info.metadata = TVMFFIByteArray{metadata.data(), metadata.size()};
  info.flags = kTVMFFIFieldFlagBitMaskIsStaticMethod;  // what Function::SetGlobal records
  info.method = ffi::AnyView(func).CopyToTVMFFIAny();  // borrowed: the table takes its own ref
  TVM_FFI_CHECK_SAFE_CALL(TVMFFIFunctionSetGlobalFromMethodInfo(&info, can_override ? 1 : 0));
}

/*!
 * \brief Register `func` as global `name` with type schema `type_schema`, from a static
 *        initialiser. Called through RegisterGlobalOnce and RegisterPackedGlobalOnce below.
 *
 * Embedded copies (IsEmbeddedCopy()) never override: the first one loaded serves
 * until the installed library is loaded. The installed library takes over a registration that an
 * embedded copy made (artifacts are linked with -z nodelete, so the code of the closures and
 * modules that copy made stays valid), and leaves any other existing registration alone.
 * Never throws: a throw in a static initialiser during dlopen aborts the process.
 */
inline void RegisterGlobalWithSchemaOnce(const char* name, const ::tvm::ffi::Function& func,
                                         const std::string& type_schema) noexcept {
  namespace ffi = ::tvm::ffi;
  try {
    const std::string marker = std::string(kEmbeddedPrefix) + name;
    ffi::Optional<ffi::Function> existing = ffi::Function::GetGlobal(name);
    if (IsEmbeddedCopy()) {
      if (existing.has_value()) return;
      SetGlobalWithSchema(name, func, type_schema, /*can_override=*/false);
      ffi::Function::SetGlobal(marker, func, /*can_override=*/true);
      return;
    }
    if (existing.has_value()) {
      ffi::Optional<ffi::Function> embedded = ffi::Function::GetGlobal(marker);
      if (!embedded.has_value() || !embedded.value().same_as(existing.value()))
        return;  // not an embedded copy's
    }
    SetGlobalWithSchema(name, func, type_schema, /*can_override=*/existing.has_value());
  } catch (...) {
    // Keep whatever is registered; the process must survive being loaded.
  }
}

/*!
 * \brief The typed function `func` as registered for global `name`: a failed allocation
 *        inside it, its argument conversions included (they run before its body, in tvm-ffi's
 *        unpacking), reaches the caller as MemoryError naming `name` (out_of_memory.h). Costs one
 *        more direct C++ call per call of the global; the closures globals return are not wrapped.
 */
inline ::tvm::ffi::Function WithMemoryErrors(const char* name, ::tvm::ffi::Function func) {
  namespace ffi = ::tvm::ffi;
  // CallPacked takes func's cpp_call, which lets C++ exceptions through to the handler here.
  return ffi::Function::FromPacked(
      [name, func = std::move(func)](ffi::PackedArgs args, ffi::Any* rv) {
        OutOfMemoryAsMemoryError([&] { func.CallPacked(args, rv); },
                                 [name] { return std::string(name); });
      });
}

/*!
 * \brief Register the typed function `func` (a function or lambda, as for Function::FromTyped)
 *        as global `name`, with the type schema of its signature (what GlobalDef().def records).
 */
template <typename F>
inline void RegisterGlobalOnce(const char* name, F func) noexcept {
  namespace ffi = ::tvm::ffi;
  try {
    using Info = ffi::detail::FunctionInfo<std::decay_t<F>>;
    RegisterGlobalWithSchemaOnce(name,
                                 WithMemoryErrors(name, ffi::Function::FromTyped(std::move(func))),
                                 Info::TypeSchema());
  } catch (...) {
    // As above: building the function or its schema must not throw out of a static initialiser.
  }
}

/*!
 * \brief Register the packed function `func` (ffi::PackedArgs, ffi::Any*), which returns an `R`
 *        and takes a variable argument list, as global `name`. Its schema is tvm-ffi's
 *        "ffi.Function" schema with a return type and no "params" (tvm-ffi-stubgen writes it as
 *        `def f(*args: Any) -> R`), where GlobalDef().def_packed records no return type.
 */
template <typename R, typename F>
inline void RegisterPackedGlobalOnce(const char* name, F func) noexcept {
  namespace ffi = ::tvm::ffi;
  try {
    const std::string schema = std::string(R"({"type":")") + ffi::StaticTypeKey::kTVMFFIFunction +
                               R"(","named_args":{"return":[)" + ffi::detail::TypeSchema<R>::v() +
                               "]}}";
    // A packed function converts nothing before it runs: guarded in place, without a hop.
    auto guarded = [name, func = std::move(func)](ffi::PackedArgs args, ffi::Any* rv) {
      OutOfMemoryAsMemoryError([&] { func(args, rv); }, [name] { return std::string(name); });
    };
    RegisterGlobalWithSchemaOnce(name, ffi::Function::FromPacked(std::move(guarded)), schema);
  } catch (...) {
    // As above.
  }
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_REGISTRY_H_
