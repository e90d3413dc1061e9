#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# The default tests that exercise the C++ code, against an AddressSanitizer +
# UndefinedBehaviorSanitizer build of the extension (gcc's runtimes, preloaded into Python and
# every process the tests start).
#   scripts/sanitize.sh [pytest args...]
# Leak detection is off: CPython and LLVM keep memory until exit by design. Left out: the checks of
# the source and of the docs that run no C++ of ours (lint, types, packaging, the README, the API
# reference, the benchmarks' and GPU script's smoke runs, which repeat paths the suite covers), the
# tests that mostly orchestrate other processes and tools (the docs' snippets, the C++ example's
# CMake builds, RPC servers, disco workers, the command line and its demo: the C++ paths they
# reach, loading, shards, remote placement, inspect and verify, run in-process in the tests kept),
# and the slow tests (they run once, in the plain build; the resident-memory test among them could
# not run here: ASan's quarantine holds 256 MiB of freed memory by design).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=build/asan-venv
# vptr checks need RTTI, which TVM's libraries are built without (every module would be reported).
# -O1, as ASan's own docs advise: the build takes 2.5 minutes here instead of 4 at -O3.
FLAGS="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
# The test extra without what the tests run here never import (half the install's time): the
# linters (test_hygiene.py and test_typing.py are left out) and what only torch's tests use
# (torch is not installed here, so they skip).
mapfile -t DEPS < <(python3 scripts/test_deps.py ruff clang-format mypy transformers onnxscript)
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q . "${DEPS[@]}" -C build-dir=build/asan -C "cmake.define.CMAKE_CXX_FLAGS=$FLAGS" \
  -C "cmake.define.CMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -C "cmake.define.CMAKE_SHARED_LINKER_FLAGS=$FLAGS"
PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:print_summary=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
LD_PRELOAD="$PRELOAD" "$VENV/bin/python" -m pytest -q -p no:cacheprovider --durations=20 \
  --ignore=tests/test_hygiene.py --ignore=tests/test_typing.py --ignore=tests/test_packaging.py \
  --ignore=tests/test_readme.py --ignore=tests/test_api_doc.py --ignore=tests/test_benchmarks.py \
  --ignore=tests/test_docs.py --ignore=tests/test_deploy.py \
  --ignore=tests/test_cmake_config.py --ignore=tests/test_rpc.py --ignore=tests/test_disco.py \
  --ignore=tests/test_cli.py "$@"
