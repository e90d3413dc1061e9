// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file copy_embedded.cc
 * \brief Linked into tvm_partial_embed.o, the copy self-contained artifacts carry (registry.h).
 */
#include "registry.h"

namespace tvm_partial {
namespace detail {

bool IsEmbeddedCopy() noexcept { return true; }

}  // namespace detail
}  // namespace tvm_partial
