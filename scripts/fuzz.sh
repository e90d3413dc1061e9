#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# Fuzz the partial_apply loader with libFuzzer (+ AddressSanitizer, UndefinedBehaviorSanitizer).
#   scripts/fuzz.sh [SECONDS] [PYTHON]     default: 60 seconds, python3 with tvm-partial installed
# Needs clang and libclang-rt-dev (Debian: apt-get install clang libclang-rt-14-dev).
# Crashing inputs land in build/fuzz/crashes/; copy each into tests/fuzz_regressions/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-60}"
PYTHON="${2:-python3}"
OUT=build/fuzz
mkdir -p "$OUT/corpus" "$OUT/crashes" "$OUT/seeds"
FFI_INCLUDE="$("$PYTHON" -m tvm_ffi.config --includedir)"
FFI_DLPACK="$("$PYTHON" -m tvm_ffi.config --dlpack-includedir)"
FFI_LIB="$("$PYTHON" -m tvm_ffi.config --libfiles)"
clang++ -std=c++17 -g -O1 -DTVM_PARTIAL_FUZZING -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -Icpp/include -Icpp -I"$FFI_INCLUDE" -I"$FFI_DLPACK" \
  cpp/bind/aligned_tensor.cc cpp/bind/bindings.cc cpp/bind/merge.cc cpp/bind/output_plan.cc \
  cpp/bind/outputs.cc cpp/device.cc cpp/format.cc cpp/format_reader.cc cpp/format_writer.cc \
  cpp/hash.cc cpp/partial_apply.cc cpp/partial_module.cc cpp/payload_region.cc \
  cpp/weights_file.cc \
  fuzz/fuzz_loader.cc "$FFI_LIB" -Wl,-rpath,"$(dirname "$FFI_LIB")" -o "$OUT/fuzz_loader"
"$PYTHON" fuzz/make_seeds.py "$OUT/seeds"
# A whole-blob dictionary helps the mutator build valid headers and kinds.
printf 'magic="TVMPARTL"\nf32="\\x07\\x00\\x00\\x00float32"\ni8="\\x04\\x00\\x00\\x00int8"\n' > "$OUT/dict"
ASAN_OPTIONS=detect_leaks=1 "$OUT/fuzz_loader" "$OUT/corpus" "$OUT/seeds" tests/fuzz_regressions \
  -dict="$OUT/dict" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=8192 \
  -artifact_prefix="$OUT/crashes/" -print_final_stats=1
