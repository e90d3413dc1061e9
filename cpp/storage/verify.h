// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/verify.h
 * \brief Internal: the format's hash of a range of a file, read in 1 MiB chunks (fixed memory
 *        for multi-GiB artifacts).
 */
#ifndef TVM_PARTIAL_STORAGE_VERIFY_H_
#define TVM_PARTIAL_STORAGE_VERIFY_H_

#include <cstdint>
#include <functional>

#include "storage/file.h"

namespace tvm_partial {
namespace storage {

/*! \brief The format's hash of `size` bytes of `file` at `offset`; `progress`, if set, gets the
 *         bytes hashed after each chunk. \throws ValueError when the range runs past the end. */
uint64_t HashRange(const File& file, uint64_t offset, uint64_t size,
                   const std::function<void(uint64_t)>& progress = {});

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_VERIFY_H_
