// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/library.cc
 * \brief A library's file: TVM's module tree parsed, found in the ELF file and rewritten in
 *        place; the file a loaded library module was mapped from.
 */
#include "storage/library.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
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
#include <set>
#include <vector>

namespace tvm_partial {
namespace storage {

std::vector<EmbeddedModule> ParseModuleTree(
    const std::function<void(uint64_t pos, uint64_t n, char* out)>& read, uint64_t size,
    const std::string& path) {
  // The layout TVM writes (tvm-ffi's library module): vec<u64> import indptr (one entry per
  // module, plus one), vec<u64> imported children, then per module a kind string and, except for
  // the library's own code ("_lib"), its bytes; a vec or a string is a u64 count, then its items.
  constexpr uint64_t kMaxKind = 1024;  // a kind is a registered name
  uint64_t pos = 0;
  auto fail = [&path](const std::string& what) {
    TVM_FFI_THROW(ValueError) << path << ": the embedded module blob is damaged: " << what
                              << "; copy or export the artifact again";
  };
  auto counted = [&](const std::string& what, uint64_t item) {  // a count whose items must fit
    if (size - pos < 8) fail(what + " runs past its end");
    uint64_t n = 0;
    read(pos, 8, reinterpret_cast<char*>(&n));
    pos += 8;
    if (n > (size - pos) / item) {
      fail(what + " " + std::to_string(n) + " cannot fit in its " + std::to_string(size - pos) +
           " remaining bytes");
    }
    return n;
  };
  auto u64s = [&](const char* count) {
    std::vector<uint64_t> out(counted(count, 8));
    if (!out.empty()) read(pos, 8 * out.size(), reinterpret_cast<char*>(out.data()));
    pos += 8 * out.size();
    return out;
  };
  const std::vector<uint64_t> indptr = u64s("the import index count");
  const std::vector<uint64_t> children = u64s("the import list length");
  if (indptr.empty()) fail("no import index (a module tree has one per module, plus one)");
  std::vector<EmbeddedModule> modules(indptr.size() - 1);
  for (EmbeddedModule& m : modules) {
    const uint64_t n = counted("a module kind's length", 1);
    if (n > kMaxKind) fail("a module kind of " + std::to_string(n) + " bytes");
    m.kind.resize(n);
    if (n != 0) read(pos, n, &m.kind[0]);
    pos += n;
    if (m.kind != "_lib") m.size = counted("the length of the " + m.kind + " module", 1);
    m.offset = pos;
    pos += m.size;
  }
  for (size_t i = 0; i < modules.size(); ++i) {
    if (indptr[i] > indptr[i + 1] || indptr[i + 1] > children.size()) {
      fail("module " + std::to_string(i) + "'s imports [" + std::to_string(indptr[i]) + ", " +
           std::to_string(indptr[i + 1]) + ") are not within the " +
           std::to_string(children.size()) + " listed");
    }
  }
  for (uint64_t child : children) {
    if (child >= modules.size()) {
      fail("an import of module " + std::to_string(child) + " among " +
           std::to_string(modules.size()));
    }
  }
  return modules;
}

namespace {

/*! \brief An ELF library's file, every read bounds-checked against its size. */
class ElfFile {
 public:
  explicit ElfFile(const File& file) : file_(file) {
    Elf64_Ehdr eh{};
    if (file.size < sizeof(eh) || !ReadAt(file, 0, sizeof(eh), reinterpret_cast<char*>(&eh)) ||
        std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
      TVM_FFI_THROW(ValueError) << file.path
                                << " is not a tvm-partial artifact: not an ELF shared library";
    }
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
      TVM_FFI_THROW(ValueError) << file.path
                                << ": only 64-bit little-endian ELF libraries can be read";
    }
    if (eh.e_shoff == 0 || eh.e_shnum == 0) {
      TVM_FFI_THROW(ValueError) << file.path << " has no ELF section table (stripped or damaged): "
                                << "it cannot be read without loading it";
    }
    if (eh.e_shentsize < sizeof(Elf64_Shdr)) {
      TVM_FFI_THROW(ValueError) << file.path << " is damaged: section header entries of "
                                << eh.e_shentsize << " bytes (ELF64 needs " << sizeof(Elf64_Shdr)
                                << ")";
    }
    Need(eh.e_shoff, uint64_t{eh.e_shentsize} * eh.e_shnum, "its ELF section table");
    sections_.resize(eh.e_shnum);
    for (size_t i = 0; i < sections_.size(); ++i) {
      Read(eh.e_shoff + i * eh.e_shentsize, sizeof(Elf64_Shdr), &sections_[i], "a section header");
    }
  }

  /*! \brief The file offset of the defined symbol `name`, the dynamic table first. */
  std::optional<uint64_t> Symbol(const std::string& name) const {
    for (uint32_t type : {SHT_DYNSYM, SHT_SYMTAB}) {
      for (const Elf64_Shdr& table : sections_) {
        if (table.sh_type != type) continue;
        if (auto found = Lookup(table, name)) return found;
      }
    }
    return std::nullopt;
  }

  void Read(uint64_t offset, uint64_t n, void* out, const char* what) const {
    Need(offset, n, what);
    if (!ReadAt(file_, offset, n, static_cast<char*>(out))) {
      TVM_FFI_THROW(ValueError) << file_.path << " is truncated: it became shorter while read";
    }
  }

