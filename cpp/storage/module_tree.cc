// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/module_tree.cc
 * \brief Parsing TVM's module tree, finding it in an ELF file, rewriting one module in place.
 */
#include "storage/module_tree.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

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

}  // namespace storage
}  // namespace tvm_partial
