#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# Fuzz with libFuzzer (+ AddressSanitizer, UndefinedBehaviorSanitizer) one of two targets:
#   loader   the partial_apply loader and Describe of bytes (fuzz/fuzz_loader.cc)
#   weights  the safetensors weights-file reader and what trusts it (fuzz/fuzz_weights.cc)
#   scripts/fuzz.sh [SECONDS] [PYTHON] [TARGET]   default: 60 seconds, python3 with tvm-partial
#                                                 installed, loader
# Needs clang and libclang-rt-dev (Debian: apt-get install clang libclang-rt-14-dev).
# Crashing inputs land in build/fuzz/crashes/ (loader) or build/fuzz/weights/crashes/ (weights);
# copy each into tests/fuzz_regressions/ (loader) or tests/fuzz_regressions/weights/ once fixed:
# the test run replays them, and they seed every later run.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-60}"
PYTHON="${2:-python3}"
TARGET="${3:-loader}"
case "$TARGET" in
  loader) OUT=build/fuzz ;;
  weights) OUT=build/fuzz/weights ;;
  *) echo "scripts/fuzz.sh: TARGET is loader or weights, not $TARGET" >&2; exit 2 ;;
esac
mkdir -p "$OUT/corpus" "$OUT/crashes" "$OUT/seeds"
# The library's objects, built once for both targets (in parallel, and again only where a source
# changed) by the project's own CMake with clang and the fuzzers' instrumentation; each target then
# links them with its entry point and the installed copy's registration rule (cpp/copy_installed.cc).
# -gline-tables-only: a crash's stack still names functions, files and lines, and the build takes
# 2.7 minutes here instead of 3.4 with full debug information.
FLAGS="-gline-tables-only -O1 -DTVM_PARTIAL_FUZZING -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B build/fuzz/objects -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_COMPILER=clang++ \
  "-DCMAKE_CXX_FLAGS=$FLAGS" -DSKBUILD_PROJECT_NAME=tvm_partial -DSKBUILD_PROJECT_VERSION=0.0.0 \
  "-Dtvm_ffi_DIR=$("$PYTHON" -m tvm_ffi.config --cmakedir)" -DPython_EXECUTABLE="$(command -v "$PYTHON")" >/dev/null
cmake --build build/fuzz/objects --target tvm_partial_objects --parallel "$(nproc)" >/dev/null
# Only the objects of sources that exist: one of a file since renamed would define its symbols twice.
DIR=build/fuzz/objects/cpp/CMakeFiles/tvm_partial_objects.dir
mapfile -t OBJECTS < <(find "$DIR" -name '*.o' | sort | while read -r o; do
  source="cpp/${o#"$DIR"/}"
  [ -f "${source%.o}" ] && echo "$o"
done)
FFI_INCLUDE="$("$PYTHON" -m tvm_ffi.config --includedir)"
FFI_DLPACK="$("$PYTHON" -m tvm_ffi.config --dlpack-includedir)"
FFI_LIB="$("$PYTHON" -m tvm_ffi.config --libfiles)"
clang++ -std=c++17 $FLAGS -fsanitize=fuzzer -Icpp/include -Icpp -I"$FFI_INCLUDE" -I"$FFI_DLPACK" \
  "${OBJECTS[@]}" cpp/copy_installed.cc "fuzz/fuzz_$TARGET.cc" "$FFI_LIB" -Wl,-rpath,"$(dirname "$FFI_LIB")" \
  -o "$OUT/fuzz_$TARGET"
if [ "$TARGET" = loader ]; then
  "$PYTHON" fuzz/make_seeds.py "$OUT/seeds"
  # A whole-blob dictionary helps the mutator build valid headers and kinds.
  printf 'magic="TVMPARTL"\nf32="\\x07\\x00\\x00\\x00float32"\ni8="\\x04\\x00\\x00\\x00int8"\n' > "$OUT/dict"
  # (libFuzzer reads corpus folders recursively: the weights regressions are seeds here too.)
  ASAN_OPTIONS=detect_leaks=1 "$OUT/fuzz_loader" "$OUT/corpus" "$OUT/seeds" tests/fuzz_regressions \
    -dict="$OUT/dict" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=8192 \
    -artifact_prefix="$OUT/crashes/" -print_final_stats=1
else
  # The seeds and the fixed artifact they are decoded against (tests/helpers.py).
  "$PYTHON" fuzz/make_weights_seeds.py "$OUT/seeds" "$OUT/artifact.bin"
  TVM_PARTIAL_FUZZ_ARTIFACT="$OUT/artifact.bin" ASAN_OPTIONS=detect_leaks=1 \
    "$OUT/fuzz_weights" "$OUT/corpus" "$OUT/seeds" tests/fuzz_regressions/weights \
    -dict=fuzz/weights.dict -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 \
    -max_len=16384 -artifact_prefix="$OUT/crashes/" -print_final_stats=1
fi
