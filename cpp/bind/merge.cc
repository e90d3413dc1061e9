// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/merge.cc
 * \brief The one merge of a partial over a partial (merge.h).
 */
#include "bind/merge.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "bind/outputs.h"

namespace tvm_partial {
namespace detail {

namespace {

// Names after the merge: `inner_names`, else `original` (it must fit), else `outer_names` with
// "arg<i>" at the taken positions when they fit, else none.
ffi::Array<ffi::String> MergeNames(const std::vector<int64_t>& taken,
                                   const ffi::Array<ffi::String>& inner_names,
                                   const ffi::Array<ffi::String>& outer_names,
                                   const ffi::Array<ffi::String>& original,
                                   const std::string& who) {
  if (!inner_names.empty()) return inner_names;
  const size_t total = outer_names.size() + taken.size();
  if (!original.empty()) {
    const int64_t count = static_cast<int64_t>(original.size());
    bool fits = taken.empty() || taken.back() < count;
    if (fits && !outer_names.empty()) {
      fits = total == original.size();
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
  if (outer_names.empty()) return {};
  ffi::Array<ffi::String> names;
  names.reserve(total);
  for (size_t position = 0, j = 0, q = 0; position < total; ++position) {
    if (j < taken.size() && taken[j] == static_cast<int64_t>(position)) {
      names.push_back(ffi::String("arg" + std::to_string(position)));
      ++j;
    } else {
      if (q >= outer_names.size()) return {};  // inner binds past the end: names unusable
      names.push_back(outer_names[q++]);
    }
  }
  return names;  // every taken position was named: else q would have run out
}

// Outer bindings at wrapped positions, checked against a call's reach and (`num_names` > 0) the
// parameters. q lands at q + j (j: taken positions below it); both sorted, so one pass.
BoundList Place(const std::vector<int64_t>& taken, const BoundList& outer, size_t num_names,
                const std::string& who) {
  BoundList placed;
  size_t j = 0;
  for (const auto& [q, value] : outer) {
    // Unsigned: q is non-negative (checked) and j counts list entries, so the sum cannot wrap.
    uint64_t position = static_cast<uint64_t>(q) + j;
    while (j < taken.size() && static_cast<uint64_t>(taken[j]) <= position) {
      ++j;
      ++position;
    }
    if (q < 0 || position > static_cast<uint64_t>(kMaxPosition)) {
      TVM_FFI_THROW(IndexError) << who << ": bound index " << q << " of the partial lands at "
                                << "position " << position << " of the function it wraps, which "
                                << "no call can reach (a call passes at most " << kMaxCallArgs
                                << " arguments)";
    }
    if (num_names > 0 && position >= num_names) {
      TVM_FFI_THROW(IndexError) << who << ": bound index " << q << " of the partial lands at "
                                << "position " << position << " of the function it wraps, past "
                                << "its " << num_names << " parameters";
    }
    placed.emplace_back(static_cast<int64_t>(position), value);
  }
  return placed;
}

}  // namespace

Level CheckLevel(Level level, const std::string& who) {
  CheckAgainstSignature(level.bound, level.param_names, who);
  level.outputs = CheckOutputs(std::move(level.outputs), level.bound, level.param_names, who);
  return level;
}

Level Merge(const Level& inner, Level outer, const ffi::Array<ffi::String>& original,
            const std::string& who) {
  // Check before mapping: a negative position would map anywhere.
  outer = CheckLevel(std::move(outer), who);
  // The inner outputs take positions as its bindings do.
  const std::vector<int64_t> taken = TakenPositions(inner.bound, inner.outputs);
  Level merged;
  merged.param_names = MergeNames(taken, inner.param_names, outer.param_names, original, who);
  const BoundList placed = Place(taken, outer.bound, merged.param_names.size(), who);
  std::merge(inner.bound.begin(), inner.bound.end(), placed.begin(), placed.end(),
             std::back_inserter(merged.bound),
             [](const auto& a, const auto& b) { return a.first < b.first; });
  merged.outputs = inner.outputs;
  for (Output o : outer.outputs) {
    o.position = ToWrapped(taken, o.position);
    for (OutputDim& dim : o.shape) {
      if (dim.arg >= 0) dim.arg = ToWrapped(taken, dim.arg);
    }
    merged.outputs.push_back(std::move(o));
  }
  return CheckLevel(std::move(merged), who);
}

}  // namespace detail
}  // namespace tvm_partial
