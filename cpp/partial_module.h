// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_module.h
 * \brief Internal: what load.cc, export.cc and others use of a partial_apply module of this copy.
 */
#ifndef TVM_PARTIAL_PARTIAL_MODULE_H_
#define TVM_PARTIAL_PARTIAL_MODULE_H_

#include <tvm/ffi/extra/module.h>

#include <memory>
#include <string>
#include <vector>

#include "format/format.h"
#include "format/model_record.h"
#include "storage/file.h"
#include "storage/payload_source.h"

namespace tvm_partial {
namespace detail {

// Of a partial_apply module of this copy, else none: its records (built on first use), payload
// region (WithExternalRegion's), compiled code, and library's file (LoadOptions::library_file).
const std::vector<format::FunctionRecord>* PartialModuleRecords(const ffi::Module& mod);
const format::ExternalRegion* PartialModuleRegion(const ffi::Module& mod);
ffi::Optional<ffi::Module> PartialModuleCode(const ffi::Module& mod);
std::shared_ptr<storage::File> LibraryFile(const ffi::Module& mod);

// Records of this copy's partial function (one, named "") or partial_apply module; else TypeError.
std::vector<format::FunctionRecord> PartialRecords(const ffi::Any& obj, const char* who);

// The rank whose view of sharded tensors `obj` holds (load(path, shard=)), else -1; such a view
// is refused (ValueError) where `what` ("saved", "exported") would record slices as whole tensors.
int64_t ShardRankOf(const ffi::Any& obj);
void RefuseShardView(const ffi::Module& mod, const char* what);

ffi::Module NewPartialModule(std::vector<format::FunctionRecord> functions,
                             ffi::Optional<ffi::Module> code,
                             std::shared_ptr<storage::File> library_file = nullptr);

// Make `mod` (this copy's partial_apply module, loaded from bytes, unused) build its values as
// `options` say: 1 if it records shards, else 0; -1 for any other module. ValueError: wrong world.
int ConfigureLoad(const ffi::Module& mod, const storage::LoadOptions& options);

// `mod`'s recorded devices of `device`'s type become `device` (a rank's GPU) when it is a Relax
// VM module of this copy; CPU: nothing. RuntimeError once its VM runs.
void RetargetRelaxVM(const ffi::Module& mod, DLDevice device);

// Model record of a partial_apply_vm module (any copy: from its bytes) or partial over one, or {}.
ModelRecord ModelRecordOf(const ffi::Module& mod);

// For inspect: partial_apply_vm bytes, checked as loaded: {devices, allocators, compiled_in, ties}.
ffi::Map<ffi::String, ffi::Any> DescribeVMRecord(const ffi::Bytes& bytes);

// The first "library" module among `imports` and theirs, depth first: the code the library
// loader attached to a module it loaded (for a Relax model, its executable's).
ffi::Optional<ffi::Module> FindLibrary(const ffi::Array<ffi::Any>& imports, int depth = 0);

// The bound values of each function of parsed bytes, the payloads where storage::Locate puts them
// from what the module offers (`blob`, the library among `imports`, `options`).
std::vector<BoundList> DecodeValues(const char* blob, const format::Parsed& parsed,
                                    const ffi::Array<ffi::Any>& imports,
                                    const storage::LoadOptions& options);

// A copy of `mod` (a partial_apply module of this copy) over the same code, whose SaveToBytes
// leaves the payloads to `region`. ValueError for a rank's view.
ffi::Module WithExternalRegion(const ffi::Module& mod, format::ExternalRegion region);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PARTIAL_MODULE_H_
