// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/weights_index.cc
 * \brief `OpenSet`: a safetensors file, or a split checkpoint's index (storage/weights_file.h).
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/json.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/file.h"
#include "storage/weights_file.h"

namespace tvm_partial {
namespace weights {

namespace {

[[noreturn]] void BadIndex(const std::string& path, const std::string& what) {
  TVM_FFI_THROW(ValueError) << "weights index " << path << ": " << what;
  TVM_FFI_UNREACHABLE();
}

constexpr int kIndexDepth = 3;  // the object, weight_map (or metadata), a value

// Why a file name an index records cannot be followed, or "": it must stay in the index's
// folder (relative, no `..`), as transformers writes them.
std::string NameProblem(const std::string& name) {
  if (name.empty() || name.find('\0') != std::string::npos) return "is empty or holds a NUL byte";
  if (name[0] == '/') return "is an absolute path";
  if (("/" + name + "/").find("/../") != std::string::npos) return "leaves the index's folder (..)";
  return "";
}

WeightsSet OpenIndex(const std::string& path, std::shared_ptr<storage::File> opened) {
  WeightsSet out{path, true, {}, {}};
  const std::shared_ptr<storage::File> index =
      opened ? std::move(opened) : storage::OpenRegular(path, "weights index");
  if (index->size > kMaxHeader) {
    BadIndex(path, "is an index of " + std::to_string(index->size) + " bytes, more than the " +
                       std::to_string(kMaxHeader) + " read");
  }
  std::string text(static_cast<size_t>(index->size), '\0');
  if (!text.empty() && !storage::ReadAt(*index, 0, text.size(), &text[0])) {
    BadIndex(path, "was cut short while it was read");
  }
  auto object = ParseJson(path, text, kIndexDepth, "index").try_cast<ffi::json::Object>();
  if (!object.has_value()) BadIndex(path, "is not a safetensors index (not a JSON object)");
  auto found = object->find(ffi::String("weight_map"));
  if (found == object->end()) {
    BadIndex(path,
             "is not a safetensors index: it has no weight_map ({\"weight_map\": {tensor: file}})");
  }
  auto weight_map = (*found).second.try_cast<ffi::json::Object>();
  if (!weight_map.has_value()) BadIndex(path, "its weight_map is not an object");
  if (weight_map->empty()) {
    BadIndex(path,
             "its weight_map is empty: it names no file, so it holds no tensors; give the "
             "index a checkpoint writes ({\"weight_map\": {tensor: file}}) or a safetensors file");
  }
  // tensor -> file name, sorted so the first problem named is stable; files in first-named order.
  std::map<std::string, std::string> wanted;
  std::map<std::string, size_t> file_index;
  std::vector<std::string> names;
  for (const auto& kv : *weight_map) {
    auto tensor = kv.first.try_cast<ffi::String>();
    auto file = kv.second.try_cast<ffi::String>();
    if (!tensor.has_value() || !file.has_value()) {
      BadIndex(path, "its weight_map holds a value that is not a file name");
    }
    const std::string name(*file);
    const std::string problem = NameProblem(name);
    if (!problem.empty()) BadIndex(path, "names file '" + name + "', which " + problem);
    wanted.emplace(std::string(*tensor), name);
    if (file_index.emplace(name, names.size()).second) names.push_back(name);
  }
  // In the folder as the caller spelt it, not its real one (see OpenSet).
  for (const std::string& name : names) {
    const std::string full = storage::Beside(path, name);
    try {
      out.files.push_back(Open(full));
    } catch (const ffi::Error& err) {
      if (err.kind() != "FileNotFoundError") throw;
      TVM_FFI_THROW(FileNotFoundError)
          << "weights index " << path << " names file '" << name << "' (" << full
          << "), which does not exist; keep every file of the checkpoint beside its index";
    }
  }
  for (size_t f = 0; f < out.files.size(); ++f) {
    for (const auto& [key, entry] : out.files[f].entries) {
      if (!WeightsFile::IsTensorKey(key)) continue;
      auto [it, fresh] = out.tensors.emplace(key, SetEntry{f, entry});
      if (!fresh) {
        BadIndex(path, "tensor '" + key + "' is in both '" + names[it->second.file] + "' and '" +
                           names[f] + "'; a checkpoint holds each tensor once");
      }
      auto named = wanted.find(key);
      if (named == wanted.end()) {
        BadIndex(path, "file '" + names[f] + "' holds tensor '" + key +
                           "', which the index's weight_map does not name");
      }
      if (named->second != names[f]) {
        BadIndex(path, "tensor '" + key + "' is in '" + names[f] + "', but the index names '" +
                           named->second + "' for it");
      }
    }
  }
  for (const auto& [tensor, name] : wanted) {
    if (!out.tensors.count(tensor)) {
      BadIndex(path,
               "names tensor '" + tensor + "' in file '" + name + "', which does not hold it");
    }
  }
  return out;
}

}  // namespace

bool IsIndex(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

bool IsOnnx(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

WeightsSet OpenSet(const std::string& path, std::shared_ptr<storage::File> opened) {
  if (IsIndex(path)) return OpenIndex(path, std::move(opened));
  WeightsSet out{path, false, {Open(path, std::move(opened))}, {}};
  for (const auto& [key, entry] : out.files[0].entries) {
    if (WeightsFile::IsTensorKey(key)) out.tensors.emplace(key, SetEntry{0, entry});
  }
  return out;
}

}  // namespace weights
}  // namespace tvm_partial
