// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/loaded_library.cc
 * \brief The file a loaded library module was mapped from (storage/loaded_library.h), and the
 *        global `tvm_partial.LoadedLibraryFile` that the re-export of a loaded artifact asks.
 */
#include "storage/loaded_library.h"

#include <dlfcn.h>
#include <link.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "registry.h"

namespace tvm_partial {
namespace storage {

namespace {

constexpr const char kBinSymbol[] = "__tvm_ffi__library_bin";

/*! \brief A loaded object as dl_iterate_phdr reports it, copied out of the callback. */
struct Segments {
  std::string name;
  ElfW(Addr) base = 0;
  std::vector<ElfW(Phdr)> loads;  // its PT_LOAD program headers
};

// Runs with the loader's lock held: no dlopen, dlsym or dlclose here (another thread's dlopen
// waits for that lock while holding its own, and the two would deadlock). Only copy.
int CollectSegments(struct dl_phdr_info* info, size_t, void* data) {
  auto* want = static_cast<Segments*>(data);
  if (info->dlpi_addr != want->base || info->dlpi_name == nullptr ||
      want->name != info->dlpi_name) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD) want->loads.push_back(info->dlpi_phdr[i]);
  }
  return 1;
}

/*! \brief A reference to the loaded object that holds `address`, proven to be that object:
 *         the loader resolves `symbol` in it to `address`. */
struct Object {
  void* handle = nullptr;  // dlopen(RTLD_NOLOAD) reference, released by the destructor
  struct link_map* map = nullptr;
  Segments segments;
  ~Object() {
    if (handle != nullptr) dlclose(handle);
  }
  /*! \brief The file offset of [address, address + size) when it lies in one file-backed part of
   *         one of the object's PT_LOAD segments, else nullopt. */
  std::optional<uint64_t> FileOffset(const char* address, uint64_t size) const {
    for (const ElfW(Phdr) & ph : segments.loads) {
      const char* start = reinterpret_cast<const char*>(segments.base + ph.p_vaddr);
      if (address < start || address >= start + ph.p_filesz) continue;
      const uint64_t into = static_cast<uint64_t>(address - start);
      if (size > ph.p_filesz - into) return std::nullopt;
      return ph.p_offset + into;
    }
    return std::nullopt;
  }
};

/*! \brief Fill `out` when `address` is `symbol` of a loaded object, as the loader resolves it in
 *         that very object. */
bool ObjectAt(const void* address, const char* symbol, Object* out) {
  Dl_info info{};
  struct link_map* map = nullptr;
  if (address == nullptr ||
      dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr || info.dli_fname == nullptr || info.dli_fname[0] == '\0') {
    return false;
  }
  void* handle = dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  struct link_map* opened = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &opened) != 0 || opened != map ||
      dlsym(handle, symbol) != address) {
    dlclose(handle);
    return false;
  }
  out->handle = handle;
  out->map = map;
  out->segments.name = map->l_name;
  out->segments.base = map->l_addr;
  dl_iterate_phdr(CollectSegments, &out->segments);
  return !out->segments.loads.empty();
}

/*! \brief The address the library module's function `name` calls: tvm-ffi wraps the symbol
 *         `__tvm_ffi_<name>` it resolved in the module's own library. Candidates are where tvm-ffi
 *         keeps it (the function's safe_call, or the first word it captures); the caller accepts
 *         one only when the loader resolves the symbol to it. */
std::vector<const void*> Candidates(const ffi::Function& f) {
  const ffi::FunctionObj* obj = f.operator->();
  return {reinterpret_cast<const void*>(obj->safe_call),
          *reinterpret_cast<const void* const*>(obj + 1)};
}

/*! \brief Whether `size` bytes of `file` at `offset` are the `size` bytes at `memory`. */
bool SameBytes(const File& file, uint64_t offset, const char* memory, uint64_t size) {
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(size, kChunk)));
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kChunk));
    if (!ReadAt(file, offset + done, n, buffer.data()) ||
        std::memcmp(buffer.data(), memory + done, n) != 0) {
      return false;
    }
    done += n;
  }
  return true;
}

/*! \brief The loaded object of a library module and where its embedded blob lies, in memory
 *         and in the file; false when the object cannot be told apart. */
