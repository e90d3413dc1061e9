// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_apply.cc
 * \brief The partial function: a closure holding bound arguments by position, and its global
 *        `runtime.PartialApply` (introspection globals: bind_module.cc).
 */
#include <tvm/ffi/error.h>
#include <tvm/ffi/memory.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bind/bindings.h"
#include "bind/merge.h"
#include "bind/outputs.h"
#include "out_of_memory.h"
#include "registry.h"

namespace tvm_partial {

namespace {

// The closure. All a call needs is computed at bind time: sorted positions, views of the bound
// values, the argument-count range, each slot's source for short calls.
class PartialFunctionObj final : public ffi::FunctionObj {
 public:
  explicit PartialFunctionObj(detail::PartialParts parts) : parts_(std::move(parts)) {
    const detail::Level& level = parts_.level;
    this->safe_call = SafeCall;
    this->cpp_call = reinterpret_cast<void*>(CppCall);
    target_obj_ = static_cast<const ffi::FunctionObj*>(parts_.target.get());
    // Outputs take slots among the bound values (never at a bound position), filled per call.
    positions_ = detail::TakenPositions(level.bound, level.outputs);
    auto held = level.bound.begin();
    for (int64_t position : positions_) {
      const bool bound_here = held != level.bound.end() && held->first == position;
      views_.push_back(bound_here ? *reinterpret_cast<const TVMFFIAny*>(&(held++)->second)
                                  : TVMFFIAny{});
    }
    for (const Output& o : level.outputs) {
      output_slots_.push_back(static_cast<int32_t>(
          std::lower_bound(positions_.begin(), positions_.end(), o.position) - positions_.begin()));
    }
    num_outputs_ = static_cast<int32_t>(level.outputs.size());
    if (num_outputs_ != 0) plan_ = detail::OutputPlan(level, parts_.name);
    num_bound_ = static_cast<int32_t>(positions_.size());  // bound values and outputs
    last_position_ = positions_.empty() ? -1 : positions_.back();
    const int64_t num_names = static_cast<int64_t>(level.param_names.size());
    expected_args_ = num_names == 0 ? -1 : num_names - num_bound_;
    // Valid counts form one range [min_args_, min_args_ + arg_span_]: exact with names (bound
    // positions were checked against them); without, enough to reach the last bound position and
    // at most kMaxCallArgs in all. Bind-time checks keep both ends in [0, INT32_MAX].
    const int64_t least = expected_args_ >= 0
                              ? expected_args_
                              : std::max<int64_t>(last_position_ + 1 - num_bound_, 0);
    const int64_t most = expected_args_ >= 0 ? expected_args_ : detail::kMaxCallArgs - num_bound_;
    TVM_FFI_ICHECK(0 <= least && least <= most && most <= detail::kMaxCallArgs);
    min_args_ = static_cast<uint32_t>(least);
    arg_span_ = static_cast<uint32_t>(most - least);
    // Each slot's source, for calls of at most kGatherSlots arguments only: there every bound
    // position is below kGatherSlots, so a slot past the last one takes the next caller argument.
    int64_t next_caller = 0;
    size_t j = 0;
    for (int64_t s = 0; s < kGatherSlots; ++s) {
      const bool bound_here = j < positions_.size() && positions_[j] == s;
      source_[s] = bound_here ? 1 : 0;
      index_[s] = static_cast<uint8_t>(bound_here ? j++ : next_caller++);
    }
  }

  static int SafeCall(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
    TVM_FFI_SAFE_CALL_BEGIN();
    CppCall(static_cast<const ffi::FunctionObj*>(self), reinterpret_cast<const ffi::AnyView*>(args),
            num_args, reinterpret_cast<ffi::Any*>(result));
    TVM_FFI_SAFE_CALL_END();
  }

