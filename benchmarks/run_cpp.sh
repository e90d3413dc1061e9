#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# Configure, build and run the C++ per-call benchmark (benchmarks/cpp/bench_closure.cc).
#   benchmarks/run_cpp.sh [calls_per_sample] [repeats]
# BENCH=bench_outputs runs benchmarks/cpp/bench_outputs.cc instead (the cost of returned outputs).
# PYTHON picks the interpreter whose tvm-partial and tvm-ffi are used (default: python3).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$(realpath -s "$(command -v "${PYTHON:-python3}")")"  # absolute: CMake runs it from the build folder
build="${BUILD_DIR:-$root/build/bench-cpp}"

cmake -S "$root/benchmarks/cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE="$(command -v "$python")" \
  -Dtvm_ffi_DIR="$("$python" -m tvm_ffi.config --cmakedir)" \
  -Dtvm_partial_DIR="$("$python" -m tvm_partial.config --cmakedir)" >/dev/null
cmake --build "$build" --parallel
"$build/${BENCH:-bench_closure}" "$@"
