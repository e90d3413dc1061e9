#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
#
# The GPU acceptance run, one command for a lent GPU machine, from the repository root:
#
#   scripts/gpu_acceptance.sh OUT        # OUT: where the logs and the JSON go ($OUT on the device)
#
# 1. install: builds and installs this checkout into the Python found (PYTHON=..., default
#    python3), offline: it needs apache-tvm (the CUDA-enabled wheel), apache-tvm-ffi, numpy,
#    safetensors, pytest, pytest-xdist, scikit-build-core, cmake and a C++ compiler already there;
#    torch with CUDA is optional (the tests and benchmark rows that need it say they were skipped);
# 2. tests: the suite's device tests on cuda:0 (pytest --device cuda -m device): every feature on
#    the device, bitwise against numpy or the CPU, the chunked copy, the C++ example on CUDA;
# 3. bench: benchmarks/bench_gpu_load.py at 1 GiB with the copy's variants (235 s on an H200
#    machine; 8 GiB takes several times that, more than a lease leaves: run it alone).
#
# Expected: about 6 minutes (on an H200 machine: install 23 s, tests under a minute with 4
# workers, bench 235 s). Each step has a time limit (90 + 210 + 270 s: under 10 minutes in all,
# whatever happens); a step that fails or runs out of time does not stop the next one.
# Exit status 0 when every step passed.
set -u
OUT=${1:?usage: scripts/gpu_acceptance.sh OUT}
PY=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$OUT"
failed=0

step() {  # step NAME LIMIT_S COMMAND...: runs it with its output in OUT/NAME.log
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  echo "== $name (at most ${limit} s): $*"
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  tail -n 40 "$OUT/$name.log"
  echo "== $name: exit status $rc after $((SECONDS - t0)) s$([ $rc -eq 124 ] && echo ' (time limit)')"
  [ $rc -eq 0 ] || failed=1
  return $rc
}

{ nvidia-smi -L && nvidia-smi --query-gpu=name,memory.total,pcie.link.gen.current,pcie.link.width.current \
    --format=csv; } >"$OUT/machine.txt" 2>&1
nproc >>"$OUT/machine.txt"
cat "$OUT/machine.txt"
"$PY" -c "import tvm, tvm_ffi, numpy, safetensors, pytest, xdist; print('tvm', tvm.__version__, 'cuda:0', tvm.cuda(0).exist)" ||
  { echo "the Python at $PY lacks what the run needs (see the top of this script)"; exit 2; }
# Without cuda:0 nothing here can pass: say why TVM has no CUDA (its CUDA runtime, a library of
# its own, needs libcudart and the driver's libcuda) and stop before spending the device's time.
"$PY" - <<'PY' || exit 2
import ctypes, pathlib, sys, tvm, tvm.libinfo
if not tvm.cuda(0).exist:
    lib = pathlib.Path(tvm.libinfo.find_libtvm_runtime()).with_name("libtvm_runtime_cuda.so")
    try:
        ctypes.CDLL(str(lib))
        why = "its CUDA runtime loads, yet it sees no device (nvidia-smi above?)"
    except OSError as err:
        why = f"loading {lib} fails: {err}"
    sys.exit(f"TVM sees no cuda:0: {why}")
PY

step install 90 "$PY" -m pip install -q --no-deps --no-build-isolation -e .
"$PY" -c "import tvm_partial; print('tvm_partial from', tvm_partial.__file__)" ||
  { echo "tvm_partial from this checkout is not importable: nothing to check"; exit 2; }
# -v: a line per test in tests.log, which a crashed worker does not cut short as it does the
# junit file; -p no:benchmark: a pytest-benchmark plugin there refuses xdist, fatal under -W error
step tests 210 "$PY" -m pytest -v -rs -n 4 -p no:cacheprovider -p no:benchmark --device cuda -m device \
  --junitxml "$OUT/device_tests.xml"
step bench 270 "$PY" benchmarks/bench_gpu_load.py --device cuda --sizes 1GiB --json "$OUT/bench_gpu_load.json"
echo "results in $OUT: device_tests.xml, bench_gpu_load.json, one log per step"
exit $failed
