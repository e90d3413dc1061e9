// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file partial_apply.cc
 * \brief The partial closure and `runtime.PartialApply` (introspection globals: bind_module.cc).
 */
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/memory.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "bind/aligned_tensor.h"
#include "bind/bindings.h"
#include "bind/merge.h"
#include "bind/outputs.h"
#include "out_of_memory.h"
#include "registry.h"

namespace tvm_partial {
namespace detail {
namespace {

const DLTensor* AsDLTensor(const TVMFFIAny& a) {
  if (a.type_index == kTVMFFITensor) return TVMFFITensorGetDLTensorPtr(a.v_obj);
  if (a.type_index == kTVMFFIDLTensorPtr) return static_cast<const DLTensor*>(a.v_ptr);
  return nullptr;
}

// The closure: everything a call needs (members below) is computed at bind time.
class PartialFunctionObj final : public ffi::FunctionObj {
 public:
  explicit PartialFunctionObj(PartialParts parts) : parts_(std::move(parts)) {
    const Level& level = parts_.level;
    this->safe_call = SafeCall;
    this->cpp_call = reinterpret_cast<void*>(CppCall);
    target_obj_ = static_cast<const ffi::FunctionObj*>(parts_.target.get());
    // Outputs take slots among the bound values (never at a bound position), filled per call.
    positions_ = TakenPositions(level.bound, level.outputs);
    auto held = level.bound.begin();
    for (int64_t position : positions_) {
      const bool bound_here = held != level.bound.end() && held->first == position;
      views_.push_back(bound_here ? *reinterpret_cast<const TVMFFIAny*>(&(held++)->second)
                                  : TVMFFIAny{});
    }
    for (const TVMFFIAny& view : views_) {  // None and scalars are no tensor (nor null ones)
      if (const DLTensor* t = AsDLTensor(view)) {
        default_device_ = t->device;
        break;
      }
    }
    // Taken positions below p: an output's slot; a free position p is caller argument p - below(p).
    auto below = [this](int64_t p) {
      return std::lower_bound(positions_.begin(), positions_.end(), p) - positions_.begin();
    };
    for (const Output& o : level.outputs) {
      Spec spec{o.position, static_cast<int32_t>(below(o.position)), o.dtype, {}, {}};
      for (const OutputDim& dim : o.shape) {  // a static extent is >= 0 (CheckOutputs)
        spec.dims.push_back(dim.arg < 0 ? Dim{dim.value, -1, 0}
                                        : Dim{-1, static_cast<int32_t>(dim.arg - below(dim.arg)),
                                              static_cast<int32_t>(dim.value)});
      }
      // All static: checked once; every call reuses the shape.
      if (std::all_of(spec.dims.begin(), spec.dims.end(),
                      [](const Dim& d) { return d.extent >= 0; })) {
        spec.shape = ResolveShape(spec, nullptr, 0);
      }
      specs_.push_back(std::move(spec));
    }
    num_bound_ = static_cast<int32_t>(positions_.size());  // bound values and outputs
    last_position_ = positions_.empty() ? -1 : positions_.back();
    const int64_t num_names = static_cast<int64_t>(level.param_names.size());
    expected_args_ = num_names == 0 ? -1 : num_names - num_bound_;
    // Valid counts: [min_args_, min_args_ + arg_span_]; exact with names (bound positions checked
    // against them); else reach the last bound position, <= kMaxCallArgs. Ends in [0, INT32_MAX].
    const int64_t least = expected_args_ >= 0
                              ? expected_args_
                              : std::max<int64_t>(last_position_ + 1 - num_bound_, 0);
    const int64_t most = expected_args_ >= 0 ? expected_args_ : kMaxCallArgs - num_bound_;
    TVM_FFI_ICHECK(0 <= least && least <= most && most <= kMaxCallArgs);
    min_args_ = static_cast<uint32_t>(least);
    arg_span_ = static_cast<uint32_t>(most - least);
    // The gather plan, for calls of <= kGatherSlots arguments: every bound position is below it.
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
    if (!self->specs_.empty()) return self->CallWithOutputs(caller, num_args, total, result);
    self->Call(caller, self->views_.data(), total, result);
  }

