// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/loaded_library.cc
 * \brief The file a loaded library module was mapped from.
 */
#include "storage/loaded_library.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "storage/module_tree.h"

namespace tvm_partial {
namespace storage {

namespace {

/*! \brief A loaded object found by ObjectAt, with a reference that keeps it loaded. */
struct Object {
  void* handle = nullptr;  // dlopen(RTLD_NOLOAD) reference, released by the destructor
  struct link_map* map = nullptr;
  std::vector<ElfW(Phdr)> loads;  // its PT_LOAD program headers
  ~Object() {
    if (handle != nullptr) dlclose(handle);
  }
  // The file offset of [address, address + size) if in the file-backed part of one segment.
  std::optional<uint64_t> FileOffset(const char* address, uint64_t size) const {
    for (const ElfW(Phdr) & ph : loads) {
      const char* start = reinterpret_cast<const char*>(map->l_addr + ph.p_vaddr);
      if (address < start || address >= start + ph.p_filesz) continue;
      const uint64_t into = static_cast<uint64_t>(address - start);
      if (size > ph.p_filesz - into) return std::nullopt;
      return ph.p_offset + into;
    }
    return std::nullopt;
  }
  // The file offset of the blob at `address` (u64 `length`, then the bytes) if all in the file.
  std::optional<uint64_t> BlobFileOffset(const char* address, uint64_t* length) const {
    if (!FileOffset(address, 8).has_value()) return std::nullopt;
    std::memcpy(length, address, sizeof(*length));
    if (*length > UINT64_MAX - 8) return std::nullopt;
    return FileOffset(address, 8 + *length);
  }
};

// Runs under the loader's lock: only copy; a dlopen, dlsym or dlclose would deadlock with another.
int CollectLoads(struct dl_phdr_info* info, size_t, void* data) {
  auto* object = static_cast<Object*>(data);
  if (info->dlpi_addr != object->map->l_addr || info->dlpi_name == nullptr ||
      std::strcmp(object->map->l_name, info->dlpi_name) != 0) {
    return 0;
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD) object->loads.push_back(info->dlpi_phdr[i]);
  }
  return 1;
}

/*! \brief Fill `out` if `address` is the blob's symbol as the loader resolves it in its object. */
bool ObjectAt(const void* address, Object* out) {
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
      dlsym(handle, kBinSymbol) != address) {
    dlclose(handle);
    return false;
  }
  out->handle = handle;
  out->map = map;
  dl_iterate_phdr(CollectLoads, out);
  return !out->loads.empty();
}

// The inode mapped at `address`; not the device (overlay file systems map the underlying one).
std::optional<uint64_t> MappedInode(const void* address) {
  std::FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return std::nullopt;
  const auto want = reinterpret_cast<uintptr_t>(address);
  std::optional<uint64_t> out;
  char* line = nullptr;
  size_t capacity = 0;
  while (getline(&line, &capacity, maps) > 0) {
    unsigned long long lo = 0, hi = 0, inode = 0;  // NOLINT(runtime/int): sscanf's types
    if (std::sscanf(line, "%llx-%llx %*s %*x %*x:%*x %llu", &lo, &hi, &inode) == 3 && want >= lo &&
        want < hi) {
      if (inode != 0) out = inode;
      break;
    }
  }
  std::free(line);
  std::fclose(maps);
  return out;
}

struct Blob {
  Object object;
  const char* address = nullptr;
  uint64_t at = 0;      // its offset in the file
  uint64_t length = 0;  // of the blob after its 8-byte length
  std::optional<uint64_t> inode;
};

/*! \brief Fill `blob` from `library`; false when its object cannot be told apart. */
bool FindBlob(const ffi::Module& library, Blob* blob) {
  if (std::strcmp(library->kind(), "library") != 0) {
    TVM_FFI_THROW(TypeError) << "expected a module loaded from a shared library (kind 'library'), "
                             << "got kind '" << library->kind() << "'";
  }
  // Never called: carries the address of __tvm_ffi__library_bin the module resolved in its library.
  ffi::Optional<ffi::Function> bin = library->GetFunction("_library_bin", /*query_imports=*/false);
  if (!bin.has_value()) return false;
  // tvm-ffi keeps it as safe_call or the first captured word: take the one the loader resolves.
  const ffi::FunctionObj* obj = bin.get();
  for (const void* candidate : {reinterpret_cast<const void*>(obj->safe_call),
                                *reinterpret_cast<const void* const*>(obj + 1)}) {
    if (!ObjectAt(candidate, &blob->object)) continue;
    blob->address = static_cast<const char*>(candidate);
    const std::optional<uint64_t> offset =
        blob->object.BlobFileOffset(blob->address, &blob->length);
    if (!offset.has_value()) {
      TVM_FFI_THROW(ValueError) << "the embedded module blob of " << blob->object.map->l_name
                                << " does not lie inside the file's loaded segments";
    }
    blob->at = *offset;
    blob->inode = MappedInode(blob->address);
    return true;
  }
  return false;
}

// Whether `file` is the mapped inode (not a copy or a rename over the path), blob not written over.
bool IsMappedFile(const File& file, const Blob& blob) {
  struct stat st{};
  if (!blob.inode.has_value() || fstat(file.fd.get(), &st) != 0 ||
      static_cast<uint64_t>(st.st_ino) != *blob.inode) {
    return false;
  }
  const uint64_t size = 8 + blob.length;
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(size, kChunk)));
  for (uint64_t done = 0; done < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, kChunk));
    if (!ReadAt(file, blob.at + done, n, buffer.data()) ||
        std::memcmp(buffer.data(), blob.address + done, n) != 0) {
      return false;
    }
    done += n;
  }
  return true;
}