  // The hot path: one unsigned range check, copies of 16-byte slots, one indirect call.
  static void CppCall(const ffi::FunctionObj* func, const ffi::AnyView* args, int32_t num_args,
                      ffi::Any* result) {
    const auto* self = static_cast<const PartialFunctionObj*>(func);
    if (static_cast<uint32_t>(num_args) - self->min_args_ > self->arg_span_) {
      self->ThrowBadCount(num_args);
    }
    const int64_t total = static_cast<int64_t>(num_args) + self->num_bound_;
    const auto* caller = reinterpret_cast<const TVMFFIAny*>(args);
    if (self->num_outputs_ != 0) return self->CallWithOutputs(caller, num_args, total, result);
    self->Call(caller, self->views_.data(), total, result);
  }

  // Calls of up to this many arguments (bound included) take the unrolled gather.
  static constexpr int64_t kGatherSlots = 16;
  // Calls of up to this many arguments (bound included) use no heap.
  static constexpr int64_t kInlineArgs = 32;

  detail::PartialParts parts_;

 private:
  // Allocate the outputs, call, return them. A failed allocation is a MemoryError; the wrapped
  // function's errors pass through unchanged.
  TVM_FFI_NO_INLINE void CallWithOutputs(const TVMFFIAny* caller, int32_t num_args, int64_t total,
                                         ffi::Any* result) const {
    constexpr int32_t kInlineOutputs = 4;
    ffi::Any inline_outs[kInlineOutputs];
    std::unique_ptr<ffi::Any[]> heap_outs;
    ffi::Any* outs = inline_outs;
    TVMFFIAny inline_views[kInlineArgs];
    std::unique_ptr<TVMFFIAny[]> heap_views;
    TVMFFIAny* views = inline_views;
    detail::OutOfMemoryAsMemoryError(
        [&] {
          if (num_outputs_ > kInlineOutputs) {
            heap_outs.reset(new ffi::Any[num_outputs_]);
            outs = heap_outs.get();
          }
          plan_.Allocate(caller, num_args, outs);
          if (num_bound_ > kInlineArgs) {
            heap_views.reset(new TVMFFIAny[num_bound_]);
            views = heap_views.get();
          }
        },
        [this] { return DisplayName() + "()"; });
    std::memcpy(views, views_.data(), num_bound_ * sizeof(TVMFFIAny));
    for (int32_t k = 0; k < num_outputs_; ++k) {
      views[output_slots_[k]] = *reinterpret_cast<const TVMFFIAny*>(&outs[k]);
    }
    Call(caller, views, total, result);
    plan_.Return(outs, result);
  }

  // Call the target with `total` arguments: the caller's, and `views` at the bound positions.
  TVM_FFI_INLINE void Call(const TVMFFIAny* caller, const TVMFFIAny* views, int64_t total,
                           ffi::Any* result) const {
    if (total > kGatherSlots) return CallSpread(caller, views, total, result);
    // Short calls: an unrolled gather by the bind-time plan (no library calls, no trip counts for
    // the CPU to predict); measured in benchmarks/cpp.
    const TVMFFIAny* sources[2] = {caller, views};
    TVMFFIAny packed[kGatherSlots];
    switch (total) {
#define TVM_PARTIAL_GATHER_CASE(n) \
  case n:                          \
    Gather<n>(sources, packed);    \
    break;
      TVM_PARTIAL_GATHER_CASE(1)
      TVM_PARTIAL_GATHER_CASE(2)
      TVM_PARTIAL_GATHER_CASE(3)
      TVM_PARTIAL_GATHER_CASE(4)
      TVM_PARTIAL_GATHER_CASE(5)
      TVM_PARTIAL_GATHER_CASE(6)
      TVM_PARTIAL_GATHER_CASE(7)
      TVM_PARTIAL_GATHER_CASE(8)
      TVM_PARTIAL_GATHER_CASE(9)
      TVM_PARTIAL_GATHER_CASE(10)
      TVM_PARTIAL_GATHER_CASE(11)
      TVM_PARTIAL_GATHER_CASE(12)
      TVM_PARTIAL_GATHER_CASE(13)
      TVM_PARTIAL_GATHER_CASE(14)
      TVM_PARTIAL_GATHER_CASE(15)
      TVM_PARTIAL_GATHER_CASE(16)
#undef TVM_PARTIAL_GATHER_CASE
      default:
        break;  // total == 0
    }
    target_obj_->CallPacked(reinterpret_cast<const ffi::AnyView*>(packed),
                            static_cast<int32_t>(total), result);
  }

