# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""``python -m tvm_partial``: the same as the ``tvm-partial`` command."""

import sys

from .cli import main

sys.exit(main())