bool FindBlob(const ffi::Module& library, Object* object, const char** address, uint64_t* at,
              uint64_t* length) {
  if (std::strcmp(library->kind(), "library") != 0) {
    TVM_FFI_THROW(TypeError) << "expected a module loaded from a shared library (kind 'library'), "
                             << "got kind '" << library->kind() << "'";
  }
  // "_library_bin" -> the symbol __tvm_ffi__library_bin of the module's own library. The
  // function is never called: it only carries the address the module resolved.
  ffi::Optional<ffi::Function> bin = library->GetFunction("_library_bin", /*query_imports=*/false);
  if (!bin.has_value()) return false;
  for (const void* candidate : Candidates(*bin)) {
    if (!ObjectAt(candidate, kBinSymbol, object)) continue;
    *address = static_cast<const char*>(candidate);
    std::memcpy(length, *address, sizeof(*length));
    std::optional<uint64_t> offset =
        *length <= UINT64_MAX - 8 ? object->FileOffset(*address, 8 + *length) : std::nullopt;
    if (!offset.has_value()) {
      TVM_FFI_THROW(ValueError) << "the embedded module blob of " << object->segments.name
                                << " does not lie inside the file's loaded segments";
    }
    *at = *offset;
    return true;
  }
  return false;
}

}  // namespace

LoadedLibrary OpenLoadedLibrary(const ffi::Module& library, const std::string& symbol) {
  Object object;
  const char* address = nullptr;
  uint64_t at = 0, length = 0;
  if (!FindBlob(library, &object, &address, &at, &length)) {
    TVM_FFI_THROW(ValueError) << "cannot tell which file this module's code was loaded from (its "
                              << "library holds no embedded module blob that the system's loader "
                              << "places in one loaded object); load the artifact with "
                              << "tvm.runtime.load_module or tvm_partial.load";
  }
  const std::string path = object.segments.name;
  LoadedLibrary out;
  try {
    out.file = OpenRegular(path, "artifact");
  } catch (const ffi::Error& err) {
    if (err.kind() != "FileNotFoundError") throw;
    TVM_FFI_THROW(FileNotFoundError)
        << path << ", which this process loaded this module's code from, was removed or renamed "
        << "since; its code is still loaded, but its payloads, which stay in the file, cannot be "
        << "read: load the artifact from where it is now, in a new process or under a new path";
  }
  if (!SameBytes(*out.file, at, address, 8 + length)) {
    TVM_FFI_THROW(ValueError) << path << " was replaced after this process first loaded it: the "
                              << "system's loader returns the code and bindings it loaded first, "
                              << "not the artifact the file holds now; load it in a new process "
                              << "or under a new path";
  }
  out.real_path = RealPath(*out.file);
  if (!symbol.empty()) {
    const char* found = static_cast<const char*>(dlsym(object.handle, symbol.c_str()));
    // Only the object's own definition counts (dlsym also searches its dependencies).
    if (found != nullptr && object.FileOffset(found, 64).has_value()) {
      out.symbol_bytes = std::string(found, 64);
    }
  }
  return out;
}

bool WasReplaced(const ffi::Module& library) {
  Object object;
  const char* address = nullptr;
  uint64_t at = 0, length = 0;
  if (!FindBlob(library, &object, &address, &at, &length)) return false;
  std::shared_ptr<File> file;
  try {
    file = OpenRegular(object.segments.name, "artifact");
  } catch (const ffi::Error&) {
    return false;  // removed (or unreadable): the loaded version is the only one
  }
  return !SameBytes(*file, at, address, 8 + length);
}

TVM_FFI_STATIC_INIT_BLOCK() {
  // {"path"}: the file a loaded library module was mapped from (what the re-export of a loaded
  // artifact copies), proven as OpenLoadedLibrary proves it.
  detail::RegisterGlobalOnce("tvm_partial.LoadedLibraryFile", [](ffi::Module library) {
    ffi::Map<ffi::String, ffi::Any> out;
    out.Set("path", ffi::String(OpenLoadedLibrary(library).real_path));
    return out;
  });
}

}  // namespace storage
}  // namespace tvm_partial
