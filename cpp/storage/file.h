// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/file.h
 * \brief Internal: regular files only (a FIFO would block `open()` forever), exact positioned
 *        reads, private COW mappings (a kernel writing a bound tensor never changes the file).
 */
#ifndef TVM_PARTIAL_STORAGE_FILE_H_
#define TVM_PARTIAL_STORAGE_FILE_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace tvm_partial {
namespace storage {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd other) noexcept {  // the old descriptor closes with `other`
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

struct File {
  UniqueFd fd;
  std::string path;   // as given (for messages)
  uint64_t size = 0;  // at open time
};

// Open `path` if a regular file (checked before opening); `what` ("artifact") names it. Throws
// FileNotFoundError; ValueError for a folder, FIFO, device, socket; RuntimeError (system error).
std::shared_ptr<File> OpenRegular(const std::string& path, const char* what);

// The regular file open at `fd` (a dup is kept), named `path`; ValueError if not regular.
std::shared_ptr<File> FromDescriptor(int fd, const std::string& path, const char* what);

// Read exactly `size` bytes at `offset`; false if the file ends first; RuntimeError on error.
bool ReadAt(const File& file, uint64_t offset, size_t size, char* out);

/*! \brief Write all of `data` at `offset` of `fd` (retrying EINTR, at most 1 GiB per call);
 *         false with errno set on failure (ENOSPC when a write makes no progress). */
bool WriteAt(int fd, const char* data, size_t size, uint64_t offset);

struct Mapping {
  const char* data = nullptr;       // the first mapped byte of the range asked for
  size_t size = 0;                  // the bytes asked for
  std::shared_ptr<void> keepalive;  // unmaps when the last holder lets go
};

/*! \brief Map `size` bytes of `file` at `offset` (any alignment) privately: read-write, COW.
 *         \throws ValueError past the file's end; MemoryError or RuntimeError if mmap fails. */
Mapping MapPrivate(const File& file, uint64_t offset, uint64_t size);

// Fault in a file mapping's pages now, not at the first call: MADV_POPULATE_READ, else reads.
void Prefault(const char* data, size_t size);

// TVM_PARTIAL_PREFAULT=1: loads prefault host views of file payloads; unset or 0: no; else throws.
bool PrefaultFromEnvironment();

// The absolute, symlink-free path of the open `file` (without /proc: its path made absolute).
std::string RealPath(const File& file);

// `name` in `path`'s folder (`name` as is when absolute, or when `path` names no folder).
std::string Beside(const std::string& path, const std::string& name);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_FILE_H_
