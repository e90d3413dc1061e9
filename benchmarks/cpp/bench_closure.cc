// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bench_closure.cc
 * \brief Per-call cost of tvm_partial::PartialApply with no Python in the loop.
 *
 * A no-op function of 4 arguments is called directly and through a partial that binds 2 of them
 * (positions 1 and 2, as in f(x, w, b, out)). Direct and partial samples alternate, so frequency
 * drift affects both alike; the table shows medians over the repeats and the extra time per call.
 *
 *   bench_closure [calls_per_sample=20000000] [repeats=11]
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

#include "bench_common.h"

namespace ffi = ::tvm::ffi;

namespace {

using bench::Median;
using bench::NoopSafeCall;
using bench::Sample;

struct Row {
  std::string label;
  bool target;                            // counts for the <= 3 ns target (the C++ call path)
  std::function<double(int64_t)> direct;  // runs a sample, returns ns/call
  std::function<double(int64_t)> partial;
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t calls = argc > 1 ? std::atoll(argv[1]) : 20000000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 11;

  const DLDevice cpu{kDLCPU, 0};
  const DLDataType f32{kDLFloat, 32, 1};
  ffi::Tensor x = tvm_partial::AlignedEmpty(ffi::Shape({1}), f32, cpu);
  ffi::Tensor w = tvm_partial::AlignedEmpty(ffi::Shape({1}), f32, cpu);
  ffi::Tensor b = tvm_partial::AlignedEmpty(ffi::Shape({1}), f32, cpu);
  ffi::Tensor out = tvm_partial::AlignedEmpty(ffi::Shape({1}), f32, cpu);

  // Two no-op callees: a C function (cpp_call is null: CallPacked goes through safe_call) and a
  // C++ lambda (cpp_call set: CallPacked calls it directly).
  ffi::Function extern_c = ffi::Function::FromExternC(nullptr, NoopSafeCall, nullptr);
  ffi::Function packed = ffi::Function::FromPacked([](ffi::PackedArgs, ffi::Any*) {});

  const tvm_partial::Bindings wb{{1, w}, {2, b}};
  ffi::Function g_c = tvm_partial::PartialApply(extern_c, wb);
  ffi::Function g_p = tvm_partial::PartialApply(packed, wb);
  // With recorded names the call also checks its argument count.
  ffi::Function g_named = tvm_partial::PartialApply(extern_c, wb, "main",
                                                    ffi::Array<ffi::String>{"x", "w", "b", "out"});
  // Bound one at a time: flattened into one closure, so it should cost what g_c costs.
  ffi::Function g_nested =
      tvm_partial::PartialApply(tvm_partial::PartialApply(extern_c, tvm_partial::Bindings{{1, w}}),
                                tvm_partial::Bindings{{1, b}});

  ffi::AnyView args4[4] = {x, w, b, out};
  ffi::AnyView args2[2] = {x, out};
  ffi::Any rv;

  auto packed_call = [&](const ffi::Function& f, const ffi::AnyView* args, int n) {
    return [&f, args, n, &rv](int64_t calls) {
      return Sample(calls, [&] { f.CallPacked(args, n, &rv); });
    };
  };
  // The C ABI entry point, as other languages (and tvm-ffi's Python binding) call a function.
  auto c_abi_call = [&](const ffi::Function& f, const ffi::AnyView* args, int n) {
    return [&f, args, n, &rv](int64_t calls) {
      TVMFFIObjectHandle h =
          const_cast<ffi::FunctionObj*>(static_cast<const ffi::FunctionObj*>(f.get()));
      TVMFFIAny* a = reinterpret_cast<TVMFFIAny*>(const_cast<ffi::AnyView*>(args));
      TVMFFIAny* r = reinterpret_cast<TVMFFIAny*>(&rv);
      return Sample(calls, [&] {
        if (TVMFFIFunctionCall(h, a, n, r) != 0) std::abort();
      });
    };
  };

  std::vector<Row> rows = {
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
       [&](int64_t n) { return Sample(n, [&] { rv = extern_c(x, w, b, out); }); },
       [&](int64_t n) { return Sample(n, [&] { rv = g_c(x, out); }); }},
  };

  // Warm up, then alternate direct and partial (and the order between repeats).
  for (Row& r : rows) {
    r.direct(calls / 10);
    r.partial(calls / 10);
  }
  std::vector<std::vector<double>> direct(rows.size()), partial(rows.size());
  for (int rep = 0; rep < repeats; ++rep) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rep % 2 == 0) {
        direct[i].push_back(rows[i].direct(calls));
        partial[i].push_back(rows[i].partial(calls));
      } else {
        partial[i].push_back(rows[i].partial(calls));
        direct[i].push_back(rows[i].direct(calls));
      }
    }
  }

  std::printf("no-op function of 4 arguments; partial binds 2 (positions 1, 2)\n");
  std::printf("median of %d repeats x %lld calls\n\n", repeats, static_cast<long long>(calls));
  std::printf("%-34s %12s %12s %12s\n", "callee / call path", "direct ns", "partial ns",
              "extra ns");
  double worst = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double d = Median(direct[i]), p = Median(partial[i]);
    if (rows[i].target) worst = std::max(worst, p - d);
    std::printf("%-34s %12.2f %12.2f %12.2f\n", rows[i].label.c_str(), d, p, p - d);
  }
  std::printf(
      "\ntarget, extra <= 3 ns per call on the C++ call path (CallPacked rows): %s (largest "
      "extra %.2f ns)\n",
      worst <= 3.0 ? "holds" : "does not hold", worst);
  std::printf(
      "C ABI rows: TVMFFIFunctionCall, as Python and C callers reach a function; compiled TVM "
      "kernels\nare C++-lambda callees (FromPacked around the kernel's symbol). f(...) rows "
      "include packing\nthe arguments, so the partial's 2-argument call saves what its copy "
      "costs.\n");
  return 0;
}
