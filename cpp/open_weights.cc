// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file open_weights.cc
 * \brief open_weights: tensors of a safetensors file, an index's files or ranges another format
 *        describes (ONNX external data), views of a private mapping where 64-byte aligned, else
 *        aligned copies; save_weights: a partial's records to storage/weights_writer.cc.
 */
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/common.h"
#include "partial_module.h"
#include "registry.h"
#include "storage/file.h"
#include "storage/payload_source.h"
#include "storage/weights_file.h"

namespace tvm_partial {

namespace {

/*! \brief One safetensors file's tensors for `function` (none: an error unless `none_is_empty`). */
ffi::Map<ffi::Any, ffi::Any> OpenFileWeights(const weights::WeightsFile& file,
                                             const ffi::String& function, bool none_is_empty) {
  const std::string path = file.file->path;
  const auto recorded = weights::RecordedBindings(file);
  const auto shared = weights::RecordedShared(file);
  std::map<std::string, std::string> seen;  // "parameter 'x'" or "position 3" -> the key giving it
  std::vector<std::pair<weights::KeyRef, std::string>> keys;  // (its key parsed, the stored tensor)
  std::set<std::string> functions;  // the others the file gives tensors for
  auto take = [&](const std::string& key, const std::string& stored) {
    const weights::KeyRef ref = weights::ParseKey(path, key);
    auto at = recorded.find(key);
    const std::string owner = at != recorded.end() ? at->second.first : ref.function;
    if (!owner.empty() && owner != std::string(function)) {
      functions.insert(owner);
      return;
    }
    const std::string what = ref.name.empty() ? "position " + std::to_string(ref.position)
                                              : "parameter '" + ref.name + "'";
    const auto [earlier, fresh] = seen.emplace(what, key);
    if (!fresh && !earlier->second.empty()) {
      TVM_FFI_THROW(ValueError) << "weights file " << path << ": tensors '" << earlier->second
                                << "' and '" << key << "' both name " << what << " of function '"
                                << function << "'; keep one";
    }
    keys.emplace_back(ref, stored);
  };
  for (const auto& [key, e] : file.entries) {
    if (weights::WeightsFile::IsTensorKey(key)) take(key, key);
  }
  for (const auto& [alias, stored] : shared) take(alias, stored);
  if (keys.empty() && none_is_empty) return {};
  if (keys.empty()) {
    std::string names;
    for (const std::string& f : functions) names += (names.empty() ? "" : ", ") + f;
    TVM_FFI_THROW(ValueError) << path << ": no weights for function '" << function
                              << "' (functions in the file: " << (names.empty() ? "none" : names)
                              << ")";
  }
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& [ref, stored] : keys) {
    lo = std::min(lo, file.entries.at(stored).begin);
    hi = std::max(hi, file.entries.at(stored).end);
  }
  const storage::Mapping mapping = storage::MapPrivate(*file.file, file.data_start + lo, hi - lo);
  std::map<std::string, ffi::Tensor> made;  // stored key -> its tensor: one per stored tensor
  ffi::Map<ffi::Any, ffi::Any> out;
  for (const auto& [ref, stored] : keys) {
    ffi::Tensor& tensor = made[stored];
    if (!tensor.defined()) {
      const weights::Entry& e = file.entries.at(stored);
      tensor = storage::HostPayloadTensor(mapping.data + (e.begin - lo), mapping.keepalive,
                                          ffi::StringToDLDataType(e.dtype->tvm), e.shape,
                                          e.end - e.begin);
    }
    out.Set(ref.name.empty() ? ffi::Any(ref.position) : ffi::Any(ffi::String(ref.name)), tensor);
  }
  return out;
}

// OpenWeights' `entries` ([[name, offset, bytes, dtype, shape], ...]) as tensors of `path`.
ffi::Map<ffi::Any, ffi::Any> MapTensors(const ffi::String& path,
                                        const ffi::Array<ffi::Array<ffi::Any>>& entries) {
  const std::shared_ptr<storage::File> file = storage::OpenRegular(path, "data file");
  struct Range {
    std::string name;
    uint64_t offset, bytes;
    DLDataType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Range> ranges;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const ffi::Array<ffi::Any>& e : entries) {
    if (e.size() != 5) TVM_FFI_THROW(ValueError) << "OpenWeights: each entry has 5 fields";
    Range r{std::string(e[0].cast<ffi::String>()),
            static_cast<uint64_t>(e[1].cast<int64_t>()),
            static_cast<uint64_t>(e[2].cast<int64_t>()),
            ffi::StringToDLDataType(e[3].cast<ffi::String>()),
            {}};
    for (const ffi::Any& d : e[4].cast<ffi::Array<ffi::Any>>())
      r.shape.push_back(d.cast<int64_t>());
    uint64_t expected = 0;
    const std::string problem =
        format::ShapeProblem(r.shape.data(), r.shape.size(), r.dtype, &expected);
    if (!problem.empty() || expected != r.bytes) {
      TVM_FFI_THROW(ValueError) << path << ": tensor '" << r.name << "' of " << r.bytes
                                << " bytes does not match its dtype and shape ("
                                << (problem.empty() ? std::to_string(expected) + " bytes" : problem)
                                << ")";
    }
    if (r.offset > file->size || r.bytes > file->size - r.offset) {
      TVM_FFI_THROW(ValueError) << path << " is truncated: tensor '" << r.name << "' needs bytes "
                                << r.offset << " to " << r.offset + r.bytes << ", the file has "
                                << file->size;
    }
    lo = std::min(lo, r.offset);
    hi = std::max(hi, r.offset + r.bytes);
    ranges.push_back(std::move(r));
  }
  ffi::Map<ffi::Any, ffi::Any> out;
  if (ranges.empty()) return out;
  const storage::Mapping mapping = storage::MapPrivate(*file, lo, hi - lo);
  for (const Range& r : ranges) {
    out.Set(ffi::String(r.name),
            storage::HostPayloadTensor(mapping.data + (r.offset - lo), mapping.keepalive, r.dtype,
                                       r.shape, r.bytes));
  }
  return out;
}

/*! \brief tvm_partial.OpenWeights: {position or name: tensor} for `function` of a safetensors file
 *         or an index (each tensor in one file), or with `entries`, {name: tensor} (MapTensors). */
ffi::Map<ffi::Any, ffi::Any> OpenAny(const ffi::String& path, const ffi::String& function,
                                     ffi::Optional<ffi::Array<ffi::Array<ffi::Any>>> entries) {
  if (entries.has_value()) return MapTensors(path, *entries);
  if (!weights::IsIndex(path)) return OpenFileWeights(weights::Open(path), function, false);
  const weights::WeightsSet set = weights::OpenSet(path);
  ffi::Map<ffi::Any, ffi::Any> out;
  for (const weights::WeightsFile& file : set.files) {
    for (const auto& [key, tensor] : OpenFileWeights(file, function, true)) {
      if (out.count(key)) {
        auto name = key.try_cast<ffi::String>();
        weights::Bad(std::string(path),
                     "two of its files give " +
                         (name.has_value() ? "parameter '" + std::string(*name) + "'"
                                           : "position " + std::to_string(key.cast<int64_t>())) +
                         " of function '" + std::string(function) + "'; keep one");
      }
      out.Set(key, tensor);
    }
  }
  if (out.empty()) {
    TVM_FFI_THROW(ValueError) << path << ": no weights for function '" << function << "'";
  }
  return out;
}

}  // namespace

ffi::Map<ffi::Any, ffi::Any> OpenWeights(const std::string& path, const ffi::String& function) {
  return OpenAny(path, function, std::nullopt);
}

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("tvm_partial.OpenWeights", OpenAny);
  // save_weights: bound tensors and compiled-in values; Python stages the file and renames it.
  detail::RegisterGlobalOnce(
      "tvm_partial.SaveWeights",
      [](ffi::Any obj, ffi::String path, ffi::Map<ffi::String, ffi::Tensor> compiled) {
        const auto mod = obj.try_cast<ffi::Module>();
        if (mod.has_value()) detail::RefuseShardView(*mod, "written to a weights file");
        weights::SaveWeights(detail::PartialRecords(obj, "save_weights"),
                             mod.has_value() ? detail::ModelRecordOf(*mod) : ModelRecord{}, path,
                             compiled);
      });
}

}  // namespace tvm_partial
