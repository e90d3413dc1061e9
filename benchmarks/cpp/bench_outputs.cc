// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bench_outputs.cc
 * \brief What allocating the output costs a partial that returns it, with no Python in the loop.
 *
 * A no-op function of 4 arguments, f(x, w, b, out), is called through a partial binding w and b
 * with `out` preallocated, and through a partial binding w and b that allocates `out` on each
 * call and returns it (tvm_partial::Outputs), for a few output sizes. Samples alternate; the
 * table shows medians and the added cost of the allocation.
 *
 *   bench_outputs [calls_per_sample=2000000] [repeats=11]
 */
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_common.h"

namespace ffi = ::tvm::ffi;

namespace {

using bench::Median;
using bench::NoopSafeCall;
using bench::Sample;

}  // namespace

int main(int argc, char** argv) {
  const int64_t calls = argc > 1 ? std::atoll(argv[1]) : 2000000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 11;
  const DLDevice cpu{kDLCPU, 0};
  const DLDataType f32{kDLFloat, 32, 1};
  ffi::Function noop = ffi::Function::FromExternC(nullptr, NoopSafeCall, nullptr);
  ffi::Tensor x = tvm_partial::AlignedEmpty(ffi::Shape({1}), f32, cpu);
  ffi::Tensor w = tvm_partial::AlignedEmpty(ffi::Shape({1}), f32, cpu);
  ffi::Tensor b = tvm_partial::AlignedEmpty(ffi::Shape({1}), f32, cpu);
  const ffi::Array<ffi::String> names{"x", "w", "b", "out"};
  ffi::Function g = tvm_partial::PartialApply(noop, {{1, w}, {2, b}}, "main", names);

  struct Case {
    const char* label;
    std::vector<tvm_partial::OutputDim> dims;
  };
  using tvm_partial::OutputDim;
  const std::vector<Case> cases = {
      {"static (1,)", {OutputDim::Static(1)}},
      {"static (1, 8, 30, 30), 28.8 KB",
       {OutputDim::Static(1), OutputDim::Static(8), OutputDim::Static(30), OutputDim::Static(30)}},
      {"(n,) with n read from x", {OutputDim::Of(0, 0)}},
  };
  std::printf("no-op f(x, w, b, out); partial binds w, b; median of %d repeats x %lld calls\n\n",
              repeats, static_cast<long long>(calls));
  std::printf("%-34s %16s %16s %12s\n", "output", "g(x, out) ns", "out = g(x) ns", "added ns");
  ffi::Any rv;
  for (const Case& c : cases) {
    std::vector<int64_t> extents;
    for (const OutputDim& d : c.dims) extents.push_back(d.arg < 0 ? d.value : 1);
    ffi::Tensor out = tvm_partial::AlignedEmpty(ffi::Shape(extents), f32, cpu);
    ffi::Function returning =
        tvm_partial::PartialApply(noop, {{1, w}, {2, b}}, "main", names, {{3, f32, c.dims}});
    ffi::AnyView two[2] = {x, out};
    ffi::AnyView one[1] = {x};
    auto pre = [&](int64_t n) { return Sample(n, [&] { g.CallPacked(two, 2, &rv); }); };
    auto ret = [&](int64_t n) { return Sample(n, [&] { returning.CallPacked(one, 1, &rv); }); };
    pre(calls / 10);
    ret(calls / 10);
    std::vector<double> a, r;
    for (int rep = 0; rep < repeats; ++rep) {
      if (rep % 2) {
        a.push_back(pre(calls));
        r.push_back(ret(calls));
      } else {
        r.push_back(ret(calls));
        a.push_back(pre(calls));
      }
    }
    const double pa = Median(a), pr = Median(r);
    std::printf("%-34s %16.1f %16.1f %12.1f\n", c.label, pa, pr, pr - pa);
  }
  return 0;
}
