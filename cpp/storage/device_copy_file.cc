// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/device_copy_file.cc
 * \brief `tvm_partial.CopyFileToDevice`: a range of a file, mapped as a load maps an artifact,
 *        copied into a device tensor by CopyToDevice (storage/device_copy.h), with the options a
 *        test or benchmark chooses.
 */
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "registry.h"
#include "storage/device_copy.h"
#include "storage/file.h"

namespace tvm_partial {
namespace storage {

namespace {

/*! \brief `tvm_partial.CopyFileToDevice`: `nbytes` bytes of the file at `path` from `offset`,
 *         mapped privately as a load maps an artifact, copied into `dst` by CopyToDevice. */
ffi::Map<ffi::String, ffi::Any> CopyFileToDevice(const ffi::String& path, int64_t offset,
                                                 int64_t nbytes, const ffi::Tensor& dst,
                                                 const ffi::Map<ffi::String, ffi::Any>& options) {
  if (offset < 0 || nbytes < 0) {
    TVM_FFI_THROW(ValueError) << "CopyFileToDevice: offset " << offset << " and size " << nbytes
                              << " must not be negative";
  }
  DeviceCopyOptions o = DeviceCopyOptions::FromEnvironment(false);
  for (const auto& [key, value] : options) {
    if (key == "staging") {
      o.staging = DeviceCopyOptions::ParseStaging(value.cast<ffi::String>(), "option staging");
    } else if (key == "chunk_bytes") {
      o.chunk_bytes = static_cast<uint64_t>(std::max<int64_t>(0, value.cast<int64_t>()));
    } else if (key == "fill_threads") {
      o.fill_threads = static_cast<int>(std::max<int64_t>(1, value.cast<int64_t>()));
    } else if (key == "release_source") {
      o.release_source = value.cast<bool>();
    } else {
      TVM_FFI_THROW(ValueError) << "CopyFileToDevice: unknown option '" << key
                                << "' (staging, chunk_bytes, fill_threads, release_source)";
    }
  }
  std::shared_ptr<File> file = OpenRegular(path, "file");
  const Mapping mapping = MapPrivate(*file, static_cast<uint64_t>(offset),
                                     static_cast<uint64_t>(nbytes));  // fresh: nothing wrote to it
  const DeviceCopyStats stats = CopyToDevice(mapping.data, mapping.size, dst, o);
  ffi::Map<ffi::String, ffi::Any> out;
  out.Set("staging", ffi::String(stats.staging));
  out.Set("pieces", static_cast<int64_t>(stats.pieces));
  out.Set("released_bytes", static_cast<int64_t>(stats.released_bytes));
  out.Set("fill_threads", static_cast<int64_t>(stats.fill_threads));
  out.Set("chunk_bytes", static_cast<int64_t>(o.chunk_bytes));
  return out;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  // {"staging", "pieces", "released_bytes", "fill_threads", "chunk_bytes"}: what the copy did.
  detail::RegisterGlobalOnce("tvm_partial.CopyFileToDevice", CopyFileToDevice);
}

}  // namespace storage
}  // namespace tvm_partial
