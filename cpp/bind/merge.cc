// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/merge.cc
 * \brief A partial of a partial flattened into one level (merge.h).
 */
#include "bind/merge.h"

#include <tvm/ffi/error.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "bind/outputs.h"

namespace tvm_partial {
namespace detail {

namespace {

bool IsOutput(const Outputs& outputs, int64_t position) {
  for (const Output& o : outputs) {
    if (o.position == position) return true;
  }
  return false;
}

}  // namespace

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

void MergeLevels(const BoundList& inner_bound, const Outputs& inner_outputs,
                 const ffi::Array<ffi::String>& inner_names, BoundList* bound,
                 ffi::Array<ffi::String>* names, Outputs* outputs, const std::string& who) {
  // Positions are checked before they are mapped (a negative one would map anywhere).
  CheckOutputShapes(*outputs, who, {});
  const std::vector<int64_t> taken = TakenPositions(inner_bound, inner_outputs);
  // The inner outputs take positions like bindings: merge with placeholders there, then drop them.
  BoundList taken_list = inner_bound;
  for (const Output& o : inner_outputs) taken_list.emplace_back(o.position, ffi::Any());
  std::sort(taken_list.begin(), taken_list.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  *names = MergeNames(taken_list, inner_names, *names);
  BoundList merged = Merge(taken_list, *bound, who);
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [&](const auto& e) { return IsOutput(inner_outputs, e.first); }),
               merged.end());
  *bound = std::move(merged);
  Outputs all = inner_outputs;
  for (Output o : *outputs) {
    o.position = ToWrapped(taken, o.position);
    for (OutputDim& dim : o.shape) {
      if (dim.arg >= 0) dim.arg = ToWrapped(taken, dim.arg);
    }
    all.push_back(std::move(o));
  }
  *outputs = std::move(all);
}

}  // namespace detail
}  // namespace tvm_partial
