// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/loaded_library.h
 * \brief Internal: which file a loaded library module's code was mapped from, answered by that
 *        module itself, never by process-wide state.
 *
 * A partial module loaded from an artifact reads its external payloads from the artifact's file.
 * That file must be the very one the dynamic loader mapped the code and the embedded module blob
 * from: a process may hold several versions of one artifact (each computes with its own
 * weights), and the path may have been replaced since the loader first mapped it (the loader
 * then returns the object it already has, so the blob being decoded is the old one). So the
 * object is found from the library module (its embedded blob `__tvm_ffi__library_bin`, looked up
 * through the module, checked to be that object's own symbol), the file is opened by the name
 * the loader mapped it under, and it is accepted only when it is the very inode the process maps
 * (/proc/self/maps) and holds, at the blob's place, the very bytes the process has mapped.
 * Otherwise the load is refused, saying what happened.
 */
#ifndef TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_
#define TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_

#include <tvm/ffi/extra/module.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "storage/file.h"

namespace tvm_partial {
namespace storage {

namespace ffi = ::tvm::ffi;

/*! \brief The file a library module was loaded from, opened and proven to be it. */
struct LoadedLibrary {
  std::shared_ptr<File> file;
  std::string
      real_path;  // absolute, symlinks resolved: where a recorded weights file is looked for
};

/*!
 * \brief Open the file that `library` (a module of kind "library", as the loader created it)
 *        was mapped from.
 *        `proven`: the file a loader of ours opened and loaded the library from (LoadArtifactFile),
 *        taken when it is the very inode and bytes the process maps; else the file is opened by
 *        the name the system's loader mapped it under and must be that inode.
 * \throws ValueError when the module holds no embedded blob, when its object cannot be told
 *         apart, or when the file was replaced since the process loaded it; FileNotFoundError
 *         when it was removed (or renamed) since.
 */
LoadedLibrary OpenLoadedLibrary(const ffi::Module& library,
                                const std::shared_ptr<File>& proven = nullptr);

/*!
 * \brief Refuse `file` unless it is a 64-bit little-endian ELF file no shorter than its ELF
 *        header says (its segments, its section header table and the sections it lists): the
 *        system's loader maps segments past the end of a file cut short, and the process dies of
 *        SIGBUS when they are touched; a cut that spares the segments is still not the file.
 *        Every loader of ours checks it before the system's loader runs (Python's `load` asks it
 *        too), and `inspect` and `verify` (inspect.cc) before they read it.
 * \throws ValueError naming the file and what is wrong.
 */
void CheckComplete(const File& file);

/*!
 * \brief Refuse TVM's embedded module blob `data` (`size` bytes, after its u64 length) unless it
 *        is a whole module tree: TVM's loader trusts the counts, lengths and indices it records
 *        (a count is allocated, an import index read from its list unchecked). Every loader of
 *        ours checks it after the system's loader maps the file, before TVM decodes the blob
 *        (storage/module_tree.cc).
 * \throws ValueError naming `path` and what is wrong.
 */
void CheckModuleTree(const char* data, uint64_t size, const std::string& path);

/*!
 * \brief Load the library `file` (opened from `path`), the artifact the path holds now, with the
 *        system's loader, which answers a name it has seen with the object it has: under
 *        `path`; where that gives another file's object (`is_file` says no: a version the path
 *        held before, known to the loader by that name or as an alias), under a name no object
 *        answers to (a new symlink to the descriptor, removed once loaded). A file the process
 *        maps already under another name (a rename) is the object it has. The caller keeps `file`
 *        for the payloads.
 * \throws ValueError when neither name gives this file's object, when its embedded module tree
 *         is damaged (CheckModuleTree), or from the decoding of its modules (the format's
 *         reader), with `path` in front where the message does not name it.
 */
ffi::Module LoadArtifactFile(const std::shared_ptr<File>& file, const std::string& path,
                             const std::function<bool(const ffi::Module&)>& is_file);

/*! \brief Whether `library`'s code was mapped from `file` (the very inode and bytes); true for a
 *         library without an embedded blob (no bindings of ours to prove). */
bool LoadedFrom(const ffi::Module& library, const File& file);

/*!
 * \brief A share in the first library module made from `library`'s object, held by each partial
 *        module over it. The object is one per file in a process (a second load of the file gets
 *        it again) and its code is shared state: TVM's loader points the object's context at the
 *        latest library module made from it, and the host code caches, in the object, each
 *        function it looks up through that context (a device kernel, a global), owned by that
 *        module. Were that module freed, the others' calls would reach a dangling function (a
 *        GPU kernel: CUDA_ERROR_INVALID_HANDLE, or a crash). So the context is pointed back at
 *        the first module, which lives while any share does (for an object never unloaded,
 *        -z nodelete as self-contained artifacts are, as long as the process). Null when the
 *        object cannot be told (no embedded blob).
 */
std::shared_ptr<void> ShareLoadedObject(const ffi::Module& library);

/*! \brief Whether the file `library` was mapped from now holds something else (proven: it is
 *         there, and differs where the embedded blob lies); false when it is the same, was
 *         removed, or cannot be told. */
bool WasReplaced(const ffi::Module& library);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_
