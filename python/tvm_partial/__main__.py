"""``python -m tvm_partial``: the same as the ``tvm-partial`` command."""

import sys

from .cli import main

sys.exit(main())
