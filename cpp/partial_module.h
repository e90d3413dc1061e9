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

/*! \brief `mod`'s records (built on first use) if a partial_apply module of this copy, or null. */
const std::vector<format::FunctionRecord>* PartialModuleRecords(const ffi::Module& mod);

/*! \brief The records of a partial function (one, named "") or a partial_apply module of this
 *         copy. \throws TypeError from `who` naming what `obj` is instead. */
std::vector<format::FunctionRecord> PartialRecords(const ffi::Any& obj, const char* who);

/*! \brief The rank whose view of sharded tensors `obj` holds (load(path, shard=)), else -1. */
int64_t ShardRankOf(const ffi::Any& obj);

/*! \brief Refuse (ValueError) `mod` when it is a rank's view (load(path, shard=)): `what`
 *         ("saved", "exported") would record its slices as the whole tensors. */
void RefuseShardView(const ffi::Module& mod, const char* what);

/*! \brief The region `mod` saves its payloads to (set by WithExternalRegion), else null. */
const format::ExternalRegion* PartialModuleRegion(const ffi::Module& mod);

/*! \brief A partial_apply module made by another copy of tvm-partial (as inside a self-contained
 *         artifact): this copy cannot read its records. */
bool IsForeignPartialModule(const ffi::Module& mod);

/*! \brief The compiled code a partial_apply module of this copy binds, if it has any. */
ffi::Optional<ffi::Module> PartialModuleCode(const ffi::Module& mod);

/*! \brief A partial_apply module with these records over `code` (its first import). */
ffi::Module NewPartialModule(std::vector<format::FunctionRecord> functions,
                             ffi::Optional<ffi::Module> code);

/*! \brief Make `mod`, a partial_apply module of this copy loaded from bytes and unused, build its
 *         values as `options` say. \return -1 for any other module (nothing set), else 1 if it
 *         records shards, else 0. \throws ValueError when a shard of another world is asked. */
int ConfigureLoad(const ffi::Module& mod, const storage::LoadOptions& options);

/*! \brief The file our loader loaded `mod`'s library from (LoadOptions::library_file), or null. */
std::shared_ptr<storage::File> LibraryFile(const ffi::Module& mod);

/*! \brief `to` (rebind's result, over the code `from` wraps) keeps `from`'s LibraryFile. */
void InheritLibraryFile(const ffi::Module& to, const ffi::Module& from);

/*! \brief `mod`'s recorded devices of `device`'s type become `device` (a rank's GPU) when it is a
 *         Relax VM module of this copy; CPU: nothing. \throws RuntimeError once its VM runs. */
void RetargetRelaxVM(const ffi::Module& mod, DLDevice device);

/*! \brief The model record of `mod` when it is a partial_apply_vm module (of any copy: read from
 *         its bytes) or a partial module over one, else an empty one. */
ModelRecord ModelRecordOf(const ffi::Module& mod);

/*! \brief A partial_apply_vm module's saved bytes, checked as the loader checks them, for inspect
 *         (which does not load): {"devices", "allocators", "compiled_in", "ties"}. */
ffi::Map<ffi::String, ffi::Any> DescribeVMRecord(const ffi::Bytes& bytes);

/*! \brief The first "library" module among `imports` and theirs, depth first: the code the library
 *         loader attached to a module it loaded (for a Relax model, its executable's). */
ffi::Optional<ffi::Module> FindLibrary(const ffi::Array<ffi::Any>& imports, int depth = 0);

/*! \brief The records of parsed bytes with their values, the payloads where storage::Locate puts
 *         them from what the module offers (`blob`, the library among `imports`, `options`). */
std::vector<format::FunctionRecord> DecodeRecords(const char* blob, const format::Parsed& parsed,
                                                  const ffi::Array<ffi::Any>& imports,
                                                  const storage::LoadOptions& options);

/*! \brief A copy of `mod` (a partial_apply module of this copy) over the same code, whose
 *         SaveToBytes leaves the payloads to `region`. \throws ValueError for a rank's view. */
ffi::Module WithExternalRegion(const ffi::Module& mod, format::ExternalRegion region);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PARTIAL_MODULE_H_
