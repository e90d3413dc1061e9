// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/bindings.cc
 * \brief Validation and sorting of bindings (position -> value); position arithmetic.
 */
#include "bind/bindings.h"

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <algorithm>

#include "registry.h"

namespace tvm_partial {
namespace detail {

namespace {

BoundList SortAndCheckUnique(BoundList list, const std::string& who) {
  std::sort(list.begin(), list.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  auto twice = std::adjacent_find(list.begin(), list.end(),
                                  [](const auto& a, const auto& b) { return a.first == b.first; });
  if (twice != list.end()) {
    TVM_FFI_THROW(ValueError) << who << ": position " << twice->first << " is bound twice";
  }
  return list;
}

}  // namespace

void CheckPosition(int64_t index, const std::string& who, const std::string& shown) {
  if (index >= 0 && index <= kMaxPosition) return;
  const std::string text = (who.empty() ? "" : who + ": ") + "bound index " +
                           (shown.empty() ? std::to_string(index) : shown);
  if (index < 0) TVM_FFI_THROW(ValueError) << text << " is negative; positions count from 0";
  TVM_FFI_THROW(IndexError) << text << " cannot be reached: a call passes at most " << kMaxCallArgs
                            << " arguments, so positions go up to " << kMaxPosition;
}

BoundList FromAnyMap(const ffi::Map<ffi::Any, ffi::Any>& raw, const std::string& who) {
  BoundList list;
  for (const auto& [key, value] : raw) {
    // bool converts to int implicitly in the FFI; a position must be a real integer.
    if (key.type_index() != ffi::TypeIndex::kTVMFFIInt) {
      std::string shown = key.type_index() == ffi::TypeIndex::kTVMFFIStr ||
                                  key.type_index() == ffi::TypeIndex::kTVMFFISmallStr
                              ? "'" + std::string(key.cast<ffi::String>()) + "'"
                              : std::string(key.GetTypeKey());
      TVM_FFI_THROW(TypeError) << who << ": bound key " << shown
                               << " is not an integer position (positions are ints >= 0)";
    }
    CheckPosition(key.cast<int64_t>(), who);
    list.emplace_back(key.cast<int64_t>(), value);
  }
  return SortAndCheckUnique(std::move(list), who);
}

BoundList FromBindings(const Bindings& bound, const std::string& who) {
  BoundList list(bound.begin(), bound.end());
  for (const auto& entry : list) CheckPosition(entry.first, who);
  return SortAndCheckUnique(std::move(list), who);
}

Bindings ToBindings(const BoundList& list) {
  Bindings out;
  for (const auto& [index, value] : list) out.Set(index, value);
  return out;
}

void CheckAgainstSignature(const BoundList& bound, const ffi::Array<ffi::String>& names,
                           const std::string& who) {
  if (static_cast<int64_t>(names.size()) > kMaxCallArgs) {
    TVM_FFI_THROW(ValueError) << who << ": a signature of " << names.size()
                              << " parameters cannot be called (a call passes at most "
                              << kMaxCallArgs << " arguments)";
  }
  if (names.empty() || bound.empty()) return;
  if (bound.back().first >= static_cast<int64_t>(names.size())) {
    TVM_FFI_THROW(IndexError) << who << ": bound index " << bound.back().first
                              << " is out of range for a function of " << names.size()
                              << " parameters";
  }
}

std::vector<int64_t> TakenPositions(const BoundList& bound, const Outputs& outputs) {
  std::vector<int64_t> taken;
  taken.reserve(bound.size() + outputs.size());
  for (const auto& entry : bound) taken.push_back(entry.first);
  for (const Output& o : outputs) taken.push_back(o.position);
  std::sort(taken.begin(), taken.end());
  return taken;
}

int64_t ToWrapped(const std::vector<int64_t>& taken, int64_t q) {
  int64_t position = q;
  for (int64_t t : taken) {
    if (t > position) break;
    ++position;
  }
  return position;
}

std::string ParamLabel(int64_t position, const ffi::Array<ffi::String>& names) {
  if (position >= 0 && position < static_cast<int64_t>(names.size())) {
    return "'" + std::string(names[position]) + "' (position " + std::to_string(position) + ")";
  }
  return "position " + std::to_string(position);
}

}  // namespace detail

TVM_FFI_STATIC_INIT_BLOCK() {
  // For Python's partial() and rebind(), which check a bind's positions, all at once, before
  // converting any value; `shown[i]`: the key as given where it is not `index[i]` (past int64).
  detail::RegisterGlobalOnce("tvm_partial.CheckPosition", [](const ffi::Array<int64_t>& index,
                                                             const ffi::Array<ffi::String>& shown) {
    for (size_t i = 0; i < index.size(); ++i) {
      detail::CheckPosition(index[i], "", i < shown.size() ? std::string(shown[i]) : "");
    }
  });
}

}  // namespace tvm_partial
