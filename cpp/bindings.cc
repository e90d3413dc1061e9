/*!
 * \file bindings.cc
 * \brief Validation, sorting and merging of bindings (position -> value).
 */
#include "bindings.h"

#include <tvm/ffi/error.h>

#include <algorithm>
#include <string>

namespace tvm_partial {
namespace detail {

namespace {

void SortAndCheckUnique(BoundList* list, const std::string& who) {
  std::sort(list->begin(), list->end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < list->size(); ++i) {
    if ((*list)[i].first == (*list)[i - 1].first) {
      TVM_FFI_THROW(ValueError) << who << ": position " << (*list)[i].first
                                << " is bound twice";
    }
  }
}

void CheckNonNegative(int64_t index, const std::string& who) {
  if (index < 0) {
    TVM_FFI_THROW(ValueError) << who << ": bound index " << index
                              << " is negative; positions count from 0";
  }
}

}  // namespace

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
    CheckNonNegative(index, who);
    list.emplace_back(index, value);
  }
  SortAndCheckUnique(&list, who);
  return list;
}

BoundList FromBindings(const Bindings& bound, const std::string& who) {
  BoundList list;
  list.reserve(bound.size());
  for (const auto& [index, value] : bound) {
    CheckNonNegative(index, who);
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

BoundList Merge(const BoundList& inner, const BoundList& outer) {
  // The inner partial's argument q lands on the q-th position of the wrapped function that
  // `inner` leaves free. Walk both sorted lists once.
  BoundList merged(inner);
  size_t j = 0;          // next inner binding to skip over
  int64_t position = 0;  // candidate free position in the wrapped function
  int64_t q = 0;         // its index among free positions
  for (const auto& [outer_index, value] : outer) {
    while (true) {
      while (j < inner.size() && inner[j].first == position) {
        ++j;
        ++position;
      }
      if (q == outer_index) break;
      // Jump straight to the next inner binding (or to the target when none is left).
      int64_t next_bound = j < inner.size() ? inner[j].first : INT64_MAX;
      int64_t step = std::min(next_bound - position, outer_index - q);
      position += step;
      q += step;
    }
    merged.emplace_back(position, value);
    ++position;
    ++q;
  }
  std::sort(merged.begin(), merged.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return merged;
}

ffi::Array<ffi::String> MergeNames(const BoundList& inner, const ffi::Array<ffi::String>& inner_names,
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

}  // namespace detail
}  // namespace tvm_partial
