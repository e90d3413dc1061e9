// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/file.h
 * \brief Internal: the files tvm-partial reads (artifacts, weights files): opened only when they
 *        are regular files, read with exact positioned reads, mapped privately.
 *
 * Everything that opens a file for reading goes through `OpenRegular`, so a FIFO, a device or a
 * folder is refused with an error that names it instead of blocking `open()` forever or reading
 * something that is not a file. Mappings are `MAP_PRIVATE`: pages are read when first touched,
 * and a kernel writing into a bound tensor gets a private copy of the page; the file never
 * changes.
 */
#ifndef TVM_PARTIAL_STORAGE_FILE_H_
#define TVM_PARTIAL_STORAGE_FILE_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tvm_partial {
namespace storage {

/*! \brief Owns a file descriptor; closes it once. */
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  /*! \brief Give up ownership: the caller closes the descriptor. */
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

/*! \brief An open regular file: the descriptor, the path it was opened by, and its size then. */
struct File {
  UniqueFd fd;
  std::string path;   // as given (for messages)
  uint64_t size = 0;  // at open time
};

/*!
 * \brief Open `path` for reading when it is a regular file (symlinks followed).
 * \param what How messages name it: "weights file", "artifact".
 * \throws FileNotFoundError when it does not exist; ValueError when it is a folder, a FIFO, a
 *         device or a socket (checked before the file is opened, so opening never blocks);
 *         RuntimeError naming the system's error otherwise.
 */
std::shared_ptr<File> OpenRegular(const std::string& path, const char* what);

/*! \brief The regular file open at descriptor `fd` (a copy of it is kept), named `path` in
 *         messages. \throws ValueError when it is not a regular file. */
std::shared_ptr<File> FromDescriptor(int fd, const std::string& path, const char* what);

/*!
 * \brief Read exactly `size` bytes at `offset` of `file` into `out`.
 * \return false when the file ends first (it is shorter than it was, or than its metadata says).
 * \throws RuntimeError naming the file and the system's error when the read fails.
 */
bool ReadAt(const File& file, uint64_t offset, size_t size, char* out);

/*!
 * \brief Write all `size` bytes of `data` at `offset` of the open file `fd` (the one write loop:
 *        retried on EINTR, in steps of at most 1 GiB).
 * \return false with errno set when a write fails (ENOSPC when one makes no progress).
 */
bool WriteAt(int fd, const char* data, size_t size, uint64_t offset);

/*! \brief A private mapping of part of a file, kept alive by `keepalive`. */
struct Mapping {
  const char* data = nullptr;       // the first mapped byte of the range asked for
  size_t size = 0;                  // the bytes asked for
  std::shared_ptr<void> keepalive;  // unmaps when the last holder lets go
};

/*!
 * \brief Map `size` bytes of `file` from `offset` privately (read-write, copy-on-write), `offset`
 *        need not be page-aligned. `size` must lie inside the file as opened.
 * \throws ValueError when the range runs past the end of the file; RuntimeError when mmap fails.
 */
Mapping MapPrivate(const File& file, uint64_t offset, uint64_t size);

/*!
 * \brief Read the pages of `size` bytes at `data` (inside a file mapping) into memory now, so
 *        the first call does not fault them in: `madvise(MADV_POPULATE_READ)` where the kernel
 *        has it (Linux 5.14), else one read per page. Nothing is copied: the pages are the file's.
 */
void Prefault(const char* data, size_t size);

/*!
 * \brief Whether loads prefault the host views of their file payloads (`TVM_PARTIAL_PREFAULT=1`,
 *        for latency-sensitive serving; unset or 0: pages are read when first touched).
 * \throws ValueError for another value, naming the variable.
 */
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
