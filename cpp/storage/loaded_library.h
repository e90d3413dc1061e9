// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/loaded_library.h
 * \brief Internal: which file a loaded library module's code was mapped from, answered by that
 *        module itself, never by process-wide state.
 *
 * Payloads must come from the very file the loader mapped the code from: a process may hold
 * several versions of an artifact, and a replaced path still yields the loader's old object. So
 * the object is found via the module's embedded blob (`__tvm_ffi__library_bin`, proven its own
 * symbol), and the file, opened by the loader's name for it, is accepted only if it is the mapped
 * inode (/proc/self/maps) holding the mapped blob's bytes.
 */
#ifndef TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_
#define TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_

#include <tvm/ffi/extra/module.h>

#include <functional>
#include <memory>
#include <string>

#include "storage/file.h"

namespace tvm_partial {
namespace storage {

namespace ffi = ::tvm::ffi;

/*! \brief The file a library module was loaded from, opened and proven to be it. */
struct LoadedLibrary {
  std::shared_ptr<File> file;
  /*! \brief Absolute, symlinks resolved: where a recorded weights file is looked for. */
  std::string real_path;
};

/*! \brief Open the file `library` (kind "library") was mapped from: `proven` if given (the file
 *         LoadArtifactFile loaded), else the file under the name the system's loader mapped;
 *         either must be the very inode and bytes the process maps. \throws ValueError when the
 *         module has no embedded blob, its object cannot be told apart, or the file was replaced
 *         since; FileNotFoundError when it was removed or renamed. */
LoadedLibrary OpenLoadedLibrary(const ffi::Module& library,
                                const std::shared_ptr<File>& proven = nullptr);

/*! \brief Refuse `file` unless it is a 64-bit little-endian ELF no shorter than its headers say
 *         (segments, section table, listed sections): the loader maps segments past a truncated
 *         file's end, and touching them raises SIGBUS. Run before the system's loader (by every
 *         loader, Python's `load` too) and before inspect/verify read a file.
 *         \throws ValueError naming the file and what is wrong. */
void CheckComplete(const File& file);

/*! \brief Load `file` (opened from `path`) with the system's loader, which answers a name it has
 *         seen with the object it has: first under `path`; if that gives another file's object
 *         (`is_file` false: an earlier version, by that name or an alias), under a fresh name (a
 *         temporary symlink to the descriptor). A file already mapped under another name (a
 *         rename) is that object. The caller keeps `file` for the payloads.
 *         \throws ValueError when neither name gives this file's object, its module tree is
 *         damaged (ParseModuleTree), or decoding fails; prefixed with `path` if not named. */
ffi::Module LoadArtifactFile(const std::shared_ptr<File>& file, const std::string& path,
                             const std::function<bool(const ffi::Module&)>& is_file);

/*! \brief Whether `library`'s code was mapped from `file` (the very inode and bytes); true for a
 *         library without an embedded blob (no bindings of ours to prove). */
bool LoadedFrom(const ffi::Module& library, const File& file);

/*! \brief A share in the first library module made from `library`'s object, held by each partial
 *         module over it. The object is one per file per process: TVM's loader points its context
 *         at the latest library module, and host code caches in the object each function (kernel,
 *         global) it looks up there, owned by that module; were it freed, other modules' calls
 *         would reach dangling functions (CUDA_ERROR_INVALID_HANDLE, or a crash). So the context
 *         is pointed back at the first module, which lives while any share does (for a -z
 *         nodelete object, as self-contained artifacts are, for the process). Null without an
 *         embedded blob. */
std::shared_ptr<void> ShareLoadedObject(const ffi::Module& library);

/*! \brief Whether `library`'s file provably holds something else now (present, differing at
 *         the embedded blob); false when the same, removed, or unknown. */
bool WasReplaced(const ffi::Module& library);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_
