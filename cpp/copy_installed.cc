// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file copy_installed.cc
 * \brief Linked into libtvm_partial.so, the installed library (registry.h).
 */
#include "registry.h"

namespace tvm_partial {
namespace detail {

bool IsEmbeddedCopy() noexcept { return false; }

}  // namespace detail
}  // namespace tvm_partial