// Before TVM decodes via `handle`: check its object's blob is a whole module tree in that file.
void CheckBlobOf(void* handle, const std::string& path) {
  const char* blob = static_cast<const char*>(dlsym(handle, kBinSymbol));
  if (blob == nullptr) return;  // no embedded modules: TVM makes the library module alone
  Object object;
  uint64_t length = 0;
  if (!ObjectAt(blob, &object) || !object.FileOffset(blob, 8).has_value()) {
    TVM_FFI_THROW(ValueError) << path << ": its embedded module blob does not lie in one loaded "
                              << "object's file; refused before TVM decodes it";
  }
  if (!object.BlobFileOffset(blob, &length).has_value()) {
    TVM_FFI_THROW(ValueError) << path << ": the embedded module blob is damaged: its length, "
                              << length << " bytes, runs past the file's loaded segments; copy "
                              << "or export the artifact again";
  }
  ParseModuleTree(
      [blob](uint64_t pos, uint64_t n, char* out) { std::memcpy(out, blob + 8 + pos, n); }, length,
      path);
}

/*! \brief Whether `map`'s object is never unloaded (-z nodelete, as self-contained artifacts). */
bool NeverUnloaded(const struct link_map* map) {
  for (const ElfW(Dyn)* d = map->l_ld; d != nullptr && d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_FLAGS_1) return (d->d_un.d_val & DF_1_NODELETE) != 0;
  }
  return false;
}

}  // namespace

LoadedLibrary OpenLoadedLibrary(const ffi::Module& library, const std::shared_ptr<File>& proven) {
  Blob blob;
  if (!FindBlob(library, &blob)) {
    TVM_FFI_THROW(ValueError) << "cannot tell which file this module's code was loaded from (its "
                              << "library holds no embedded module blob that the system's loader "
                              << "places in one loaded object); load the artifact with "
                              << "tvm.runtime.load_module or tvm_partial.load";
  }
  const std::string path = proven ? proven->path : blob.object.map->l_name;
  LoadedLibrary out;
  try {
    out.file = proven ? proven : OpenRegular(path, "artifact");
  } catch (const ffi::Error& err) {
    if (err.kind() != "FileNotFoundError") throw;
    TVM_FFI_THROW(FileNotFoundError)
        << path << ", which this process loaded this module's code from, was removed or renamed "
        << "since; its code is still loaded, but its payloads, which stay in the file, cannot be "
        << "read: load the artifact from where it is now, in a new process or under a new path";
  }
  if (!blob.inode.has_value()) {
    TVM_FFI_THROW(ValueError) << "cannot prove that " << path << " is the file this process "
                              << "maps its code from (/proc/self/maps cannot be read, or shows "
                              << "no file there); refused rather than read another file";
  }
  if (!IsMappedFile(*out.file, blob)) {
    TVM_FFI_THROW(ValueError) << path << " was replaced after this process first loaded it: the "
                              << "system's loader returns the code and bindings it loaded first, "
                              << "not the artifact the file holds now; load it with "
                              << "tvm_partial.load(path), which loads what the path holds now";
  }
  out.real_path = RealPath(*out.file);
  return out;
}

