/*!
 * \file registry.h
 * \brief Internal: registration of globals that tolerates the library being loaded twice
 *        (the extension and a self-contained artifact both carry this code).
 */
#ifndef TVM_PARTIAL_REGISTRY_H_
#define TVM_PARTIAL_REGISTRY_H_

#include <tvm/ffi/function.h>

namespace tvm_partial {
namespace detail {

/*!
 * \brief Register `func` as global `name` unless a global of that name exists already.
 *        Registering twice throws, and a throw in a static initialiser during dlopen aborts the
 *        process, so the first registration wins and later copies stay silent.
 */
inline void RegisterGlobalOnce(const char* name, ::tvm::ffi::Function func) {
  if (::tvm::ffi::Function::GetGlobal(name).has_value()) return;
  ::tvm::ffi::Function::SetGlobal(name, std::move(func), /*can_override=*/false);
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_REGISTRY_H_
