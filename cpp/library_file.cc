// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file library_file.cc
 * \brief Which file a loaded library module's code came from, so a partial module loaded from an
 *        artifact can be exported again (`export_library` copies that file and rewrites its
 *        constants): TVM's library module does not record its path, but its functions point into
 *        the mapped file, and the dynamic loader knows which file that is.
 */
#include <dlfcn.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "registry.h"

namespace tvm_partial {

namespace ffi = ::tvm::ffi;

namespace {

/*!
 * \brief {"path", "address"} of the shared library that holds function `name` of the library
 *        module `mod` (a module of kind "library": code loaded from a shared library).
 * \throws TypeError for another kind of module; ValueError when it has no such function or the
 *         function's code is not inside a loaded file.
 */
ffi::Map<ffi::String, ffi::Any> LibraryFileOf(ffi::Module mod, const ffi::String& name) {
  if (std::strcmp(mod->kind(), "library") != 0) {
    TVM_FFI_THROW(TypeError) << "LibraryFileOf: expected a module loaded from a shared library "
                                "(kind 'library'), got kind '"
                             << mod->kind() << "'";
  }
  ffi::Optional<ffi::Function> f = mod->GetFunction(name, /*query_imports=*/false);
  if (!f.has_value()) {
    TVM_FFI_THROW(ValueError) << "LibraryFileOf: the library has no function '" << name << "'";
  }
  // A library function calls the exported symbol `__tvm_ffi_<name>`. Its address is looked for
  // where tvm-ffi keeps it, and accepted only when the dynamic loader resolves that symbol of the
  // file holding the address to the same address: a wrong guess is refused, never returned.
  const std::string symbol = std::string("__tvm_ffi_") + std::string(name);
  auto file_of = [&symbol](void* address) -> const char* {
    Dl_info info{};
    if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr ||
        info.dli_fname[0] == '\0') {
      return nullptr;
    }
    void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) return nullptr;
    void* resolved = dlsym(handle, symbol.c_str());
    dlclose(handle);
    return resolved == address ? info.dli_fname : nullptr;
  };
  const ffi::FunctionObj* obj = (*f).operator->();
  void* address = reinterpret_cast<void*>(obj->safe_call);
  const char* path = file_of(address);
  // Otherwise safe_call is tvm-ffi's wrapper, and the address is the first word of what the
  // wrapper holds after the FunctionObj (the C function it calls).
  if (path == nullptr) {
    address = *reinterpret_cast<void* const*>(obj + 1);
    path = file_of(address);
  }
  if (path != nullptr) {
    ffi::Map<ffi::String, ffi::Any> out;
    out.Set("path", ffi::String(path));
    out.Set("address", static_cast<int64_t>(reinterpret_cast<uintptr_t>(address)));
    return out;
  }
  TVM_FFI_THROW(ValueError) << "cannot tell which file the code of function '" << name
                            << "' was loaded from";
  TVM_FFI_UNREACHABLE();
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("tvm_partial.LibraryFileOf", LibraryFileOf);
}

}  // namespace tvm_partial