std::shared_ptr<void> ShareLoadedObject(const ffi::Module& library) {
  Blob blob;
  if (!FindBlob(library, &blob)) return nullptr;
  // Keyed by link map: valid while a share lives (an object outlives its library modules).
  static std::mutex mu;
  static auto* objects = new std::map<const void*, std::weak_ptr<ffi::Module>>();
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<ffi::Module>& entry = (*objects)[blob.object.map];
  std::shared_ptr<ffi::Module> first = entry.lock();
  if (first == nullptr) {
    for (auto it = objects->begin(); it != objects->end();) {
      it = it->second.expired() && it->first != blob.object.map ? objects->erase(it) : ++it;
    }
    first = std::make_shared<ffi::Module>(library);
    entry = first;
    // Never unloaded: cached functions outlive every load (a later one reaches them): keep first.
    static auto* kept = new std::vector<std::shared_ptr<ffi::Module>>();
    if (NeverUnloaded(blob.object.map)) kept->push_back(first);
  }
  // Point the context back at the first module (docs/design.md). Written only when it differs:
  // the write costs a first load about 250 KiB of resident memory.
  auto** context =
      static_cast<const void**>(dlsym(blob.object.handle, ffi::symbol::tvm_ffi_library_ctx));
  if (context != nullptr && *context != first->get()) *context = first->get();
  return first;
}

bool WasReplaced(const ffi::Module& library) {
  Blob blob;
  if (!FindBlob(library, &blob)) return false;
  std::shared_ptr<File> file;
  try {
    file = OpenRegular(blob.object.map->l_name, "artifact");
  } catch (const ffi::Error&) {
    return false;  // removed (or unreadable): the loaded version is the only one
  }
  return !IsMappedFile(*file, blob);
}

void CheckComplete(const File& file) {
  Elf64_Ehdr eh{};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(file.size, sizeof(eh)));
  const bool elf = n >= 4 && ReadAt(file, 0, n, reinterpret_cast<char*>(&eh)) &&
                   std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0;
  if (elf && n < sizeof(eh)) {
    TVM_FFI_THROW(ValueError) << file.path << " is truncated: " << n << " bytes, less than its ELF "
                              << "header (" << sizeof(eh) << "); copy or export it again";
  }
  if (!elf || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    TVM_FFI_THROW(ValueError) << file.path << " is not a tvm-partial artifact: not an ELF shared "
                              << "library (64-bit, little-endian)";
  }
  if (eh.e_phnum != 0 && eh.e_phentsize < sizeof(ElfW(Phdr))) {
    TVM_FFI_THROW(ValueError) << file.path << " is damaged: program header entries of "
                              << eh.e_phentsize << " bytes (ELF64 needs " << sizeof(ElfW(Phdr))
                              << ")";
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph;
    const uint64_t at = uint64_t{i} * eh.e_phentsize;
    if (eh.e_phoff > file.size || at > file.size - eh.e_phoff ||
        !ReadAt(file, eh.e_phoff + at, sizeof(ph), reinterpret_cast<char*>(&ph))) {
      TVM_FFI_THROW(ValueError) << file.path << " is truncated: its program headers run past "
                                << "its end (" << file.size << " bytes); copy or export it again";
    }
    if (ph.p_offset > file.size || ph.p_filesz > file.size - ph.p_offset) {
      TVM_FFI_THROW(ValueError) << file.path << " is truncated: its segments need "
                                << (ph.p_offset + ph.p_filesz) << " bytes, the file has "
                                << file.size << "; copy or export it again";
    }
  }
  // A cut sparing every segment still takes the section header table (linkers write it last)
  // and the sections it lists; the system's loader would map what is left.
  const uint64_t shoff = eh.e_shoff, shentsize = eh.e_shentsize;
  if (shoff == 0) return;  // no section table: the loader needs none
  if (shentsize < sizeof(ElfW(Shdr))) {
    TVM_FFI_THROW(ValueError) << file.path << " is damaged: section header entries of " << shentsize
                              << " bytes (ELF64 needs " << sizeof(ElfW(Shdr)) << ")";
  }
  auto check = [&file](uint64_t offset, uint64_t size, const char* what) {
    if (offset > file.size || size > file.size - offset) {
      TVM_FFI_THROW(ValueError) << file.path << " is truncated or damaged: its " << what << " "
                                << (size > UINT64_MAX - offset ? UINT64_MAX : offset + size)
                                << " bytes, the file has " << file.size
                                << "; copy or export it again";
    }
  };
  auto section = [&file, shoff, shentsize](uint64_t i) {  // inside the file: checked first
    ElfW(Shdr) sh;
    if (!ReadAt(file, shoff + i * shentsize, sizeof(sh), reinterpret_cast<char*>(&sh))) {
      TVM_FFI_THROW(ValueError) << file.path << " is truncated: it became shorter while read";
    }
    return sh;
  };
  if (eh.e_shnum == 0) check(shoff, shentsize, "ELF section table needs");  // section 0 counts them
  const uint64_t count = eh.e_shnum != 0 ? eh.e_shnum : section(0).sh_size;
  check(shoff, count > UINT64_MAX / shentsize ? UINT64_MAX : count * shentsize,
        "ELF section table needs");
  for (uint64_t i = 0; i < count; ++i) {
    const ElfW(Shdr) sh = section(i);
    if (sh.sh_type != SHT_NOBITS) check(sh.sh_offset, sh.sh_size, "sections need");
  }
}

