// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/file.cc
 * \brief Opening, reading and mapping the files tvm-partial reads (storage/file.h).
 */
#include "file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tvm/ffi/error.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tvm_partial {
namespace storage {

namespace {

[[noreturn]] void NotRegular(const std::string& path, const char* what, mode_t mode) {
  const char* kind = S_ISDIR(mode)                    ? "a folder"
                     : S_ISFIFO(mode)                 ? "a FIFO (named pipe)"
                     : S_ISSOCK(mode)                 ? "a socket"
                     : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
                                                      : "not a regular file";
  TVM_FFI_THROW(ValueError) << what << " " << path << " is " << kind
                            << ", not a regular file; give the path of a file";
  TVM_FFI_UNREACHABLE();
}

/*! \brief A File owning `fd`; refused unless fstat of the open file says it is regular. */
std::shared_ptr<File> FromOwnedFd(UniqueFd fd, const std::string& path, const char* what) {
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot read the " << what << " " << path << ": "
                                << std::strerror(errno);
  }
  if (!S_ISREG(st.st_mode)) NotRegular(path, what, st.st_mode);
  return std::make_shared<File>(File{std::move(fd), path, static_cast<uint64_t>(st.st_size)});
}

}  // namespace

std::shared_ptr<File> OpenRegular(const std::string& path, const char* what) {
  struct stat st;
  // Checked before opening: open() of a FIFO for reading blocks until a writer comes.
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      TVM_FFI_THROW(FileNotFoundError) << what << " " << path << " does not exist";
    }
    TVM_FFI_THROW(RuntimeError) << "cannot read the " << what << " " << path << ": "
                                << std::strerror(errno);
  }
  if (!S_ISREG(st.st_mode)) NotRegular(path, what, st.st_mode);
  // O_NONBLOCK: a FIFO swapped in since stat() opens, then fstat refuses it (reads unaffected).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) {
      TVM_FFI_THROW(FileNotFoundError) << what << " " << path << " does not exist";
    }
    TVM_FFI_THROW(RuntimeError) << "cannot open the " << what << " " << path << ": "
                                << std::strerror(errno);
  }
  return FromOwnedFd(UniqueFd(fd), path, what);
}

std::shared_ptr<File> FromDescriptor(int fd, const std::string& path, const char* what) {
  const int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) {
    TVM_FFI_THROW(RuntimeError) << "cannot read the " << what << " " << path << ": "
                                << std::strerror(errno);
  }
  return FromOwnedFd(UniqueFd(own), path, what);
}

bool ReadAt(const File& file, uint64_t offset, size_t size, char* out) {
  if (offset > file.size || size > file.size - offset) return false;
  while (size > 0) {
    const ssize_t got = pread(file.fd.get(), out, std::min<size_t>(size, size_t{1} << 30),
                              static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      TVM_FFI_THROW(RuntimeError) << "reading " << file.path << " failed: " << std::strerror(errno);
    }
    if (got == 0) return false;  // cut short since it was opened
    out += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

bool WriteAt(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t done =
        pwrite(fd, data, std::min<size_t>(size, size_t{1} << 30), static_cast<off_t>(offset));
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) {
      if (done == 0) errno = ENOSPC;
      return false;
    }
    data += done;
    size -= static_cast<size_t>(done);
    offset += static_cast<uint64_t>(done);
  }
  return true;
}

Mapping MapPrivate(const File& file, uint64_t offset, uint64_t size) {
  if (offset > file.size || size > file.size - offset) {
    TVM_FFI_THROW(ValueError) << file.path << " is truncated: " << size << " bytes at offset "
                              << offset << " run past the end of the file (" << file.size
                              << " bytes)";
  }
  if (size == 0) {
    alignas(64) static const char kEmpty[64] = {};
    return Mapping{kEmpty, 0, nullptr};
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset - offset % page;
  const size_t length = static_cast<size_t>(offset + size - start);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, file.fd.get(),
                    static_cast<off_t>(start));
  if (base == MAP_FAILED) {
    if (errno == ENOMEM) {
      TVM_FFI_THROW(MemoryError) << "cannot map " << size << " bytes of " << file.path
                                 << ": out of address space";
    }
    TVM_FFI_THROW(RuntimeError) << "cannot map " << file.path << ": " << std::strerror(errno);
  }
  return Mapping{static_cast<const char*>(base) + (offset - start), static_cast<size_t>(size),
                 std::shared_ptr<void>(base, [length](void* p) { munmap(p, length); })};
}

void Prefault(const char* data, size_t size) {
  if (size == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + size;
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older kernels answer EINVAL and pages are read below
#endif
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
  volatile char sink = 0;
  for (uintptr_t at = std::max(begin, reinterpret_cast<uintptr_t>(data)); at < end;
       at = (at / page + 1) * page) {
    sink = sink ^ *reinterpret_cast<const volatile char*>(at);
  }
}

bool PrefaultFromEnvironment() {
  const char* value = std::getenv("TVM_PARTIAL_PREFAULT");
  if (value == nullptr || value[0] == '\0' || std::strcmp(value, "0") == 0) return false;
  if (std::strcmp(value, "1") == 0) return true;
  TVM_FFI_THROW(ValueError) << "TVM_PARTIAL_PREFAULT=" << value
                            << " is neither 1 (read the pages of mapped payloads at load) nor 0";
  TVM_FFI_UNREACHABLE();
}

std::string RealPath(const File& file) {
  char buffer[PATH_MAX + 1];
  const std::string link = "/proc/self/fd/" + std::to_string(file.fd.get());
  const ssize_t n = readlink(link.c_str(), buffer, PATH_MAX);
  // A file removed since it was opened reads "PATH (deleted)"; its folder is still that path's.
  if (n > 0 && buffer[0] == '/') return std::string(buffer, static_cast<size_t>(n));
  if (char* resolved = realpath(file.path.c_str(), nullptr)) {
    std::string out(resolved);
    free(resolved);
    return out;
  }
  return file.path;
}

std::string Beside(const std::string& path, const std::string& name) {
  if (!name.empty() && name[0] == '/') return name;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? name : path.substr(0, slash + 1) + name;
}

}  // namespace storage
}  // namespace tvm_partial
