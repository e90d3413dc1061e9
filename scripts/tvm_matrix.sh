#!/usr/bin/env bash
# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
# The test suite against one release of Apache TVM, in a virtual environment of its own:
#   scripts/tvm_matrix.sh VERSION [pytest args...]      e.g. scripts/tvm_matrix.sh 0.26.0
# Installs tvm-partial with its test and torch extras and apache-tvm==VERSION (pip picks the newest
# apache-tvm-ffi both accept), then runs the default selection (or the pytest args given).
#
# With TVM_PARTIAL_WHEEL set (.ci/run sets it), the wheel is what is installed, as a user would,
# into an environment outside the checkout: its command runs there, and the suite runs from a copy
# of the checkout without the package's source, so nothing can import the source by accident. The
# checks of the source itself (lint, types, the wheel build, the fuzzers' build) are left to the
# run from the checkout, so the test extra is installed without the linters and transformers.
# Without it, the checkout is built into the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/tvm_matrix.sh VERSION [pytest args...]" >&2
  exit 2
fi
VERSION=$1
shift
if [ -n "${TVM_PARTIAL_WHEEL:-}" ]; then
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
  VENV="$WORK/venv"
  SUITE="$WORK/src"
  # The test extra without the linters and transformers: the tests run here never import them.
  mapfile -t DEPS < <(python3 scripts/test_deps.py ruff clang-format mypy transformers)
  INSTALL=("$TVM_PARTIAL_WHEEL[torch]" "${DEPS[@]}")
else
  VENV="build/tvm-$VERSION/venv"
  SUITE="$PWD"
  # A build folder of its own: the extension is compiled against this environment's tvm-ffi.
  INSTALL=(".[test,torch]" -C "build-dir=build/tvm-$VERSION/build")
  rm -rf "$VENV"
fi
python3 -m venv "$VENV"
VENV="$(cd "$VENV" && pwd)"
"$VENV/bin/pip" install -q "${INSTALL[@]}" "apache-tvm==$VERSION"
"$VENV/bin/python" - "$VERSION" <<'PY'
import sys
from importlib import metadata

wanted, got = sys.argv[1], metadata.version("apache-tvm")
print(f"apache-tvm {got}, apache-tvm-ffi {metadata.version('apache-tvm-ffi')}")
if got != wanted:
    sys.exit(f"tvm_matrix.sh: asked for apache-tvm {wanted}, the environment has {got}")
PY
if [ -n "${TVM_PARTIAL_WHEEL:-}" ]; then
  (cd "$WORK" && venv/bin/tvm-partial --version && venv/bin/tvm-partial demo)
  mkdir "$SUITE" && git ls-files -z | grep -zv '^python/' | xargs -0 cp --parents -t "$SUITE"
  set -- --ignore=tests/test_hygiene.py --ignore=tests/test_typing.py --ignore=tests/test_packaging.py "$@"
fi
cd "$SUITE" && "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
