// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/weights_keys.cc
 * \brief Weights sets (a safetensors file or a split checkpoint's index), naming bound tensors in
 *        them and matching a set's tensors to them (storage/weights_file.h).
 */
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>

#include <set>
#include <utility>

#include "bind/bindings.h"
#include "format/common.h"
#include "storage/verify.h"
#include "storage/weights_file.h"

namespace tvm_partial {
namespace weights {

namespace {

uint64_t HashOf(const WeightsSet& set, const SetEntry& t) {
  const WeightsFile& file = set.files[t.file];
  return storage::HashRange(*file.file, file.data_start + t.entry.begin,
                            t.entry.end - t.entry.begin);
}

// A place's name where it can make a key (unique in its function, no '/', not digits), else "".
std::string NameOf(const Place& p) {
  const std::string key = QualifiedKey(p.function, p.position, *p.param_names);
  const std::string rest = key.substr(p.function.size() + 1);
  return rest == std::to_string(p.position) ? std::string() : rest;
}

[[noreturn]] void BadIndex(const std::string& path, const std::string& what) {
  TVM_FFI_THROW(ValueError) << "weights index " << path << ": " << what;
  TVM_FFI_UNREACHABLE();
}

constexpr int kIndexDepth = 3;  // the object, weight_map (or metadata), a value

// Why an index's file name cannot be followed, or "" (transformers writes names in its folder).
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
  std::set<std::string> seen;
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
    if (seen.insert(name).second) names.push_back(name);
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

std::string QualifiedKey(const std::string& function, int64_t position,
                         const ffi::Array<ffi::String>& param_names) {
  std::string name;
  if (position >= 0 && position < static_cast<int64_t>(param_names.size())) {
    name = param_names[position];
  }
  bool unique = !name.empty() && name.find('/') == std::string::npos &&
                name.find_first_not_of("0123456789") != std::string::npos;
  for (int64_t i = 0; unique && i < static_cast<int64_t>(param_names.size()); ++i) {
    unique = i == position || std::string(param_names[i]) != name;
  }
  return function + "/" + (unique ? name : std::to_string(position));
}

std::vector<std::vector<std::string>> Keys(const std::vector<Wanted>& tensors) {
  // Each name -> its first place (tensor, place), or none (SIZE_MAX) when several tensors have it.
  std::map<std::string, std::pair<size_t, size_t>> first_place;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t j = 0; j < tensors[i].places.size(); ++j) {
      const std::string name = NameOf(tensors[i].places[j]);
      if (name.empty()) continue;
      auto it = first_place.emplace(name, std::make_pair(i, j)).first;
      if (it->second.first != i) it->second = {SIZE_MAX, SIZE_MAX};
    }
  }
  std::vector<std::vector<std::string>> out(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t j = 0; j < tensors[i].places.size(); ++j) {
      const Place& p = tensors[i].places[j];
      const std::string name = NameOf(p);
      const bool bare = !name.empty() && name != "__metadata__" && WeightsFile::IsTensorKey(name) &&
                        first_place[name] == std::make_pair(i, j);
      out[i].push_back(bare ? name : QualifiedKey(p.function, p.position, *p.param_names));
    }
  }
  return out;
}

std::vector<Wanted> WantedOf(const format::Parsed& parsed) {
  std::vector<Wanted> out(parsed.payloads.size());
  for (const format::ParsedFunction& fn : parsed.functions) {
    for (const format::ParsedValue& v : fn.values) {
      if (v.kind != format::kTensor && v.kind != format::kSharedTensor) continue;
      Wanted& w = out[v.payload];
      if (w.places.empty()) {
        w.dtype = ffi::DLDataTypeToString(v.tensor.dtype);
        const format::Shard* stored = nullptr;  // a shard-major payload: [world, *shard]
        for (const format::Shard& s : fn.shards) {
          if (s.position == v.index && s.layout == format::kShardMajor) stored = &s;
        }
        w.shape = format::StoredShape(v.tensor.shape, stored);
      }
      w.places.push_back({std::string(fn.name), v.index, &fn.param_names});
    }
  }
  return out;
}

KeyRef ParseKey(const std::string& path, const std::string& key) {
  // At the last '/' (Keys writes none after it): function a/b keeps its '/' (a/b/1: a/b, 1).
  const size_t slash = key.rfind('/');
  if (slash == std::string::npos) return {"", key};
  const std::string rest = key.substr(slash + 1);
  // A position is ASCII digits only (so "²" or "-1" is a name, not a number).
  if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) {
    return {key.substr(0, slash), rest};
  }
  // More than 19 digits counts as past every position (19 always fit uint64; more may not).
  const uint64_t position = rest.size() > 19 ? UINT64_MAX : std::stoull(rest);
  if (position > static_cast<uint64_t>(detail::kMaxPosition)) {
    Bad(path, "tensor '" + key + "' names position " + rest + ", which no call can reach");
  }
  return {key.substr(0, slash), "", static_cast<int64_t>(position)};
}

