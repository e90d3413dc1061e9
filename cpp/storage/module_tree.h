// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/module_tree.h
 * \brief Internal: TVM's embedded module blob, parsed in memory as the system's loader mapped it
 *        (before TVM decodes it) or from an artifact's file, without loading it.
 */
#ifndef TVM_PARTIAL_STORAGE_MODULE_TREE_H_
#define TVM_PARTIAL_STORAGE_MODULE_TREE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "storage/file.h"

namespace tvm_partial {
namespace storage {

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

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_MODULE_TREE_H_
