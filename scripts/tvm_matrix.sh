#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# The test suite against one release of Apache TVM, in a virtual environment of its own:
#   scripts/tvm_matrix.sh VERSION [pytest args...]      e.g. scripts/tvm_matrix.sh 0.26.0
# The project and its test extra are installed with apache-tvm==VERSION (pip picks the newest
# apache-tvm-ffi both accept). Without pytest args it runs the default selection (no slow tests);
# CI runs it for the oldest release pyproject.toml accepts with -m "slow or not slow" (everything),
# the wheel tests reading the wheel CI built (TVM_PARTIAL_WHEEL).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/tvm_matrix.sh VERSION [pytest args...]" >&2
  exit 2
fi
VERSION=$1
shift
VENV="build/tvm-$VERSION/venv"
rm -rf "$VENV"
python3 -m venv "$VENV"
# Its own build folder: the extension is compiled against the tvm-ffi of this environment.
"$VENV/bin/pip" install -q ".[test]" "apache-tvm==$VERSION" -C "build-dir=build/tvm-$VERSION/build"
"$VENV/bin/python" - "$VERSION" <<'PY'
import sys
from importlib import metadata

wanted, got = sys.argv[1], metadata.version("apache-tvm")
print(f"apache-tvm {got}, apache-tvm-ffi {metadata.version('apache-tvm-ffi')}")
if got != wanted:
    sys.exit(f"tvm_matrix.sh: asked for apache-tvm {wanted}, the environment has {got}")
PY
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