std::vector<Located> Match(const WeightsSet& set, const std::vector<Wanted>& wanted,
                           const ModelRecord& model) {
  const std::string& path = set.path;
  const char* scheme =
      " (keys are parameter names, e.g. weights, where one bound tensor has that name; else "
      "FUNCTION/PARAMETER, e.g. main/weights, or FUNCTION/POSITION, e.g. main/1)";
  const std::vector<std::vector<std::string>> keys = Keys(wanted);
  // What tensor i is called in messages: 'KEY', and its places when it has several.
  auto named = [&](size_t i) {
    std::string text = "'" + keys[i][0] + "'";
    if (keys[i].size() == 1) return text;
    text += " (one tensor, bound at " + keys[i][0];
    for (size_t j = 1; j < keys[i].size(); ++j) {
      text += (j + 1 == keys[i].size() ? " and " : ", ") + keys[i][j];
    }
    return text + ")";
  };
  std::set<std::string> place_names;  // the names keys can reach places by
  for (const Wanted& w : wanted) {
    for (const Place& p : w.places) place_names.insert(NameOf(p));
  }
  std::map<size_t, std::string> supplied;  // tensor -> the key that supplies it
  std::string binds;
  for (size_t i = 0; i < wanted.size(); ++i) binds += (binds.empty() ? "" : ", ") + keys[i][0];
  for (const auto& [key, found] : set.tensors) {
    const Entry& entry = found.entry;
    KeyRef ref = ParseKey(path, key);
    if (ref.function.empty() && !place_names.count(ref.name)) {
      // Another name of a tied tensor reaches the place of the name bound.
      if (const std::vector<std::string>* group = model.TieOf(ref.name)) {
        for (const std::string& n : *group) ref.name = place_names.count(n) ? n : ref.name;
      }
    }
    std::vector<std::pair<size_t, size_t>> targets;  // (tensor, place): one per tensor
    for (size_t i = 0; i < wanted.size(); ++i) {
      for (size_t j = 0; j < wanted[i].places.size(); ++j) {
        const Place& p = wanted[i].places[j];
        if (!ref.function.empty() && ref.function != p.function) continue;
        // A name reaches a place only where it is that place's name for keys: a parameter name
        // its function has twice (unnamed TE placeholders) is reached by position alone.
        const bool by_name = !ref.name.empty() && NameOf(p) == ref.name;
        if (by_name || (ref.name.empty() && ref.position == p.position)) {
          targets.emplace_back(i, j);
          break;  // a tensor counts once, whichever of its places the key names
        }
      }
    }
    // A bare name only: these are the model's names. A pinned one is bound, and checked too.
    const CompiledIn* compiled = ref.function.empty() ? model.Find(ref.name) : nullptr;
    if (compiled != nullptr && (targets.empty() || compiled->kind == CompiledIn::kPinned)) {
      const DLDataType dtype = ffi::StringToDLDataType(entry.dtype->tvm);
      const std::string problem =
          CompiledInProblem(*compiled, dtype, entry.shape, HashOf(set, found));
      if (!problem.empty()) Bad(path, "tensor '" + key + "': " + problem);
      if (targets.empty()) continue;  // the compiled value: nothing to bind
    }
    if (targets.empty()) {
      Bad(path, "tensor '" + key + "' is not a tensor the module binds (it binds " +
                    (binds.empty() ? std::string("no tensors") : binds) +
                    "); it holds the weights of another model" + scheme);
    }
    if (targets.size() > 1) {
      Bad(path, "tensor '" + key + "' could be '" + keys[targets[0].first][targets[0].second] +
                    "' or '" + keys[targets[1].first][targets[1].second] +
                    "': a parameter of that name is bound in several functions; name it "
                    "FUNCTION/" +
                    ref.name);
    }
    auto [it, fresh] = supplied.emplace(targets[0].first, key);
    // Both names of a tied pair (a cloned state_dict): taken when they hold the same tensor.
    const SetEntry& first = set.tensors.at(it->second);
    if (!fresh && (first.entry.dtype != entry.dtype || first.entry.shape != entry.shape ||
                   HashOf(set, first) != HashOf(set, found))) {
      Bad(path, "tensors '" + it->second + "' and '" + key + "' both supply " +
                    named(targets[0].first) +
                    " with different values (dtype, shape or bytes); keep one");
    }
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (!supplied.count(i)) missing.push_back(keys[i][0]);
  }
  if (!missing.empty()) {
    Bad(path, "lacks tensor '" + missing[0] + "' that the module binds" +
                  (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)"
                                      : std::string()) +
                  "; it holds the weights of another model" + scheme);
  }
  std::vector<Located> out;
  for (size_t i = 0; i < wanted.size(); ++i) {
    const std::string& key = supplied.at(i);
    const SetEntry& found = set.tensors.at(key);
    const Entry& e = found.entry;
    if (e.dtype->tvm != wanted[i].dtype || e.shape != wanted[i].shape) {
      Bad(path, "tensor '" + key + "' is " + e.dtype->tvm + format::Dims(e.shape) +
                    ", the module binds " + wanted[i].dtype + format::Dims(wanted[i].shape) +
                    " there");
    }
    out.push_back({found.file, set.files[found.file].data_start + e.begin});
  }
  return out;
}

}  // namespace weights
}  // namespace tvm_partial
