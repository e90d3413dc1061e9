# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Artifacts: export (``export``: one call of C++, around TVM's link), loading
(``load``), reading files without loading them (``files``, ``inspect``)."""
