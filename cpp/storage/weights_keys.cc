// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file storage/weights_keys.cc
 * \brief How bound tensors are named in weights files, and which tensor of a file supplies each
 *        binding (storage/weights_file.h): `Key`, `ParseKey`, `Match`.
 */
#include <tvm/ffi/error.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bind/bindings.h"
#include "storage/weights_file.h"

namespace tvm_partial {
namespace weights {

namespace {

/*! \brief `s` parsed as a position: ASCII digits only (so "²" or "-1" is a name, not a number). */
std::optional<int64_t> AsPosition(const std::string& s) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return s.size() > 19 && s.find_first_not_of("0123456789") == std::string::npos
               ? std::optional<int64_t>(INT64_MAX)  // out of range: refused by the caller
               : std::nullopt;
  }
  return static_cast<int64_t>(std::stoull(s));
}

}  // namespace

std::string Key(const std::string& function, int64_t position,
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

KeyRef ParseKey(const std::string& path, const std::string& key) {
  KeyRef out;
  const size_t slash = key.find('/');
  if (slash == std::string::npos) {
    out.name = key;
    return out;
  }
  out.function = key.substr(0, slash);
  const std::string rest = key.substr(slash + 1);
  if (std::optional<int64_t> position = AsPosition(rest)) {
    if (*position > detail::kMaxPosition) {
      Bad(path, "tensor '" + key + "' names position " + rest + ", which no call can reach");
    }
    out.position = *position;
  } else {
    out.name = rest;
  }
  return out;
}

std::vector<uint64_t> Match(const WeightsFile& file, const std::vector<Wanted>& wanted) {
  const std::string& path = file.file->path;
  const char* scheme =
      " (keys read FUNCTION/PARAMETER, e.g. main/weights, FUNCTION/POSITION, e.g. main/1, or a "
      "parameter name alone where one bound function has it)";
  // Each key of the file -> the binding it supplies.
  std::map<std::pair<std::string, int64_t>, std::string> supplied;  // binding -> key
  std::map<std::pair<std::string, int64_t>, size_t> index;          // binding -> wanted[i]
  for (size_t i = 0; i < wanted.size(); ++i) index[{wanted[i].function, wanted[i].position}] = i;
  std::string binds;
  for (const Wanted& w : wanted) {
    binds += (binds.empty() ? "" : ", ") + Key(w.function, w.position, *w.param_names);
  }
  for (const auto& [key, entry] : file.entries) {
    if (!WeightsFile::IsTensorKey(key)) continue;
    const KeyRef ref = ParseKey(path, key);
    std::vector<std::pair<std::string, int64_t>> targets;
    for (const Wanted& w : wanted) {
      if (!ref.function.empty() && ref.function != w.function) continue;
      const bool by_name = !ref.name.empty() &&
                           w.position < static_cast<int64_t>(w.param_names->size()) &&
                           std::string((*w.param_names)[w.position]) == ref.name;
      if (by_name || (ref.name.empty() && ref.position == w.position)) {
        targets.emplace_back(w.function, w.position);
      }
    }
    if (targets.empty()) {
      Bad(path, "tensor '" + key + "' is not a tensor the module binds (it binds " +
                    (binds.empty() ? std::string("no tensors") : binds) +
                    "); it holds the weights of another model" + scheme);
    }
    if (targets.size() > 1) {
      Bad(path,
          "tensor '" + key + "' could be '" +
              Key(targets[0].first, targets[0].second, *wanted[index[targets[0]]].param_names) +
              "' or '" +
              Key(targets[1].first, targets[1].second, *wanted[index[targets[1]]].param_names) +
              "': a parameter of that name is bound in several functions; name it "
              "FUNCTION/" +
              ref.name);
    }
    auto [it, fresh] = supplied.emplace(targets[0], key);
    if (!fresh) {
      Bad(path,
          "tensors '" + it->second + "' and '" + key + "' both supply " +
              Key(targets[0].first, targets[0].second, *wanted[index[targets[0]]].param_names) +
              "; keep one");
    }
  }
  std::vector<uint64_t> out;
  std::vector<std::string> missing;
  for (const Wanted& w : wanted) {
    auto it = supplied.find({w.function, w.position});
    if (it == supplied.end()) missing.push_back(Key(w.function, w.position, *w.param_names));
  }
  if (!missing.empty()) {
    Bad(path, "lacks tensor '" + missing[0] + "' that the module binds" +
                  (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)"
                                      : std::string()) +
                  "; it holds the weights of another model" + scheme);
  }
  for (const Wanted& w : wanted) {
    const std::string& key = supplied.at({w.function, w.position});
    const Entry& e = file.entries.at(key);
    if (e.dtype->tvm != w.dtype || e.shape != w.shape) {
      Bad(path, "tensor '" + key + "' is " + e.dtype->tvm + ShapeText(e.shape) +
                    ", the module binds " + w.dtype + ShapeText(w.shape) + " there");
    }
    out.push_back(file.data_start + e.begin);
  }
  return out;
}

}  // namespace weights
}  // namespace tvm_partial
