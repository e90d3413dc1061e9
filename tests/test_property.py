# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Property-based differential test: partial() against a small pure-Python model of partial application.

Hypothesis draws a kernel arity, parameter names (repeats and option names included), a chain of
1-4 partial() steps (signature given or not; positions, names through keywords or the mapping,
in range or not) and a call, for function targets (a pure echo function and compiled TVM kernels)
and module targets (compiled kernels, with save_to_bytes / load_from_bytes round trips between
steps). After every step the bindings, the recorded names, and either the error kind or the values
each position receives are compared with the model.

Runs a bounded number of examples; TVM_PARTIAL_HYPOTHESIS_EXAMPLES=5000 runs that many per test
(see docs/hardening.md). Positions stay small (< 64): positions near 2**31 and 2**63 have their own
test at the end.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pytest
import tvm
import tvm_ffi
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tvm import te

import tvm_partial
from helpers import compile_te

_SCALE = int(os.environ.get("TVM_PARTIAL_HYPOTHESIS_EXAMPLES", "0"))


def examples(default: int) -> int:
    return _SCALE or default


def bounded(default: int):
    """Hypothesis settings: no example database in the repository, no per-example deadline; the
    bounded CI run draws the same examples every time (a landing never hangs on a lucky draw),
    a longer run (TVM_PARTIAL_HYPOTHESIS_EXAMPLES) draws new ones."""
    return settings(
        max_examples=examples(default),
        deadline=None,
        database=None,
        derandomize=not _SCALE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


echo = tvm_ffi.convert(lambda *args: list(args))  # a pure function: what reached which position
ALPHABET = ["a", "b", "c", "d", "e", "device", "function"]
ARITIES = (2, 3, 4, 5)
BASE = 64  # kernel encoding: out = sum(p_i * BASE**i) over the inputs; tokens are 1..BASE-1


# -- the model ------------------------------------------------------------------------------------
@dataclass
class Model:
    """What a partial binds, in positions of the ORIGINAL function, and the names it records."""

    arity: int
    names: list  # the original's full parameter list (what signature= describes)
    bound: dict = field(default_factory=dict)  # original position -> token
    recorded: list | None = None

    def step(self, sig_given: bool, keyed: dict, named: dict, keywords: set) -> tuple | None:
        """Apply one partial() step; -> (expected error type, why), or None (and the new state)."""
        sig = self.names if sig_given else self.recorded
        if sig_given and self.recorded is None and self.bound and max(self.bound) >= self.arity:
            return ValueError, "signature shorter than a bound position"
        if sig is not None and any(k in sig for k in keywords & {"device", "function", "outputs"}):
            return TypeError, "option keyword that is a parameter"
        free = None if sig is None else [i for i in range(len(sig)) if i not in self.bound]
        targets = {}
        for position, token in keyed.items():
            if free is not None and position >= len(free):
                return IndexError, "position past the free arguments"
            targets[position] = token
        if named and sig is None:
            return TypeError, "names without a signature"
        for name, token in named.items():
            if sig.count(name) != 1:
                return TypeError, "unknown name" if name not in sig else "ambiguous name"
            original = sig.index(name)
            if original in self.bound:
                return TypeError, "name already bound"
            position = free.index(original)
            if position in targets:
                return TypeError, "bound by index and by name"
            targets[position] = token
        # The C++ merge: a position among the free arguments -> the original position.
        originals = _free_positions(self.bound, max(targets, default=-1) + 1)
        new_bound = dict(self.bound)
        for position, token in targets.items():
            new_bound[originals[position]] = token
        if self.recorded is None and sig is not None:
            free_names = [sig[i] for i in free]
            if not self.bound:
                self.recorded = free_names or None
            elif free_names:  # the C++ merge records nothing when no name is left to give
                self.recorded = _merge_names(sorted(self.bound), free_names)
        self.bound = new_bound
        return None

    def call(self, args: list):
        """-> ("ok", the list the wrapped function receives) or ("error", error type)."""
        if self.recorded is not None:
            if len(args) != len(self.recorded) - len(self.bound):
                return "error", TypeError
        total = len(args) + len(self.bound)
        if self.bound and max(self.bound) >= total:
            return "error", IndexError
        it = iter(args)
        return "ok", [self.bound[i] if i in self.bound else next(it) for i in range(total)]


def _free_positions(bound: dict, count: int) -> list:
    """The first ``count`` original positions that ``bound`` leaves free."""
    out, i = [], 0
    while len(out) < count:
        if i not in bound:
            out.append(i)
        i += 1
    return out


def _merge_names(inner_bound: list, free_names: list) -> list:
    """What the C++ merge records when only the outer step named parameters: argN at the inner
    partial's bound positions, the given names elsewhere."""
    total = len(inner_bound) + len(free_names)
    it = iter(free_names)
    return [f"arg{i}" if i in inner_bound else next(it) for i in range(total)]


# -- drawing a chain of steps ------------------------------------------------------------------------
def draw_step(data, model: Model, tokens, kernel: bool):
    sig_given = data.draw(st.booleans(), label="signature given")
    free_count = max(model.arity - len(model.bound), 0)
    if kernel and not (sig_given or model.recorded):
        # No count check at bind time: keep the kernel's calls at its arity.
        positions = (
            st.lists(st.integers(0, free_count - 1), max_size=2, unique=True) if free_count else st.just([])
        )
    else:
        past_end = data.draw(st.integers(0, 7), label="positions past the end") == 5
        top = free_count + 1 if past_end else free_count - 1
        positions = st.lists(st.integers(0, top), max_size=2, unique=True) if top >= 0 else st.just([])
    keyed = {p: next(tokens) for p in data.draw(positions, label="positions")}
    sig = model.names if sig_given else model.recorded
    chosen = []
    if sig is not None or data.draw(st.integers(0, 11), label="names without a signature") == 7:
        chosen = data.draw(
            st.lists(st.sampled_from(sorted(set(model.names))), max_size=2, unique=True), label="names"
        )
        if data.draw(st.integers(0, 15), label="an unknown name") == 7:
            chosen.append("zz")
    named, keywords = {}, set()
    for name in chosen:
        named[name] = next(tokens)
        as_keyword = data.draw(st.booleans(), label=f"{name} as keyword")
        # An option name as a keyword is the option itself unless the known signature names it
        # (a partial bound by position records argN for those positions): not drawn then.
        if as_keyword and (name not in ("device", "function") or (sig is not None and name in sig)):
            keywords.add(name)
    return sig_given, keyed, named, keywords


def apply_step(target, step, signature, value_of):
    sig_given, keyed, named, keywords = step
    mapping = {p: value_of(t) for p, t in keyed.items()}
    mapping.update({n: value_of(t) for n, t in named.items() if n not in keywords})
    kwargs = {n: value_of(t) for n, t in named.items() if n in keywords}
    return tvm_partial.partial(target, mapping, signature=signature if sig_given else None, **kwargs)


def token_stream(start: int = 1):
    i = start
    while True:
        yield i
        i += 1


# -- function targets: the echo function ----------------------------------------------------------------
@bounded(3000)
@given(data=st.data())
def test_echo_function_chains_match_the_model(data):
    arity = data.draw(st.integers(1, 6), label="arity")
    names = data.draw(st.lists(st.sampled_from(ALPHABET), min_size=arity, max_size=arity), label="names")
    model = Model(arity, names)
    tokens = (f"t{i}" for i in token_stream())
    g = echo
    for _ in range(data.draw(st.integers(1, 4), label="depth")):
        step = draw_step(data, model, tokens, kernel=False)
        expected = model.step(*step)
        if expected is not None:
            event(f"refused at bind: {expected[0].__name__}, {expected[1]}")
            with pytest.raises(expected[0]):
                apply_step(g, step, names, lambda t: t)
            return
        g = apply_step(g, step, names, lambda t: t)
        assert tvm_partial.bindings(g) == model.bound
        assert tvm_partial.param_names(g) == (model.recorded or [])
    free_count = arity - len(model.bound)
    count = data.draw(st.one_of(st.just(max(free_count, 0)), st.integers(0, arity + 2)), label="call args")
    args = [f"c{i}" for i in range(count)]
    kind, outcome = model.call(args)
    event(f"called: {kind}" + (f" {outcome.__name__}" if kind == "error" else ""))
    if kind == "error":
        with pytest.raises(outcome):
            g(*args)
    else:
        assert list(g(*args)) == outcome


# -- compiled kernels: function and module targets ---------------------------------------------------
def _weighted_sum(inputs):
    # A closure over its own `inputs`, not a default argument: te.compute of apache-tvm 0.26
    # refuses a compute function with defaults.
    return lambda j: sum(p[j] * (BASE**i) for i, p in enumerate(inputs))


@pytest.fixture(scope="module")
def kernels():
    """arity -> (executable, TE tensors p0..p{n-1}); int64 (1,) tensors, the last one the output:
    out = sum(p_i * BASE**i), so the output tells which token reached which input position."""
    built = {}
    for n in ARITIES:
        inputs = [te.placeholder((1,), "int64", name=f"p{i}") for i in range(n - 1)]
        out = te.compute((1,), _weighted_sum(inputs), name=f"p{n - 1}")
        built[n] = (compile_te([*inputs, out]), [*inputs, out])
    return built


def token_tensor(token: int):
    return tvm.runtime.tensor(np.array([token], "int64"))


def held_tokens(held: dict) -> dict:
    return {i: int(v.numpy()[0]) for i, v in held.items()}


def check_kernel_chain(data, kernels, module: bool):
    arity = data.draw(st.sampled_from(ARITIES), label="arity")
    exe, tensors = kernels[arity]
    model = Model(arity, [t.op.name for t in tensors])
    tokens = token_stream()
    target = exe if module else exe["main"]
    for _ in range(data.draw(st.integers(1, 4), label="depth")):
        step = draw_step(data, model, tokens, kernel=True)
        expected = model.step(*step)
        if expected is not None:
            event(f"refused at bind: {expected[0].__name__}, {expected[1]}")
            with pytest.raises(expected[0]):
                apply_step(target, step, tensors, token_tensor)
            return
        target = apply_step(target, step, tensors, token_tensor)
        if module and data.draw(st.booleans(), label="round trip"):
            target = tvm_partial.load_from_bytes(tvm_partial.save_to_bytes(target), exe)
        held = tvm_partial.bindings(target)
        names = tvm_partial.param_names(target)
        if module:
            held, names = held.get("main", {}), names.get("main", [])
        assert held_tokens(held) == model.bound
        assert names == (model.recorded or [])
    # Call with exactly the free arguments: every position receives one token.
    free = [i for i in range(arity) if i not in model.bound]
    call_tokens = [next(tokens) for _ in free]
    args = [token_tensor(t) for t in call_tokens]
    kind, received = model.call(call_tokens)
    assert kind == "ok"
    event(f"called with {len(model.bound)} of {arity} bound")
    target(*args)
    held = tvm_partial.bindings(target)
    held = held.get("main", {}) if module else held
    out_tensor = held[arity - 1] if arity - 1 in model.bound else args[free.index(arity - 1)]
    expected_out = sum(received[i] * BASE**i for i in range(arity - 1))
    assert int(out_tensor.numpy()[0]) == expected_out


@bounded(1500)
@given(data=st.data())
def test_kernel_function_chains_match_the_model(kernels, data):
    check_kernel_chain(data, kernels, module=False)


@bounded(1500)
@given(data=st.data())
def test_kernel_module_chains_match_the_model(kernels, data):
    check_kernel_chain(data, kernels, module=True)


def test_model_knows_the_signature_again_case():
    """The issue's case, in the model: signature= again binds the named parameter."""
    model = Model(4, ["data", "weights", "bias", "result"])
    assert model.step(True, {}, {"weights": "w"}, {"weights"}) is None
    assert model.step(True, {}, {"bias": "b"}, {"bias"}) is None
    assert model.bound == {1: "w", 2: "b"}
    assert model.call(["x", "out"]) == ("ok", ["x", "w", "b", "out"])


# -- positions no call can reach ------------------------------------------------------------------------
def test_position_past_int32_refused_at_bind_time():
    with pytest.raises((IndexError, ValueError, OverflowError), match="2147483648"):
        tvm_partial.partial(echo, {2**31: 1})
