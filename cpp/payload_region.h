// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file payload_region.h
 * \brief Internal: finding a zero-copy payload region of a loaded library.
 *
 * A zero-copy export appends the tensor payloads to the artifact's file (format flag 4) and keeps
 * only the region's header in a data section, under a symbol of its own; artifacts written before
 * hold the whole region in that section. Either way the region is mapped privately from the file:
 * pages are read only when touched, and a kernel writing into a bound tensor gets a private copy
 * of the page (copy-on-write), never changing the file.
 */
#ifndef TVM_PARTIAL_PAYLOAD_REGION_H_
#define TVM_PARTIAL_PAYLOAD_REGION_H_

#include <cstddef>
#include <memory>
#include <string>

namespace tvm_partial {
namespace region {

/*! \brief A payload region mapped from a library file, and what keeps the mapping alive (a
 *         reference to the loaded library, or the region's own mapping). */
struct MappedRegion {
  const char* data = nullptr;
  size_t size = 0;
  std::string library;              // the file it is mapped from
  std::shared_ptr<void> keepalive;  // a reference to the library (dlclose on release)
};

/*!
 * \brief Find `symbol` among the loaded libraries (the most recently loaded wins) and check that
 *        the file holds all `size` bytes of it (a truncated file would fault when a page is
 * touched).
 * \throws RuntimeError when no loaded library has the symbol; ValueError for a truncated file.
 */
MappedRegion Find(const std::string& symbol, size_t size);

/*!
 * \brief Map the payload region appended to the library file `library` (format flag 4): read the
 *        trailer at the file's end, check it against `size` and `link`, and map the region
 *        privately by its file offset (pages read when touched, writes stay in the process).
 * \throws ValueError naming the file when the trailer is missing (a file cut short, or rewritten
 *         by a tool such as strip, which drops appended data) or disagrees with the metadata;
 *         RuntimeError when the file cannot be opened or mapped.
 */
MappedRegion MapAppended(const std::string& library, uint64_t size, uint64_t link);

}  // namespace region
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_PAYLOAD_REGION_H_
