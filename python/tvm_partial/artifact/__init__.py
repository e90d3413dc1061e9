# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Artifacts: export (``export``, ``zero_copy``; C++ updates a copy of a loaded artifact), loading
(``load``), reading files without loading them (``read``, ``inspect``)."""
