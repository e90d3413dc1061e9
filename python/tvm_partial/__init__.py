# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""tvm-partial: partial application for Apache TVM runtime functions and modules.

Bind weights and biases of a compiled kernel once; call it with the data alone, with no Python
between the caller and the kernel; export the module with its constants inside one library.
"""

from . import _lib  # noqa: F401  (loads libtvm_partial.so: its globals back everything below)
from ._repr import describe
from .artifact.export import export_library
from .artifact.inspect import inspect, verify
from .artifact.load import load, load_from_bytes, save_to_bytes
from .models import from_exported_program, from_onnx
from .output_specs import outputs
from .partial import bindings, param_names, partial, rebind
from .weights import open_weights, save_weights

__version__ = "0.1.0"

__all__ = [
    "bindings",
    "describe",
    "export_library",
    "from_exported_program",
    "from_onnx",
    "inspect",
    "load",
    "load_from_bytes",
    "open_weights",
    "outputs",
    "param_names",
    "partial",
    "rebind",
    "save_to_bytes",
    "save_weights",
    "verify",
]