  template <int kSlots>
  TVM_FFI_INLINE void Gather(const TVMFFIAny* const sources[2], TVMFFIAny* packed) const {
#pragma GCC unroll 16
    for (int s = 0; s < kSlots; ++s) packed[s] = sources[source_[s]][index_[s]];
  }

  // Longer calls: copy the runs of caller arguments between bound positions.
  TVM_FFI_NO_INLINE void CallSpread(const TVMFFIAny* caller, const TVMFFIAny* views, int64_t total,
                                    ffi::Any* result) const {
    TVMFFIAny inline_slots[kInlineArgs];
    std::unique_ptr<TVMFFIAny[]> heap_slots;
    TVMFFIAny* packed = inline_slots;
    if (total > kInlineArgs) {
      detail::OutOfMemoryAsMemoryError([&] { heap_slots.reset(new TVMFFIAny[total]); },
                                       [this] { return DisplayName() + "()"; });
      packed = heap_slots.get();
    }
    int64_t filled = 0;
    for (int32_t j = 0; j < num_bound_; ++j) {
      const int64_t gap = positions_[j] - filled;
      std::memcpy(packed + filled, caller, gap * sizeof(TVMFFIAny));
      caller += gap;
      filled += gap;
      packed[filled++] = views[j];
    }
    std::memcpy(packed + filled, caller, (total - filled) * sizeof(TVMFFIAny));
    target_obj_->CallPacked(reinterpret_cast<const ffi::AnyView*>(packed),
                            static_cast<int32_t>(total), result);
  }

  [[noreturn]] TVM_FFI_NO_INLINE void ThrowBadCount(int32_t num_args) const {
    if (expected_args_ >= 0) {
      const ffi::Array<ffi::String>& names = parts_.level.param_names;
      std::ostringstream free;  // the parameters not bound (every position taken is below names)
      bool first = true;
      for (int64_t position : detail::FreePositions(positions_, names.size())) {
        free << (first ? "" : ", ") << names[position];
        first = false;
      }
      TVM_FFI_THROW(TypeError) << DisplayName() << "() takes " << expected_args_ << " argument"
                               << (expected_args_ == 1 ? "" : "s") << " (" << free.str() << "), "
                               << num_args << " given";
    }
    const int64_t total = static_cast<int64_t>(num_args) + num_bound_;
    if (total > detail::kMaxCallArgs) {
      TVM_FFI_THROW(ValueError) << DisplayName() << ": " << num_args << " arguments given + "
                                << num_bound_ << " bound = " << total << " arguments, more than "
                                << "one call can pass (" << detail::kMaxCallArgs << ")";
    }
    TVM_FFI_THROW(IndexError) << DisplayName() << ": bound index " << last_position_
                              << " is past the end of the call (" << num_args << " given + "
                              << num_bound_ << " bound = " << total << " arguments)";
    TVM_FFI_UNREACHABLE();
  }

  std::string DisplayName() const {
    return parts_.name.empty() ? std::string("PartialApply") : std::string(parts_.name);
  }

