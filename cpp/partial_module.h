// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_module.h
 * \brief Internal: what other files (the zero-copy export, zero_copy.cc) read of a partial_apply
 *        module made by this copy of the code.
 */
#ifndef TVM_PARTIAL_PARTIAL_MODULE_H_
#define TVM_PARTIAL_PARTIAL_MODULE_H_

#include <tvm/ffi/extra/module.h>

#include <vector>

#include "format.h"

namespace tvm_partial {
namespace detail {

/*! \brief The records of `mod` when it is a partial_apply module of this copy, else null. */
const std::vector<format::FunctionRecord>* PartialModuleRecords(const ffi::Module& mod);

/*! \brief The region `mod` saves its payloads to (set by WithExternalRegion), else null. */
const format::ExternalRegion* PartialModuleRegion(const ffi::Module& mod);

/*!
 * \brief A copy of the partial_apply module `mod` (PartialModuleRecords is not null) over the same
 *        code, whose SaveToBytes leaves the payloads to `region`.
 */
ffi::Module WithExternalRegion(const ffi::Module& mod, format::ExternalRegion region);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PARTIAL_MODULE_H_
