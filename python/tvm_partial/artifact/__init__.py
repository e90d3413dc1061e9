# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Artifacts: export (``export``, ``zero_copy`` with its object writer ``_elf``, ``reexport`` of
loaded artifacts), loading (``load``), reading files without loading them (``read``,
``inspect``)."""