  // Calls of up to this many arguments (bound included) take the unrolled gather.
  static constexpr int64_t kGatherSlots = 16;
  // Calls of up to this many arguments (bound included) use no heap.
  static constexpr int64_t kInlineArgs = 32;

  PartialParts parts_;

 private:
  struct Dim {
    int64_t extent;  // static extent, or -1 when read from the call
    int32_t arg;     // caller argument index (when extent == -1)
    int32_t axis;
  };
  struct Spec {
    int64_t position;  // in the wrapped function (for messages)
    int32_t slot;      // in views_
    DLDataType dtype;
    std::vector<Dim> dims;
    ffi::Optional<ffi::Shape> shape;  // set when every dimension is static: reused by each call
  };

  // Returns one output or an Array of several; MemoryError if allocating fails; target errors pass.
  TVM_FFI_NO_INLINE void CallWithOutputs(const TVMFFIAny* caller, int32_t num_args, int64_t total,
                                         ffi::Any* result) const {
    constexpr size_t kInlineOutputs = 4;
    ffi::Any inline_outs[kInlineOutputs];
    std::unique_ptr<ffi::Any[]> heap_outs;
    ffi::Any* outs = inline_outs;
    TVMFFIAny inline_views[kInlineArgs];
    std::unique_ptr<TVMFFIAny[]> heap_views;
    TVMFFIAny* views = inline_views;
    OutOfMemoryAsMemoryError(
        [&] {
          if (specs_.size() > kInlineOutputs) {
            heap_outs.reset(new ffi::Any[specs_.size()]);
            outs = heap_outs.get();
          }
          Allocate(caller, num_args, outs);
          if (num_bound_ > kInlineArgs) {
            heap_views.reset(new TVMFFIAny[num_bound_]);
            views = heap_views.get();
          }
        },
        [this] { return DisplayName() + "()"; });
    std::memcpy(views, views_.data(), num_bound_ * sizeof(TVMFFIAny));
    for (size_t k = 0; k < specs_.size(); ++k) {
      views[specs_[k].slot] = *reinterpret_cast<const TVMFFIAny*>(&outs[k]);
    }
    Call(caller, views, total, result);
    if (specs_.size() == 1) {
      *result = std::move(outs[0]);
      return;
    }
    OutOfMemoryAsMemoryError(
        [&] {
          ffi::Array<ffi::Any> all;
          all.reserve(specs_.size());
          for (size_t k = 0; k < specs_.size(); ++k) all.push_back(std::move(outs[k]));
          *result = std::move(all);
        },
        [this] { return DisplayName() + "()"; });
  }

  // Allocate a call's outputs into out[0..), in order; MemoryError when memory runs out.
  void Allocate(const TVMFFIAny* caller, int32_t num_args, ffi::Any* out) const {
    DLDevice device = default_device_;
    for (int32_t i = 0; i < num_args; ++i) {
      if (const DLTensor* t = AsDLTensor(caller[i])) {
        device = t->device;
        break;
      }
    }
    for (size_t k = 0; k < specs_.size(); ++k) {
      const Spec& spec = specs_[k];
      ffi::Shape shape =
          spec.shape.has_value() ? *spec.shape : ResolveShape(spec, caller, num_args);
      std::string why;
      try {
        out[k] = AlignedEmpty(std::move(shape), spec.dtype, device);
        continue;
      } catch (const ffi::Error& err) {
        if (!IsOutOfMemory(err)) {
          // Not memory (a dead RPC server, a vanished device): pass on its kind and words.
          throw ffi::Error(err.kind(),
                           DisplayName() + "(): allocating output " + Label(spec.position) + ": " +
                               err.message(),
                           err.backtrace());
        }
        why = err.message();
      } catch (const std::bad_alloc& err) {
        why = err.what();
      } catch (const std::length_error& err) {
        why = err.what();
      }
      TVM_FFI_THROW(MemoryError) << DisplayName() << "(): cannot allocate output "
                                 << Label(spec.position) << ": " << why;
    }
  }

