# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""docs/api.md: every public name, none extra, each signature as the code has it, up to date."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

import tvm_partial

ROOT = Path(__file__).resolve().parent.parent
API = (ROOT / "docs" / "api.md").read_text()
# "## `name`" then its signature in a text block.
SECTIONS = dict(re.findall(r"^## `(\w+)`\n\n```text\n(.*?)\n```", API, flags=re.M))


def _generator():
    spec = importlib.util.spec_from_file_location("gen_api_doc", ROOT / "scripts" / "gen_api_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_doc_is_what_the_generator_writes():
    assert _generator().render() == API, "docs/api.md is out of date: run python scripts/gen_api_doc.py"


def test_api_doc_names_are_exactly_all():
    headings = re.findall(r"^## `?([^`\n]+)`?$", API, flags=re.M)
    assert sorted(headings) == sorted(tvm_partial.__all__)
    assert len(headings) == len(set(headings))


def _documented(text: str) -> list:
    """[(name, kind, default)] from 'tvm_partial.f(a, b=1, /, *, c=..., **kw)'."""
    node = ast.parse(f"def f{text[text.index('(') :]}: pass").body[0]
    assert isinstance(node, ast.FunctionDef)
    args = node.args
    out = []
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "POSITIONAL_ONLY" if i < len(args.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append((arg.arg, kind, default))
    if args.vararg:
        out.append((args.vararg.arg, "VAR_POSITIONAL", None))
    out += [(a.arg, "KEYWORD_ONLY", d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append((args.kwarg.arg, "VAR_KEYWORD", None))
    return out


def _same_default(node, value) -> bool:
    if node is None:
        return value is inspect.Parameter.empty
    if value is inspect.Parameter.empty:
        return False
    literal = ast.literal_eval(node)
    if literal is Ellipsis:  # "not given": a private object() sentinel
        return type(value) is object
    return type(literal) is type(value) and literal == value


@pytest.mark.parametrize("name", sorted(SECTIONS))
def test_api_doc_signature_matches_the_code(name):
    obj = getattr(tvm_partial, name)
    text = SECTIONS[name]
    if ":" in text.split("(")[0]:  # a value, documented with its type
        module, cls = text.split(":", 1)[1].strip().rsplit(".", 1)
        assert isinstance(obj, getattr(importlib.import_module(module), cls))
        return
    assert text.startswith(f"tvm_partial.{name}(")
    documented = _documented(text)
    actual = list(inspect.signature(obj).parameters.values())
    assert [(n, k) for n, k, _ in documented] == [(p.name, p.kind.name) for p in actual]
    for (pname, _, node), param in zip(documented, actual):
        assert _same_default(node, param.default), f"{name}: default of {pname}"


def test_signature_check_catches_a_drift():
    def f(a, b=1, /, *, c=None, **kw): ...

    documented = _documented("tvm_partial.f(a, b=2, /, *, c=None, **kw)")
    actual = list(inspect.signature(f).parameters.values())
    assert [(n, k) for n, k, _ in documented] == [(p.name, p.kind.name) for p in actual]
    assert not _same_default(documented[1][2], actual[1].default)
    assert _same_default(documented[2][2], actual[2].default)