bool LoadedFrom(const ffi::Module& library, const File& file) {
  Blob blob;
  return !FindBlob(library, &blob) || IsMappedFile(file, blob);
}

ffi::Module LoadArtifactFile(const std::shared_ptr<File>& file, const std::string& path,
                             const std::function<bool(const ffi::Module&)>& is_file) {
  // Called directly: Module::LoadFromFile would pick the loader by the name's extension.
  static const ffi::Function tvm_load =
      ffi::Function::GetGlobalRequired("ffi.Module.load_from_file.so");
  auto load = [&path](const std::string& name) {
    // Opened as tvm-ffi does (same object) to check the blob first; if dlopen fails, TVM says why.
    std::unique_ptr<void, int (*)(void*)> handle(dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL),
                                                 dlclose);
    if (handle != nullptr) CheckBlobOf(handle.get(), path);
    try {
      return tvm_load(ffi::String(name), ffi::String("so")).cast<ffi::Module>();
    } catch (const ffi::Error& err) {
      // The format's reader, inside TVM's loader, does not know the file: name it.
      if (err.kind() != "ValueError" || err.message().find(path) != std::string::npos) throw;
      throw ffi::Error(err.kind(), path + ": " + err.message(), err.backtrace());
    }
  };
  {
    ffi::Module mod = load(path);
    if (is_file(mod)) return mod;
  }  // another version's object: let it go, and load under a name no object answers to
  const char* base = std::getenv("TMPDIR");
  std::string folder =
      std::string(base != nullptr && base[0] != '\0' ? base : "/tmp") + "/tvm_partial_load_XXXXXX";
  if (mkdtemp(folder.data()) == nullptr) {
    TVM_FFI_THROW(RuntimeError) << "cannot load " << path
                                << " under a name of its own: mkdtemp: " << std::strerror(errno);
  }
  const std::string name = folder + "/artifact.so";
  const std::string target = "/proc/self/fd/" + std::to_string(file->fd.get());
  if (symlink(target.c_str(), name.c_str()) != 0) {
    const int error = errno;
    rmdir(folder.c_str());
    TVM_FFI_THROW(RuntimeError) << "cannot load " << path
                                << " under a name of its own: symlink: " << std::strerror(error);
  }
  struct Cleanup {
    std::string name, folder;
    ~Cleanup() {
      unlink(name.c_str());
      rmdir(folder.c_str());
    }
  } cleanup{name, folder};
  ffi::Module mod = load(name);
  if (!is_file(mod)) {
    TVM_FFI_THROW(ValueError) << path << ": the system's loader returned code that is not this "
                              << "file's, under its name and under a new one; refused rather "
                              << "than run another version";
  }
  return mod;
}

}  // namespace storage
}  // namespace tvm_partial
