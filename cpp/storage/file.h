// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/file.h
 * \brief Internal: the files tvm-partial reads (artifacts, weights files): regular files only
 *        (a FIFO would block `open()` forever), exact positioned reads, private mappings (a
 *        kernel writing into a bound tensor gets a private copy; the file never changes).
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

/*! \brief Owns a file descriptor; closes it once. */
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

/*! \brief An open regular file. */
struct File {
  UniqueFd fd;
  std::string path;   // as given (for messages)
  uint64_t size = 0;  // at open time
};

/*! \brief Open `path` for reading if it is a regular file; `what` names it in messages
 *         ("artifact"). \throws FileNotFoundError when missing; ValueError for a folder, FIFO,
 *         device or socket (checked before opening); RuntimeError with the system's error. */
std::shared_ptr<File> OpenRegular(const std::string& path, const char* what);

/*! \brief The regular file open at descriptor `fd` (a copy of it is kept), named `path` in
 *         messages. \throws ValueError when it is not a regular file. */
std::shared_ptr<File> FromDescriptor(int fd, const std::string& path, const char* what);

/*! \brief Read exactly `size` bytes at `offset` into `out`; false if the file ends first.
 *         \throws RuntimeError naming the file. */
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

/*! \brief Fault in the pages of `size` bytes at `data` (a file mapping) now, not at the first
 *         call: `madvise(MADV_POPULATE_READ)`, else one read per page. */
void Prefault(const char* data, size_t size);

/*! \brief Whether loads prefault host views of file payloads: `TVM_PARTIAL_PREFAULT=1`; unset
 *         or 0: no. \throws ValueError for any other value. */
bool PrefaultFromEnvironment();

/*! \brief The absolute path of the file `file` has open (symlinks resolved), or its path made
 *         absolute when the system cannot say (no /proc). */
std::string RealPath(const File& file);

/*! \brief The folder of `path` joined with `name` (`name` as is when absolute, or when `path`
 *         names no folder). */
std::string Beside(const std::string& path, const std::string& name);

}  // namespace storage
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_STORAGE_FILE_H_
