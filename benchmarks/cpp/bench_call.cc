// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bench_call.cc
 * \brief Per-call cost of tvm_partial::PartialApply with no Python in the loop: a no-op function
 *        of 4 arguments, f(x, w, b, out), called directly and through partials binding w and b;
 *        then the cost of a partial that allocates and returns `out`. Samples alternate; medians.
 *
 *   bench_call [calls_per_sample=20000000] [repeats=11]
 */
#include <tvm/ffi/c_api.h>
#include <tvm_partial/partial_apply.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace ffi = ::tvm::ffi;

namespace {

/*! \brief The cheapest callee tvm-ffi has: a C function reached through safe_call. */
extern "C" int NoopSafeCall(void*, const TVMFFIAny*, int32_t, TVMFFIAny*) { return 0; }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

/*! \brief ns per call of `body`, run `calls` times. */
template <typename Body>
double Sample(int64_t calls, Body&& body) {
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < calls; ++i) body();
  std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / static_cast<double>(calls);
}

using Loop = std::function<double(int64_t)>;  // runs a sample, returns ns/call

/*! \brief Medians of `a` and `b`, sampled alternately (the order swapped between repeats). */
std::pair<double, double> Alternate(const Loop& a, const Loop& b, int64_t calls, int repeats) {
  a(calls / 10);  // warm up
  b(calls / 10);
  std::vector<double> sa, sb;
  for (int rep = 0; rep < repeats; ++rep) {
    if (rep % 2) sb.push_back(b(calls));
    sa.push_back(a(calls));
    if (rep % 2 == 0) sb.push_back(b(calls));
  }
  return {Median(sa), Median(sb)};
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t calls = argc > 1 ? std::atoll(argv[1]) : 20000000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 11;
  const DLDevice cpu{kDLCPU, 0};
  const DLDataType f32{kDLFloat, 32, 1};
  auto empty = [&](std::vector<int64_t> shape) {
    return tvm_partial::AlignedEmpty(ffi::Shape(shape), f32, cpu);
  };
  ffi::Tensor x = empty({1}), w = empty({1}), b = empty({1}), out = empty({1});
  // A C callee (CallPacked goes through safe_call) and a C++ lambda (CallPacked calls it
  // directly); a function of a compiled TVM library is of the second kind.
  ffi::Function extern_c = ffi::Function::FromExternC(nullptr, NoopSafeCall, nullptr);
  ffi::Function packed = ffi::Function::FromPacked([](ffi::PackedArgs, ffi::Any*) {});
  const tvm_partial::Bindings wb{{1, w}, {2, b}};
  const ffi::Array<ffi::String> names{"x", "w", "b", "out"};
  ffi::Function g_c = tvm_partial::PartialApply(extern_c, wb);
  ffi::Function g_p = tvm_partial::PartialApply(packed, wb);
  ffi::Function g_named = tvm_partial::PartialApply(extern_c, wb, "main", names);  // checks arity
  ffi::Function g_nested =  // bound one at a time: flattened into one closure
      tvm_partial::PartialApply(tvm_partial::PartialApply(extern_c, tvm_partial::Bindings{{1, w}}),
                                tvm_partial::Bindings{{1, b}});
  ffi::AnyView args4[4] = {x, w, b, out}, args2[2] = {x, out};
  ffi::Any rv;
  auto packed_call = [&](const ffi::Function& f, const ffi::AnyView* args, int n) -> Loop {
    return [&f, args, n, &rv](int64_t k) { return Sample(k, [&] { f.CallPacked(args, n, &rv); }); };
  };
  // The C ABI entry point, as other languages (and tvm-ffi's Python binding) call a function.
  auto c_abi_call = [&](const ffi::Function& f, const ffi::AnyView* args, int n) -> Loop {
    return [&f, args, n, &rv](int64_t k) {
      auto* h = const_cast<ffi::FunctionObj*>(static_cast<const ffi::FunctionObj*>(f.get()));
      auto* a = reinterpret_cast<TVMFFIAny*>(const_cast<ffi::AnyView*>(args));
      auto* r = reinterpret_cast<TVMFFIAny*>(&rv);
      return Sample(k, [&] {
        if (TVMFFIFunctionCall(h, a, n, r) != 0) std::abort();
      });
    };
  };
  struct Row {
    const char* label;
    bool target;  // counts for the <= 3 ns target (the C++ call path)
    Loop direct, partial;
  };
  const std::vector<Row> rows = {
      {"extern C callee, CallPacked", true, packed_call(extern_c, args4, 4),
       packed_call(g_c, args2, 2)},
      {"C++ lambda callee, CallPacked", true, packed_call(packed, args4, 4),
       packed_call(g_p, args2, 2)},
      {"extern C callee, with names", true, packed_call(extern_c, args4, 4),
       packed_call(g_named, args2, 2)},
      {"extern C callee, nested (flat)", true, packed_call(extern_c, args4, 4),
       packed_call(g_nested, args2, 2)},
      {"extern C callee, C ABI call", false, c_abi_call(extern_c, args4, 4),
       c_abi_call(g_c, args2, 2)},
      {"C++ lambda callee, C ABI call", false, c_abi_call(packed, args4, 4),
       c_abi_call(g_p, args2, 2)},
      {"extern C callee, f(x, w, b, out)", false,
       [&](int64_t k) { return Sample(k, [&] { rv = extern_c(x, w, b, out); }); },
       [&](int64_t k) { return Sample(k, [&] { rv = g_c(x, out); }); }},
  };
  std::printf("no-op function of 4 arguments; partial binds 2 (positions 1, 2)\n");
  std::printf("median of %d repeats x %lld calls\n\n", repeats, static_cast<long long>(calls));
  std::printf("%-34s %12s %12s %12s\n", "callee / call path", "direct ns", "partial ns",
              "extra ns");
  double worst = 0;
  for (const Row& r : rows) {
    auto [d, p] = Alternate(r.direct, r.partial, calls, repeats);
    if (r.target) worst = std::max(worst, p - d);
    std::printf("%-34s %12.2f %12.2f %12.2f\n", r.label, d, p, p - d);
  }
  std::printf(
      "\ntarget, extra <= 3 ns per call on the C++ call path (CallPacked rows): %s (largest extra "
      "%.2f ns)\n",
      worst <= 3.0 ? "holds" : "does not hold", worst);

  // What allocating the output costs: g(x, out) into a preallocated out, against out = g(x).
  const int64_t fewer = calls / 10;
  std::printf("\nreturned outputs: partial binds w, b; median of %d repeats x %lld calls\n\n",
              repeats, static_cast<long long>(fewer));
  std::printf("%-34s %16s %16s %12s\n", "output", "g(x, out) ns", "out = g(x) ns", "added ns");
  using tvm_partial::OutputDim;
  const std::vector<std::pair<const char*, std::vector<OutputDim>>> cases = {
      {"static (1,)", {OutputDim::Static(1)}},
      {"static (1, 8, 30, 30), 28.8 KB",
       {OutputDim::Static(1), OutputDim::Static(8), OutputDim::Static(30), OutputDim::Static(30)}},
      {"(n,) with n read from x", {OutputDim::Of(0, 0)}},
  };
  for (const auto& [label, dims] : cases) {
    std::vector<int64_t> extents;
    for (const OutputDim& d : dims) extents.push_back(d.arg < 0 ? d.value : 1);
    ffi::Tensor o = empty(extents);
    ffi::Function returning =
        tvm_partial::PartialApply(extern_c, wb, "main", names, {{3, f32, dims}});
    ffi::AnyView two[2] = {x, o}, one[1] = {x};
    auto [pre, ret] =
        Alternate([&](int64_t k) { return Sample(k, [&] { g_named.CallPacked(two, 2, &rv); }); },
                  [&](int64_t k) { return Sample(k, [&] { returning.CallPacked(one, 1, &rv); }); },
                  fewer, repeats);
    std::printf("%-34s %16.1f %16.1f %12.1f\n", label, pre, ret, ret - pre);
  }
  return 0;
}
