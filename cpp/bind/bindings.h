// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bind/bindings.h
 * \brief Internal: checked, sorted bindings (position -> value) and the positions' range.
 */
#ifndef TVM_PARTIAL_BIND_BINDINGS_H_
#define TVM_PARTIAL_BIND_BINDINGS_H_

#include <tvm_partial/partial_apply.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tvm_partial {
namespace detail {

// The most arguments one call carries, bound included (the FFI counts in an int32_t).
constexpr int64_t kMaxCallArgs = INT32_MAX;
// The largest position a call can reach: position p needs p + 1 arguments in all.
constexpr int64_t kMaxPosition = kMaxCallArgs - 1;

// Refuse a position no call can use (ValueError if negative, else IndexError; Python's too, via
// tvm_partial.CheckPosition). `who`: message prefix or ""; `shown`: `index` as written if clamped.
void CheckPosition(int64_t index, const std::string& who, const std::string& shown = "");

// Bound values sorted by position; positions are unique and non-negative.
using BoundList = std::vector<std::pair<int64_t, ffi::Any>>;

// From an untyped map as it arrives from Python: TypeError for a key that is not an integer.
BoundList FromAnyMap(const ffi::Map<ffi::Any, ffi::Any>& raw, const std::string& who);

BoundList FromBindings(const Bindings& bound, const std::string& who);

Bindings ToBindings(const BoundList& list);

// Bound positions against the parameter names (when known), and a count a call can pass.
void CheckAgainstSignature(const BoundList& bound, const ffi::Array<ffi::String>& names,
                           const std::string& who);

// The sorted positions a partial takes: those it binds and those it allocates (outputs).
std::vector<int64_t> TakenPositions(const BoundList& bound, const Outputs& outputs);

// The wrapped position of argument `q` of a partial taking `taken` (sorted).
int64_t ToWrapped(const std::vector<int64_t>& taken, int64_t q);

// "'w' (position 1)" when `names` names the position, else "position 1".
std::string ParamLabel(int64_t position, const ffi::Array<ffi::String>& names);

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_BIND_BINDINGS_H_
