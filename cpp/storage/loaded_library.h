// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/loaded_library.h
 * \brief Internal: which file a loaded library module's code was mapped from, asked of the module:
 *        the mapped inode holding the mapped blob's bytes (why: docs/format.md).
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

/*! \brief Open the file `library` was mapped from: `proven` if given, else the file under the
 *         loader's name for it; either must be the mapped inode and bytes. \throws ValueError
 *         (no embedded blob, object not told apart, file replaced); FileNotFoundError (removed). */
LoadedLibrary OpenLoadedLibrary(const ffi::Module& library,
                                const std::shared_ptr<File>& proven = nullptr);

/*! \brief Refuse `file` unless it is a 64-bit little-endian ELF no shorter than its headers say
 *         (segments, section table, listed sections): the loader maps segments past a truncated
 *         file's end, and touching them raises SIGBUS. \throws ValueError naming the file. */
void CheckComplete(const File& file);

/*! \brief Load `file` (opened from `path`) with the system's loader: under `path`, else, if
 *         `is_file` refuses that (another version's object: docs/format.md), under a fresh name.
 *         \throws ValueError when neither name gives this file's object, its module tree is
 *         damaged, or decoding fails; prefixed with `path` if not named. */
ffi::Module LoadArtifactFile(const std::shared_ptr<File>& file, const std::string& path,
                             const std::function<bool(const ffi::Module&)>& is_file);

/*! \brief Whether `library`'s code was mapped from `file` (the very inode and bytes); true for a
 *         library without an embedded blob (no bindings of ours to prove). */
bool LoadedFrom(const ffi::Module& library, const File& file);

/*! \brief A share in the first library module made from `library`'s object (null without an
 *         embedded blob), which the object's context is pointed back at: the functions its host
 *         code caches stay alive while any share does (docs/design.md). */
std::shared_ptr<void> ShareLoadedObject(const ffi::Module& library);

/*! \brief Whether `library`'s file provably holds something else now (present, differing at
 *         the embedded blob); false when the same, removed, or unknown. */
bool WasReplaced(const ffi::Module& library);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_
