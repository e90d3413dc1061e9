// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/module_tree.cc
 * \brief CheckModuleTree (storage/loaded_library.h): TVM's embedded module blob checked whole
 *        before TVM's loader decodes it.
 */
#include <tvm/ffi/error.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "storage/loaded_library.h"

namespace tvm_partial {
namespace storage {

void CheckModuleTree(const char* data, uint64_t size, const std::string& path) {
  // The layout TVM writes (tvm-ffi's library module): vec<u64> import indptr (one entry per
  // module, plus one), vec<u64> imported children, then per module a kind string and, except for
  // the library's own code ("_lib"), its bytes; a vec or a string is a u64 count, then its items.
  uint64_t pos = 0;
  auto fail = [&path](const std::string& what) {
    TVM_FFI_THROW(ValueError) << path << ": the embedded module blob is damaged: " << what
                              << "; copy or export the artifact again";
  };
  auto u64 = [&](const char* what) {
    if (size - pos < 8) fail(std::string(what) + " runs past its end");
    uint64_t value = 0;
    std::memcpy(&value, data + pos, 8);
    pos += 8;
    return value;
  };
  auto counted = [&](const char* what, uint64_t item) {  // a count whose items must fit
    const uint64_t n = u64(what);
    if (n > (size - pos) / item) {
      fail(std::string(what) + " " + std::to_string(n) + " cannot fit in its " +
           std::to_string(size - pos) + " remaining bytes");
    }
    return n;
  };
  auto u64s = [&](const char* count, const char* item) {
    std::vector<uint64_t> out(counted(count, 8));
    for (uint64_t& v : out) v = u64(item);
    return out;
  };
  const std::vector<uint64_t> indptr = u64s("the import index count", "an import index");
  const std::vector<uint64_t> children = u64s("the import list length", "an import");
  if (indptr.empty()) fail("no import index (a module tree has one per module, plus one)");
  const uint64_t modules = indptr.size() - 1;
  for (uint64_t i = 0; i < modules; ++i) {
    const uint64_t n = counted("a module kind's length", 1);
    const std::string kind(data + pos, n);
    pos += n;
    if (kind != "_lib") pos += counted(("the length of the " + kind + " module").c_str(), 1);
  }
  for (uint64_t i = 0; i < modules; ++i) {
    if (indptr[i] > indptr[i + 1] || indptr[i + 1] > children.size()) {
      fail("module " + std::to_string(i) + "'s imports [" + std::to_string(indptr[i]) + ", " +
           std::to_string(indptr[i + 1]) + ") are not within the " +
           std::to_string(children.size()) + " listed");
    }
  }
  for (uint64_t child : children) {
    if (child >= modules) {
      fail("an import of module " + std::to_string(child) + " among " + std::to_string(modules));
    }
  }
}

}  // namespace storage
}  // namespace tvm_partial
