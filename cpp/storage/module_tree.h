// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/module_tree.h
 * \brief Internal: TVM's embedded module blob (`__tvm_ffi__library_bin`) read two ways with one
 *        parser: in memory, as the system's loader mapped it (the loaders' check before TVM
 *        decodes it, CheckModuleTree in storage/loaded_library.h), and from an artifact's file
 *        without loading it (inspect, verify, the update of a loaded artifact): the ELF section
 *        tables' symbols and the modules the blob holds.
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

/*! \brief The symbol TVM embeds its module tree under: a u64 length, then the tree. */
constexpr const char kBinSymbol[] = "__tvm_ffi__library_bin";

/*! \brief One module of the tree: its kind and where its bytes lie (after their u64 length);
 *         the library's own code ("_lib") has none. */
struct EmbeddedModule {
  std::string kind;
  uint64_t offset = 0;
  uint64_t size = 0;
};

/*!
 * \brief The modules of a tree of `size` bytes, whose bytes `read(pos, n, out)` copies (`pos`
 *        counts from the tree's start, within `size`); offsets count from the tree's start too.
 *        The whole tree is checked: the counts, lengths and import indices TVM's loader trusts.
 * \throws ValueError naming `path`: "the embedded module blob is damaged: ...".
 */
std::vector<EmbeddedModule> ParseModuleTree(
    const std::function<void(uint64_t pos, uint64_t n, char* out)>& read, uint64_t size,
    const std::string& path);

/*! \brief Where TVM's embedded blob lies in a library's file (its u64 length at `at`, then
 *         `length` bytes), and its modules, at file offsets. */
struct LibraryModules {
  uint64_t at = 0;
  uint64_t length = 0;
  std::vector<EmbeddedModule> modules;
};

/*!
 * \brief Read `file` as a 64-bit little-endian ELF library, without loading it: its embedded
 *        module blob (found through the section tables' symbols) and the modules it holds.
 * \throws ValueError naming the file: not an ELF library, no section table (stripped), no
 *         embedded blob, or any table, symbol or count that runs past its end.
 */
LibraryModules ReadLibraryModules(const File& file);

/*!
 * \brief Write `now` over the one embedded module of `kind` in the library at `path` whose
 *        bytes are `was` (same length): how a zero-copy export records the payload hashes, known
 *        only once the payloads are appended after linking. Other modules of that kind (partial
 *        modules imported into the exported one) are left as they are.
 * \throws RuntimeError naming the file when no single module holds `was`, or a write fails.
 */
void ReplaceEmbeddedModule(const std::string& path, const std::string& kind, const std::string& was,
                           const std::string& now);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_MODULE_TREE_H_
