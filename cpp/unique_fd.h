// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file unique_fd.h
 * \brief A file descriptor closed when it goes out of scope (on every throw path as well).
 */
#ifndef TVM_PARTIAL_UNIQUE_FD_H_
#define TVM_PARTIAL_UNIQUE_FD_H_

#include <unistd.h>

namespace tvm_partial {
namespace detail {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

 private:
  int fd_;
};

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_UNIQUE_FD_H_
