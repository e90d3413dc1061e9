#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# Configure, build and run the C++ per-call benchmark (benchmarks/cpp/bench_call.cc):
#   benchmarks/run_cpp.sh [--json PATH] [calls_per_sample] [repeats]
# PYTHON picks the interpreter whose tvm-partial and tvm-ffi are used (default: python3); the build
# goes to BUILD_DIR (default: build/bench-cpp). --json PATH also writes the output with the machine
# and date as JSON, for scripts/render_benchmarks.py.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$(realpath -s "$(command -v "${PYTHON:-python3}")")"  # absolute: CMake runs it from the build folder
build="${BUILD_DIR:-$root/build/bench-cpp}"
json=""
if [[ "${1:-}" == "--json" ]]; then
  json="$2"
  shift 2
fi
cmake -S "$root/benchmarks/cpp" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python" \
  -Dtvm_ffi_DIR="$("$python" -m tvm_ffi.config --cmakedir)" \
  -Dtvm_partial_DIR="$("$python" -m tvm_partial.config --cmakedir)" >/dev/null
cmake --build "$build" --parallel
if [[ -z "$json" ]]; then
  "$build/bench_call" "$@"
else
  "$python" "$root/benchmarks/_common.py" "$json" bench_call "benchmarks/run_cpp.sh --json $json${*:+ $*}" -- "$build/bench_call" "$@"
fi
