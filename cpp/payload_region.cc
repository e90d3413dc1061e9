/*!
 * \file payload_region.cc
 * \brief Locating zero-copy payload regions in loaded libraries (ELF platforms).
 */
#include "payload_region.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <tvm/ffi/error.h>

#include <string>

namespace tvm_partial {
namespace region {

namespace {

struct Search {
  const char* symbol;
  // The latest match: library, address, the file offset and the end of the file-backed segment.
  void* handle = nullptr;
  std::string library;
  const char* address = nullptr;
  size_t file_offset = 0;
  size_t segment_file_end = 0;
};

int Visit(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return 0;
  const char* address = static_cast<const char*>(dlsym(handle, search->symbol));
  bool kept = false;
  if (address != nullptr) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      if (ph.p_type != PT_LOAD) continue;
      const char* start = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
      if (address < start || address >= start + ph.p_memsz) continue;
      // Defined in this object (dlsym also searches its dependencies): keep it, drop an earlier one.
      if (search->handle != nullptr) dlclose(search->handle);
      search->handle = handle;
      search->library = info->dlpi_name;
      search->address = address;
      search->file_offset = static_cast<size_t>(address - start) + ph.p_offset;
      search->segment_file_end = ph.p_offset + ph.p_filesz;
      kept = true;
      break;
    }
  }
  if (!kept) dlclose(handle);
  return 0;
}

}  // namespace

MappedRegion Find(const std::string& symbol, size_t size) {
  Search search;
  search.symbol = symbol.c_str();
  dl_iterate_phdr(Visit, &search);
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
                              << " bytes at file offset " << search.file_offset << " runs past the end of "
                              << search.library << " (" << file_size << " bytes); the file is truncated";
  }
  out.data = search.address;
  out.size = size;
  return out;
}

}  // namespace region
}  // namespace tvm_partial
