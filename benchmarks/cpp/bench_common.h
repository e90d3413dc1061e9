// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file bench_common.h
 * \brief What the C++ benchmarks share: the cheapest callee, a median, and a timed loop.
 */
#ifndef TVM_PARTIAL_BENCH_COMMON_H_
#define TVM_PARTIAL_BENCH_COMMON_H_

#include <tvm/ffi/c_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace bench {

/*! \brief The cheapest callee tvm-ffi has: a C function reached through safe_call. */
extern "C" inline int NoopSafeCall(void*, const TVMFFIAny*, int32_t, TVMFFIAny*) { return 0; }

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/*! \brief ns per call of `body`, run `calls` times. */
template <typename Body>
double Sample(int64_t calls, Body&& body) {
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < calls; ++i) body();
  auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() /
         static_cast<double>(calls);
}

}  // namespace bench

#endif  // TVM_PARTIAL_BENCH_COMMON_H_
