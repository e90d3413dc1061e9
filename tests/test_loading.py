# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Loading the code more than once never aborts the process (guarded registrations)."""

from __future__ import annotations

import tvm_partial.config
from helpers import run_json


def test_second_copy_of_the_library_loads(tmp_path):
    copy = tmp_path / "libtvm_partial_copy.so"
    copy.write_bytes((tvm_partial.config.libdir() / "libtvm_partial.so").read_bytes())
    result = run_json(
        """
        import ctypes, json, sys
        import numpy as np, tvm, tvm_ffi, tvm_partial
        before = tvm_ffi.get_global_func("runtime.PartialApply")
        ctypes.CDLL(sys.argv[1])                      # its static initialisers run again
        after = tvm_ffi.get_global_func("runtime.PartialApply")
        g = tvm_partial.partial(tvm_ffi.convert(lambda a, b: a + b), {1: 2})
        print(json.dumps({"same": before.same_as(after), "value": g(40)}))
        """,
        str(copy),
    )
    assert result == {"same": True, "value": 42}  # the first registration stays in charge


def test_import_order_tvm_partial_first():
    result = run_json(
        """
        import json, tvm_partial, tvm, tvm_ffi
        print(json.dumps(tvm_ffi.get_global_func("ffi.Module.load_from_bytes.partial_apply") is not None))
        """,
        env={"TVM_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result is True


def test_plain_import_tvm_registers_through_entry_point():
    result = run_json(
        """
        import json, sys, tvm, tvm_ffi
        print(json.dumps([tvm_ffi.get_global_func("runtime.PartialApply", allow_missing=True) is not None,
                          "tvm_partial" in sys.modules]))
        """
    )
    assert result == [True, True]
    off = run_json(
        """
        import json, tvm, tvm_ffi
        print(json.dumps(tvm_ffi.get_global_func("runtime.PartialApply", allow_missing=True) is not None))
        """,
        env={"TVM_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert off is False
