// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/library.h
 * \brief Internal: a library's file. Its embedded module tree, read without loading it; once the
 *        system's loader mapped it, which file its code came from (why: docs/format.md).
 */
#ifndef TVM_PARTIAL_STORAGE_LIBRARY_H_
#define TVM_PARTIAL_STORAGE_LIBRARY_H_

#include <tvm/ffi/extra/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/file.h"

namespace tvm_partial {
namespace storage {

namespace ffi = ::tvm::ffi;

// The symbol TVM embeds its module tree under: a u64 length, then the tree.
constexpr const char kBinSymbol[] = "__tvm_ffi__library_bin";

// One module of the tree: its kind and where its bytes lie; the library's code ("_lib") has none.
struct EmbeddedModule {
  std::string kind;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The modules of a `size`-byte tree read through `read` (offsets from its start), checking every
// count, length and import index TVM's loader trusts; ValueError naming `path`.
std::vector<EmbeddedModule> ParseModuleTree(
    const std::function<void(uint64_t pos, uint64_t n, char* out)>& read, uint64_t size,
    const std::string& path);

// Where the blob lies in a library's file (its u64 length at `at`), its modules at file offsets.
struct LibraryModules {
  uint64_t at = 0;
  uint64_t length = 0;
  std::vector<EmbeddedModule> modules;
};

/*! \brief Read `file`'s blob, found via its ELF symbol tables, and its modules. \throws
 *         ValueError naming the file: not ELF, stripped, no blob, or anything past its end. */
LibraryModules ReadLibraryModules(const File& file);

/*! \brief Overwrite with `now` the one embedded module of `kind` in the library at `path` whose
 *         bytes are `was` (same length): how an export records payload hashes, known only after
 *         linking. \throws RuntimeError when no single module holds `was`, or on write. */
void ReplaceEmbeddedModule(const std::string& path, const std::string& kind, const std::string& was,
                           const std::string& now);

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

#endif  // TVM_PARTIAL_STORAGE_LIBRARY_H_
