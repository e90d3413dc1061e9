// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/loaded_library.h
 * \brief Internal: which file a loaded library's code was mapped from (why: docs/format.md).
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

// The file a library module was loaded from, opened and proven to be it.
struct LoadedLibrary {
  std::shared_ptr<File> file;
  std::string real_path;  // symlinks resolved: where a recorded weights file is looked for
};

// Open the file `library` was mapped from (`proven`, else by the loader's name), checked to be
// the mapped inode and bytes. ValueError: no blob, ambiguous object, replaced; FileNotFoundError.
LoadedLibrary OpenLoadedLibrary(const ffi::Module& library,
                                const std::shared_ptr<File>& proven = nullptr);

// ValueError unless `file` is a 64-bit little-endian ELF as long as its headers say (segments,
// section table, listed sections): touching segments mapped past a truncated end raises SIGBUS.
void CheckComplete(const File& file);

// Load `file` (opened from `path`) with the system's loader under `path`, or under a fresh name if
// `is_file` refuses that (another version's object: docs/format.md). ValueError (prefixed with
// `path`) when neither name gives this file's object, the module tree is damaged or decoding fails.
ffi::Module LoadArtifactFile(const std::shared_ptr<File>& file, const std::string& path,
                             const std::function<bool(const ffi::Module&)>& is_file);

// Whether `library`'s code was mapped from `file` (its inode and bytes); true without an embedded
// blob (no bindings of ours to prove).
bool LoadedFrom(const ffi::Module& library, const File& file);

// A share in the first module made from `library`'s object (null without a blob), which its context
// points back at: functions its host code caches live while any share does (docs/design.md).
std::shared_ptr<void> ShareLoadedObject(const ffi::Module& library);

// Whether `library`'s file provably holds something else now (its embedded blob differs); false
// when the same, removed, or unknown.
bool WasReplaced(const ffi::Module& library);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_LOADED_LIBRARY_H_
