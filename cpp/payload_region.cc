// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file payload_region.cc
 * \brief Locating zero-copy payload regions in loaded libraries (ELF platforms).
 */
#include "payload_region.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tvm/ffi/error.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "unique_fd.h"

namespace tvm_partial {
namespace region {

namespace {

/*! \brief A loaded object as dl_iterate_phdr reports it, copied out of the callback. */
struct Candidate {
  std::string name;
  ElfW(Addr) base;                // dlpi_addr: where its segments are relocated to
  std::vector<ElfW(Phdr)> loads;  // its PT_LOAD program headers
};

// Runs with the loader's lock held: no dlopen, dlsym or dlclose here (another thread's dlopen
// waits for that lock while holding its own, and the two would deadlock). Only copy.
int Collect(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<Candidate>*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  Candidate c{info->dlpi_name, info->dlpi_addr, {}};
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD) c.loads.push_back(info->dlpi_phdr[i]);
  }
  out->push_back(std::move(c));
  return 0;
}

/*! \brief The latest match: a reference to the library, the symbol's address, its file offset and
 *         the end of the file-backed part of its segment. */
struct Match {
  void* handle = nullptr;
  std::string library;
  const char* address = nullptr;
  size_t file_offset = 0;
  size_t segment_file_end = 0;
};

/*! \brief Whether `c` defines `symbol` itself (dlsym also searches an object's dependencies: the
 *         address must lie in one of its own PT_LOAD segments); if so, fill `match`. */
bool Defines(const Candidate& c, const char* symbol, Match* match) {
  void* handle = dlopen(c.name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;  // unloaded since it was listed
  // The same object still (not closed and reopened elsewhere since it was listed)?
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_addr != c.base) {
    dlclose(handle);
    return false;
  }
  const char* address = static_cast<const char*>(dlsym(handle, symbol));
  if (address != nullptr) {
    for (const ElfW(Phdr) & ph : c.loads) {
      const char* start = reinterpret_cast<const char*>(c.base + ph.p_vaddr);
      if (address < start || address >= start + ph.p_memsz) continue;
      match->handle = handle;
      match->library = c.name;
      match->address = address;
      match->file_offset = static_cast<size_t>(address - start) + ph.p_offset;
      match->segment_file_end = ph.p_offset + ph.p_filesz;
      return true;
    }
  }
  dlclose(handle);
  return false;
}

}  // namespace

MappedRegion Find(const std::string& symbol, size_t size) {
  std::vector<Candidate> candidates;
  dl_iterate_phdr(Collect, &candidates);
  // Outside the callback now. The most recently loaded object that defines the symbol wins.
  Match search;
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    if (Defines(*it, symbol.c_str(), &search)) break;
  }
  if (search.handle == nullptr) {
    TVM_FFI_THROW(RuntimeError) << "the constants of this partial_apply module live in the payload "
                                << "region " << symbol << " of its library, which is not loaded: "
                                << "load the exported library itself (tvm.runtime.load_module)";
  }
  MappedRegion out;
  out.keepalive = std::shared_ptr<void>(search.handle, [](void* h) { dlclose(h); });
  out.library = search.library;
  struct stat st;
  if (stat(search.library.c_str(), &st) != 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot check the size of " << search.library
                                << ", which holds the payload region " << symbol;
  }
  const size_t file_size = static_cast<size_t>(st.st_size);
  if (search.file_offset > file_size || size > file_size - search.file_offset ||
      search.file_offset + size > search.segment_file_end) {
    TVM_FFI_THROW(ValueError) << "corrupted partial_apply data: the payload region of " << size
                              << " bytes at file offset " << search.file_offset
                              << " runs past the end of " << search.library << " (" << file_size
                              << " bytes); the file is truncated";
  }
  out.data = search.address;
  out.size = size;
  return out;
}

MappedRegion MapAppended(const std::string& library, uint64_t size, uint64_t link) {
  const int fd = open(library.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot open " << library
                                << " to map the payload region appended to it: "
                                << std::strerror(errno);
  }
  const detail::UniqueFd closer(fd);
  struct stat st;
  char trailer[format::kTrailerSize];
  uint64_t offset = 0, recorded_size = 0, recorded_link = 0;
  const uint64_t file_size = fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  const bool found =
      file_size >= format::kTrailerSize &&
      pread(fd, trailer, sizeof(trailer), static_cast<off_t>(file_size - format::kTrailerSize)) ==
          static_cast<ssize_t>(sizeof(trailer)) &&
      format::DecodeTrailer(trailer, &offset, &recorded_size, &recorded_link);
  if (!found) {
    TVM_FFI_THROW(ValueError) << library << " is truncated or was rewritten: its payload region ("
                              << size << " bytes, appended after the code) is missing, and so is "
                              << "the trailer at the end of the file that locates it (tools such "
                              << "as strip drop data appended to a library); copy or export it "
                              << "again";
  }
  if (recorded_size != size || recorded_link != link || size < format::kRegionHeaderSize ||
      offset % format::kAppendAlignment != 0 || offset > file_size - format::kTrailerSize ||
      size != file_size - format::kTrailerSize - offset) {
    TVM_FFI_THROW(ValueError) << library << " is damaged: the trailer of its appended payload "
                              << "region (offset " << offset << ", " << recorded_size
                              << " bytes) does not match its metadata (" << size
                              << " bytes) or the file (" << file_size
                              << " bytes); copy or export it again";
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t map_start = offset - offset % page;
  const size_t length = static_cast<size_t>(offset + size - map_start);
  void* base =
      mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, static_cast<off_t>(map_start));
  if (base == MAP_FAILED) {
    TVM_FFI_THROW(RuntimeError) << "cannot map the payload region appended to " << library << ": "
                                << std::strerror(errno);
  }
  MappedRegion out;
  out.keepalive = std::shared_ptr<void>(base, [length](void* p) { munmap(p, length); });
  out.data = static_cast<const char*>(base) + (offset - map_start);
  out.size = static_cast<size_t>(size);
  out.library = library;
  return out;
}

}  // namespace region
}  // namespace tvm_partial