  // Call the target with `total` arguments: the caller's, and `views` at the bound positions.
  TVM_FFI_INLINE void Call(const TVMFFIAny* caller, const TVMFFIAny* views, int64_t total,
                           ffi::Any* result) const {
    if (total > kGatherSlots) return CallSpread(caller, views, total, result);
    // Short calls: an unrolled gather, no library calls or trip counts to predict (benchmarks/cpp).
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
      OutOfMemoryAsMemoryError([&] { heap_slots.reset(new TVMFFIAny[total]); },
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

  ffi::Shape ResolveShape(const Spec& spec, const TVMFFIAny* caller, int32_t num_args) const {
    // Sizes in 64 bits: the element count and the byte size (not the bits) must fit in int64.
    int64_t numel = 1;
    int64_t extents[kMaxOutputNdim];  // no heap on the call path
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const Dim& dim = spec.dims[d];
      int64_t extent = dim.extent;
      if (extent < 0) {
        const DLTensor* t = dim.arg < num_args ? AsDLTensor(caller[dim.arg]) : nullptr;
        if (t == nullptr || dim.axis >= t->ndim || t->shape[dim.axis] < 0) {
          ThrowSource(spec, d, t, num_args);
        }
        extent = t->shape[dim.axis];
      }
      if (__builtin_mul_overflow(numel, extent, &numel)) {
        ThrowDim(spec, d, "makes the element count overflow 64 bits");
      }
      extents[d] = extent;
    }
    uint64_t bytes;
    if (!TensorBytes(static_cast<uint64_t>(numel), spec.dtype, &bytes)) {
      TVM_FFI_THROW(ValueError) << DisplayName() << "(): output " << Label(spec.position) << " of "
                                << numel << " elements of " << ffi::DLDataTypeToString(spec.dtype)
                                << " takes 2^63 bytes or more, more than a tensor can hold";
    }
    return ffi::Shape(extents, extents + spec.dims.size());
  }

  [[noreturn]] TVM_FFI_NO_INLINE void ThrowDim(const Spec& spec, size_t d,
                                               const std::string& what) const {
    TVM_FFI_THROW(ValueError) << DisplayName() << "(): output " << Label(spec.position)
                              << " dimension " << d << " " << what;
    TVM_FFI_UNREACHABLE();
  }

  [[noreturn]] TVM_FFI_NO_INLINE void ThrowSource(const Spec& spec, size_t d, const DLTensor* t,
                                                  int32_t num_args) const {
    const Dim& dim = spec.dims[d];
    const std::string source = "(axis " + std::to_string(dim.axis) + " of argument " +
                               Label(ToWrapped(positions_, dim.arg)) + ")";
    if (dim.arg >= num_args) {
      ThrowDim(spec, d,
               source + " has no argument to read: " + std::to_string(num_args) + " given");
    }
    if (t == nullptr) {
      TVM_FFI_THROW(TypeError) << DisplayName() << "(): output " << Label(spec.position)
                               << " dimension " << d << " " << source
                               << ": the argument is not a tensor";
    }
    if (dim.axis >= t->ndim) {
      ThrowDim(spec, d, source + ": the argument has ndim " + std::to_string(t->ndim));
    }
    ThrowDim(spec, d, source + " is negative (" + std::to_string(t->shape[dim.axis]) + ")");
  }

  [[noreturn]] TVM_FFI_NO_INLINE void ThrowBadCount(int32_t num_args) const {
    if (expected_args_ >= 0) {
      const ffi::Array<ffi::String>& names = parts_.level.param_names;
      std::ostringstream free;  // the parameters not bound (every position taken is below names)
      bool first = true;
      for (int64_t p = 0; p < static_cast<int64_t>(names.size()); ++p) {
        if (std::binary_search(positions_.begin(), positions_.end(), p)) continue;
        free << (first ? "" : ", ") << names[p];
        first = false;
      }
      TVM_FFI_THROW(TypeError) << DisplayName() << "() takes " << expected_args_ << " argument"
                               << (expected_args_ == 1 ? "" : "s") << " (" << free.str() << "), "
                               << num_args << " given";
    }
    const int64_t total = static_cast<int64_t>(num_args) + num_bound_;
    if (total > kMaxCallArgs) {
      TVM_FFI_THROW(ValueError) << DisplayName() << ": " << num_args << " arguments given + "
                                << num_bound_ << " bound = " << total << " arguments, more than "
                                << "one call can pass (" << kMaxCallArgs << ")";
    }
    TVM_FFI_THROW(IndexError) << DisplayName() << ": bound index " << last_position_
                              << " is past the end of the call (" << num_args << " given + "
                              << num_bound_ << " bound = " << total << " arguments)";
    TVM_FFI_UNREACHABLE();
  }

  std::string DisplayName() const {
    return parts_.name.empty() ? std::string("PartialApply") : std::string(parts_.name);
  }

  std::string Label(int64_t position) const {
    return ParamLabel(position, parts_.level.param_names);
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
  std::vector<Spec> specs_;       // the outputs, in the order the call returns them
  DLDevice default_device_{kDLCPU, 0};  // of the first bound tensor, else the CPU
};

// `original_names`: the full parameters of what partial `f` wraps, when `f` recorded none (Merge).
ffi::Function MakePartial(ffi::Function f, Level level, ffi::String name,
                          const ffi::Array<ffi::String>& original_names = {}) {
  if (!f.defined()) TVM_FFI_THROW(TypeError) << "PartialApply: the function to wrap is None";
  const std::string who = name.empty() ? "PartialApply" : std::string(name);
  if (const PartialParts* inner = GetPartialParts(f)) {
    // Flatten: one closure around the original function, one hop per call.
    level = Merge(inner->level, std::move(level), original_names, who);
    if (name.empty()) name = inner->name;
    f = inner->target;  // copy-and-swap: safe though `inner` lives in the object `f` held
  } else {
    level = CheckLevel(std::move(level), who);
  }
  ffi::ObjectPtr<ffi::FunctionObj> closure = ffi::make_object<PartialFunctionObj>(
      PartialParts{std::move(f), std::move(name), std::move(level)});
  return ffi::Function(std::move(closure));
}

// runtime.PartialApply from Python: keys arrive untyped; outputs as OutputsFromAny reads them.
void PartialApplyPacked(ffi::PackedArgs args, ffi::Any* rv) {
  CheckArgCount(args, 2, 6,
                "runtime.PartialApply(f, bound, name='', param_names=[], outputs=[], "
                "original_names=[])");
  auto f = RequiredArg<ffi::Function>(args, 0, "PartialApply", "f", "a callable ffi.Function");
  auto raw = RequiredArg<ffi::Map<ffi::Any, ffi::Any>>(args, 1, "PartialApply", "bound",
                                                       "a map of position -> value");
  auto name = OptionalArg<ffi::String>(args, 2);
  auto names = OptionalArg<ffi::Array<ffi::String>>(args, 3);
  Outputs outputs = args.size() > 4 ? OutputsFromAny(args[4], "PartialApply") : Outputs();
  *rv = MakePartial(f, {FromAnyMap(raw, "PartialApply"), names, std::move(outputs)}, name,
                    OptionalArg<ffi::Array<ffi::String>>(args, 5));
}

}  // namespace

const PartialParts* GetPartialParts(const ffi::Function& f) {
  if (!f.defined() || f->safe_call != &PartialFunctionObj::SafeCall) return nullptr;
  return &static_cast<const PartialFunctionObj*>(f.get())->parts_;
}

TVM_FFI_STATIC_INIT_BLOCK() {
  RegisterPackedGlobalOnce<ffi::Function>("runtime.PartialApply", &PartialApplyPacked);
}

}  // namespace detail

ffi::Function PartialApply(ffi::Function f, Bindings bound, ffi::String name,
                           ffi::Array<ffi::String> param_names) {
  return PartialApply(std::move(f), std::move(bound), std::move(name), std::move(param_names), {});
}

ffi::Function PartialApply(ffi::Function f, Bindings bound, ffi::String name,
                           ffi::Array<ffi::String> param_names, Outputs outputs) {
  return detail::MakePartial(
      std::move(f),
      {detail::FromBindings(bound, "PartialApply"), std::move(param_names), std::move(outputs)},
      std::move(name));
}

}  // namespace tvm_partial