 private:
  void Need(uint64_t offset, uint64_t n, const std::string& what) const {
    if (n > file_.size || offset > file_.size - n) {
      TVM_FFI_THROW(ValueError) << file_.path << " is truncated or damaged: " << what << " (" << n
                                << " bytes at offset " << offset
                                << ") runs past the end of the file (" << file_.size << " bytes)";
    }
  }

  std::optional<uint64_t> Lookup(const Elf64_Shdr& table, const std::string& name) const {
    if (table.sh_link >= sections_.size()) {
      TVM_FFI_THROW(ValueError) << file_.path << " is damaged: a symbol table links to section "
                                << table.sh_link << " of " << sections_.size();
    }
    const Elf64_Shdr& strtab = sections_[table.sh_link];
    Need(table.sh_offset, table.sh_size, "a symbol table");
    Need(strtab.sh_offset, strtab.sh_size, "a string table");
    std::set<uint64_t> wanted;  // where `name` is spelled out, NUL-terminated
    const std::string needle = name + '\0';
    constexpr uint64_t kPiece = uint64_t{1} << 20;  // read a piece at a time, never the whole
    std::string piece;
    for (uint64_t start = 0; start < strtab.sh_size; start += kPiece) {
      piece.resize(std::min<uint64_t>(kPiece + needle.size() - 1, strtab.sh_size - start));
      Read(strtab.sh_offset + start, piece.size(), &piece[0], "a string table");
      for (size_t at = piece.find(needle); at != std::string::npos && at < kPiece;
           at = piece.find(needle, at + 1)) {
        wanted.insert(start + at);
      }
    }
    if (wanted.empty()) return std::nullopt;
    constexpr uint64_t kChunk = 4096;  // symbols read at a time
    std::vector<Elf64_Sym> symbols;
    const uint64_t count = table.sh_size / sizeof(Elf64_Sym);
    for (uint64_t first = 0; first < count; first += kChunk) {
      symbols.resize(std::min(kChunk, count - first));
      Read(table.sh_offset + first * sizeof(Elf64_Sym), symbols.size() * sizeof(Elf64_Sym),
           symbols.data(), "a symbol table");
      for (const Elf64_Sym& sym : symbols) {
        if (!wanted.count(sym.st_name) || sym.st_shndx == SHN_UNDEF ||
            sym.st_shndx >= sections_.size()) {
          continue;  // another name, or undefined / absolute / special section
        }
        const Elf64_Shdr& sec = sections_[sym.st_shndx];
        const uint64_t rel = sym.st_value - sec.sh_addr;
        if (sec.sh_type == SHT_NOBITS || sym.st_value < sec.sh_addr || rel > sec.sh_size ||
            sym.st_size > sec.sh_size - rel || rel > UINT64_MAX - sec.sh_offset) {
          TVM_FFI_THROW(ValueError)
              << file_.path << " is damaged: symbol " << name << " lies outside its section";
        }
        Need(sec.sh_offset + rel, sym.st_size, "symbol " + name);
        return sec.sh_offset + rel;
      }
    }
    return std::nullopt;
  }

  const File& file_;
  std::vector<Elf64_Shdr> sections_;
};

}  // namespace

LibraryModules ReadLibraryModules(const File& file) {
  const ElfFile elf(file);
  const auto found = elf.Symbol(kBinSymbol);
  if (!found.has_value()) {
    TVM_FFI_THROW(ValueError) << file.path << " is not a tvm-partial artifact: it embeds no "
                              << "partial_apply module (no embedded modules at all: no "
                              << kBinSymbol << " symbol)";
  }
  LibraryModules out;
  out.at = *found;
  elf.Read(out.at, 8, &out.length, "the embedded module blob's length");
  if (out.length > file.size - out.at - 8) {
    TVM_FFI_THROW(ValueError) << file.path << ": the embedded module blob is damaged: its length, "
                              << out.length << " bytes, runs past the end of the file ("
                              << file.size << " bytes); copy or export the artifact again";
  }
  const uint64_t base = out.at + 8;
  out.modules = ParseModuleTree(
      [&](uint64_t pos, uint64_t n, char* dst) { elf.Read(base + pos, n, dst, "the module tree"); },
      out.length, file.path);
  for (EmbeddedModule& m : out.modules) m.offset += base;
  return out;
}

void ReplaceEmbeddedModule(const std::string& path, const std::string& kind, const std::string& was,
                           const std::string& now) {
  File file;
  file.path = path;
  file.fd = UniqueFd(open(path.c_str(), O_RDWR | O_CLOEXEC));
  struct stat st{};
  if (file.fd.get() < 0 || fstat(file.fd.get(), &st) != 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot open " << path
                                << " to record its payload hashes: " << std::strerror(errno);
  }
  file.size = static_cast<uint64_t>(st.st_size);
  std::vector<uint64_t> found;
  std::string bytes(was.size(), '\0');
  for (const EmbeddedModule& m : ReadLibraryModules(file).modules) {
    if (m.kind != kind || m.size != was.size()) continue;
    if (ReadAt(file, m.offset, bytes.size(), &bytes[0]) && bytes == was) found.push_back(m.offset);
  }
  if (found.size() != 1 || now.size() != was.size()) {
    TVM_FFI_THROW(RuntimeError) << "export_library: cannot find the partial module's bytes in "
                                << path;
  }
  if (!WriteAt(file.fd.get(), now.data(), now.size(), found[0])) {
    TVM_FFI_THROW(RuntimeError) << "writing " << path << " failed: " << std::strerror(errno);
  }
}

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
