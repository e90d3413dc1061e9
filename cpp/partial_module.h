// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_module.h
 * \brief Internal: what other files (loading, load.cc; the export, export.cc) use of
 *        a partial_apply module made by this copy of the code.
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

/*! \brief The records of `mod` when it is a partial_apply module of this copy, else null. A
 *         module loaded from bytes builds them here on first use (see DecodeRecords). */
const std::vector<format::FunctionRecord>* PartialModuleRecords(const ffi::Module& mod);

/*! \brief The records of a partial function (one, named "") or of a partial_apply module of this
 *         copy (bind_module.cc). \throws TypeError from `who` naming what `obj` is instead. */
std::vector<format::FunctionRecord> PartialRecords(const ffi::Any& obj, const char* who);

/*! \brief The rank whose view of sharded tensors `obj` holds (load(path, shard=)), else -1. */
int64_t ShardRankOf(const ffi::Any& obj);

/*! \brief Refuse `mod` when it is a rank's view of a sharded artifact (load(path, shard=)): it
 *         holds slices, and `what` ("saved", "exported", "written to a weights file") would record
 *         them as the whole tensors. */
void RefuseShardView(const ffi::Module& mod, const char* what);

/*! \brief The region `mod` saves its payloads to (set by WithExternalRegion), else null. */
const format::ExternalRegion* PartialModuleRegion(const ffi::Module& mod);

/*! \brief A module of kind partial_apply that another copy of tvm-partial made (such as the one
 *         inside a self-contained artifact): this copy cannot read its records. */
bool IsForeignPartialModule(const ffi::Module& mod);

/*! \brief The compiled code a partial_apply module of this copy binds, if it has any. */
ffi::Optional<ffi::Module> PartialModuleCode(const ffi::Module& mod);

/*! \brief A partial_apply module with these records over `code` (its first import). */
ffi::Module NewPartialModule(std::vector<format::FunctionRecord> functions,
                             ffi::Optional<ffi::Module> code);

using storage::LoadOptions;

/*!
 * \brief Make the partial_apply module `mod`, loaded from bytes and not used yet, build its
 *        values as `options` say.
 * \return -1 when `mod` is not such a module of this copy (nothing set); else 1 when it records
 *         shards, 0 when not.
 * \throws ValueError when a shard is asked and its shards name another world.
 */
int ConfigureLoad(const ffi::Module& mod, const LoadOptions& options);

/*! \brief The file a loader of ours loaded `mod`'s library from (LoadOptions::library_file),
 *         else null. */
std::shared_ptr<storage::File> LibraryFile(const ffi::Module& mod);

/*! \brief `to` (a partial module over the code `from` wraps: rebind's result) keeps the file a
 *         loader of ours loaded that code from, as `from` does. */
void InheritLibraryFile(const ffi::Module& to, const ffi::Module& from);

/*! \brief When `mod` is a Relax VM module of this copy (relax_vm.cc) not yet run: its recorded
 *         devices of `device`'s type become `device` (a disco rank's GPU). CPU: nothing. */
void RetargetRelaxVM(const ffi::Module& mod, DLDevice device);

/*! \brief The model record (format/model_record.h) of `mod` when it is a `partial_apply_vm`
 *         module of this library or wraps one (a partial module over it), else an empty one. */
ModelRecord ModelRecordOf(const ffi::Module& mod);

/*!
 * \brief What a partial_apply_vm module's saved bytes record, for inspect (which reads an artifact
 *        without loading it), checked as the loader checks them (relax_vm.cc): {"devices":
 *        ["cpu:0"], "allocators": ["pooled"], "compiled_in": [{"name", "dtype", "shape", "hash",
 *        "kind"}], "ties": [[name, ...]]}.
 */
ffi::Map<ffi::String, ffi::Any> DescribeVMRecord(const ffi::Bytes& bytes);

/*! \brief The first module of kind "library" among `imports` and theirs (depth first, in
 *         import order): the code the library loader attached to a module it loaded (for a
 *         Relax model, its executable's). */
ffi::Optional<ffi::Module> FindLibrary(const ffi::Array<ffi::Any>& imports, int depth = 0);

/*!
 * \brief The records of parsed bytes with their values (load.cc): where the payloads lie is
 *        decided by storage::Locate from what the module offers (its bytes `blob`, the library
 *        among `imports` that the loader attached, an override), the tensors built from there.
 */
std::vector<format::FunctionRecord> DecodeRecords(const char* blob, const format::Parsed& parsed,
                                                  const ffi::Array<ffi::Any>& imports,
                                                  const LoadOptions& options);

/*!
 * \brief A copy of the partial_apply module `mod` (PartialModuleRecords is not null) over the same
 *        code, whose SaveToBytes leaves the payloads to `region`.
 */
ffi::Module WithExternalRegion(const ffi::Module& mod, format::ExternalRegion region);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PARTIAL_MODULE_H_