  const ffi::FunctionObj* target_obj_;
  std::vector<int64_t> positions_;  // sorted positions of bound values and outputs
  std::vector<TVMFFIAny> views_;    // non-owning views of the bound values (outputs: empty)
  int32_t num_bound_;
  int64_t last_position_;         // largest bound position, -1 when none
  int64_t expected_args_;         // caller argument count when the signature is known, else -1
  uint32_t min_args_;             // fewest caller arguments a call may pass
  uint32_t arg_span_;             // how many more it may pass (0 when the signature is known)
  uint8_t source_[kGatherSlots];  // slot s of a short call: 0 = caller argument, 1 = bound value
  uint8_t index_[kGatherSlots];   // ... and its index among the caller arguments or views_
  int32_t num_outputs_ = 0;
  std::vector<int32_t> output_slots_;  // slot in views_ of each output, in their order
  detail::OutputPlan plan_;            // shapes, dtypes and device of the outputs
};

// `original_names`: the full parameter list of the function a partial `f` wraps, for when `f`
// recorded none (detail::Merge); empty: unknown.
ffi::Function MakePartial(ffi::Function f, detail::Level level, ffi::String name,
                          const ffi::Array<ffi::String>& original_names = {}) {
  if (!f.defined()) TVM_FFI_THROW(TypeError) << "PartialApply: the function to wrap is None";
  const std::string who = name.empty() ? "PartialApply" : std::string(name);
  if (const detail::PartialParts* inner = detail::GetPartialParts(f)) {
    // Flatten: one closure around the original function, one hop per call.
    level = detail::Merge(inner->level, std::move(level), original_names, who);
    if (name.empty()) name = inner->name;
    f = inner->target;  // copy-and-swap: safe though `inner` lives in the object `f` held
  } else {
    level = detail::CheckLevel(std::move(level), who);
  }
  ffi::ObjectPtr<ffi::FunctionObj> closure = ffi::make_object<PartialFunctionObj>(
      detail::PartialParts{std::move(f), std::move(name), std::move(level)});
  return ffi::Function(std::move(closure));
}

// runtime.PartialApply from Python: keys arrive untyped; outputs as detail::OutputsFromAny reads
// them, original_names as MakePartial takes them.
void PartialApplyPacked(ffi::PackedArgs args, ffi::Any* rv) {
  detail::CheckArgCount(args, 2, 6,
                        "runtime.PartialApply(f, bound, name='', param_names=[], outputs=[], "
                        "original_names=[])");
  auto f =
      detail::RequiredArg<ffi::Function>(args, 0, "PartialApply", "f", "a callable ffi.Function");
  auto raw = detail::RequiredArg<ffi::Map<ffi::Any, ffi::Any>>(args, 1, "PartialApply", "bound",
                                                               "a map of position -> value");
  auto name = detail::OptionalArg<ffi::String>(args, 2);
  auto names = detail::OptionalArg<ffi::Array<ffi::String>>(args, 3);
  Outputs outputs = args.size() > 4 ? detail::OutputsFromAny(args[4], "PartialApply") : Outputs();
  *rv = MakePartial(f, {detail::FromAnyMap(raw, "PartialApply"), names, std::move(outputs)}, name,
                    detail::OptionalArg<ffi::Array<ffi::String>>(args, 5));
}

}  // namespace

namespace detail {
const PartialParts* GetPartialParts(const ffi::Function& f) {
  if (!f.defined() || f->safe_call != &PartialFunctionObj::SafeCall) return nullptr;
  return &static_cast<const PartialFunctionObj*>(f.get())->parts_;
}
}  // namespace detail

ffi::Function PartialApply(ffi::Function f, Bindings bound, ffi::String name,
                           ffi::Array<ffi::String> param_names) {
  return PartialApply(std::move(f), std::move(bound), std::move(name), std::move(param_names), {});
}

ffi::Function PartialApply(ffi::Function f, Bindings bound, ffi::String name,
                           ffi::Array<ffi::String> param_names, Outputs outputs) {
  return MakePartial(
      std::move(f),
      {detail::FromBindings(bound, "PartialApply"), std::move(param_names), std::move(outputs)},
      std::move(name));
}

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterPackedGlobalOnce<ffi::Function>("runtime.PartialApply", &PartialApplyPacked);
}

}  // namespace tvm_partial
