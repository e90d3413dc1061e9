// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bindings.cc
 * \brief Validation, sorting and merging of bindings (position -> value).
 */
#include "bindings.h"

#include <tvm/ffi/error.h>

#include <algorithm>
#include <iterator>
#include <string>

namespace tvm_partial {
namespace detail {

namespace {

void SortAndCheckUnique(BoundList* list, const std::string& who) {
  std::sort(list->begin(), list->end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < list->size(); ++i) {
    if ((*list)[i].first == (*list)[i - 1].first) {
      TVM_FFI_THROW(ValueError) << who << ": position " << (*list)[i].first << " is bound twice";
    }
  }
}

}  // namespace

void CheckPosition(int64_t index, const std::string& who) {
  if (index < 0) {
    TVM_FFI_THROW(ValueError) << who << ": bound index " << index
                              << " is negative; positions count from 0";
  }
  if (index > kMaxPosition) {
    TVM_FFI_THROW(IndexError) << who << ": bound index " << index
                              << " cannot be reached: a call passes at most " << kMaxCallArgs
                              << " arguments, so positions go up to " << kMaxPosition;
  }
}

BoundList FromAnyMap(const ffi::Map<ffi::Any, ffi::Any>& raw, const std::string& who) {
  BoundList list;
  list.reserve(raw.size());
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
    int64_t index = key.cast<int64_t>();
    CheckPosition(index, who);
    list.emplace_back(index, value);
  }
  SortAndCheckUnique(&list, who);
  return list;
}

BoundList FromBindings(const Bindings& bound, const std::string& who) {
  BoundList list;
  list.reserve(bound.size());
  for (const auto& [index, value] : bound) {
    CheckPosition(index, who);
    list.emplace_back(index, value);
  }
  SortAndCheckUnique(&list, who);
  return list;
}

Bindings ToBindings(const BoundList& list) {
  Bindings out;
  for (const auto& [index, value] : list) out.Set(index, value);
  return out;
}

BoundList Merge(const BoundList& inner, const BoundList& outer, const std::string& who) {
  // The inner partial's argument q lands on the q-th position of the wrapped function that
  // `inner` leaves free: q + j, where j counts the inner positions below it. Both lists are
  // sorted, so j only grows: one pass over each, then a linear merge of the two results.
  BoundList placed;
  placed.reserve(outer.size());
  size_t j = 0;
  for (const auto& [q, value] : outer) {
    // Unsigned: q is non-negative and j counts list entries, so the sum cannot wrap.
    uint64_t position = static_cast<uint64_t>(q) + j;
    while (j < inner.size() && static_cast<uint64_t>(inner[j].first) <= position) {
      ++j;
      ++position;
    }
    if (q < 0 || position > static_cast<uint64_t>(kMaxPosition)) {
      TVM_FFI_THROW(IndexError) << who << ": bound index " << q << " of the partial lands at "
                                << "position " << position << " of the function it wraps, which "
                                << "no call can reach (a call passes at most " << kMaxCallArgs
                                << " arguments)";
    }
    placed.emplace_back(static_cast<int64_t>(position), value);
  }
  BoundList merged;
  merged.reserve(inner.size() + placed.size());
  std::merge(inner.begin(), inner.end(), placed.begin(), placed.end(), std::back_inserter(merged),
             [](const auto& a, const auto& b) { return a.first < b.first; });
  return merged;
}

ffi::Array<ffi::String> MergeNames(const BoundList& inner,
                                   const ffi::Array<ffi::String>& inner_names,
                                   const ffi::Array<ffi::String>& outer_names) {
  if (!inner_names.empty() || outer_names.empty()) return inner_names;
  ffi::Array<ffi::String> names;
  size_t j = 0, q = 0;
  const size_t total = outer_names.size() + inner.size();
  for (size_t position = 0; position < total; ++position) {
    if (j < inner.size() && inner[j].first == static_cast<int64_t>(position)) {
      names.push_back(ffi::String("arg" + std::to_string(position)));
      ++j;
    } else {
      if (q >= outer_names.size()) return {};  // inner binds past the end: names unusable
      names.push_back(outer_names[q++]);
    }
  }
  return j == inner.size() ? names : ffi::Array<ffi::String>();
}

ffi::Array<ffi::String> InnerNames(const BoundList& inner_bound, const Outputs& inner_outputs,
                                   const ffi::Array<ffi::String>& inner_names,
                                   const ffi::Array<ffi::String>& outer_names,
                                   const ffi::Array<ffi::String>& original,
                                   const std::string& who) {
  if (!inner_names.empty() || original.empty()) return inner_names;
  std::vector<int64_t> taken;
  for (const auto& entry : inner_bound) taken.push_back(entry.first);
  for (const Output& o : inner_outputs) taken.push_back(o.position);
  std::sort(taken.begin(), taken.end());
  const int64_t count = static_cast<int64_t>(original.size());
  bool fits = taken.empty() || taken.back() < count;
  if (fits && !outer_names.empty()) {
    fits = outer_names.size() + taken.size() == original.size();
    for (int64_t position = 0, j = 0, q = 0; fits && position < count; ++position) {
      if (j < static_cast<int64_t>(taken.size()) && taken[j] == position) {
        ++j;
      } else {
        fits = outer_names[q++] == original[position];
      }
    }
  }
  if (!fits) {
    TVM_FFI_THROW(ValueError) << who << ": the original parameter names (" << original.size()
                              << ") do not fit the partial's " << taken.size()
                              << " bound positions and " << outer_names.size()
                              << " free argument names";
  }
  return original;
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

}  // namespace detail
}  // namespace tvm_partial
