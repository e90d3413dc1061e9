# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Property-based test of sharded artifacts among files that change: a Hypothesis state machine
(``ShardsMachine``) exports artifacts whole or split over 2 ranks, in every placement, replaces
and renames them, points a symlink at them, removes weights files, and loads and verifies them
whole or as a rank's view, in one process. After each step every live module must compute with
exactly the values its load promised (bitwise against numpy), whatever happened to the files since.

The kernel takes one rank's shard: ``out = 2a + 3b + c`` over float32[16]. A whole export binds
``b`` and ``c`` of [16]; a sharded one binds [32] tensors split along dim 0 over world 2, so rank
r computes with ``b[16r:16r+16]``. The model knows what each path holds (placement, world, the
values, the link of its weights file) and what each weights file holds, so it knows what a load
must do: ``tvm_partial.load`` loads what the path holds now (through a symlink too), a rank's view
of a sharded artifact computes with its slices, a whole load of a sharded artifact refuses calls,
and ``shard=`` of an unsharded artifact, a world the artifact does not record, a missing weights
file and one written by another export are refused, each for its reason, by load and verify alike.

The machine runs in a fresh interpreter with a timeout (a crash in the system's loader would kill
pytest) and reports JSON: how often each rule ran with each outcome. Default: 30 examples of at
most 20 steps (derandomized when ``CI`` is set); ``TVM_PARTIAL_PROPERTY_EXAMPLES=N`` runs N.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from helpers import compile_te, ints, run_json

LIBS = ["a.so", "b.so"]
LINK = "current.so"  # a symlink a deploy points at one version
PLACEMENTS = ["inline", "zero_copy", "weights_file"]
WORLD = 2
EXAMPLES = int(os.environ.get("TVM_PARTIAL_PROPERTY_EXAMPLES", "0")) or 30
STEPS = 20

#: A refusal's reason, from its message (the model predicts reasons, not wording).
REASONS = [
    ("binds no sharded tensors", "not sharded"),
    ("this artifact is sharded over world", "other world"),
    ("not written with this artifact", "weights foreign"),
    ("of this artifact does not exist", "weights missing"),
]


#: A sequence written out (``n`` of 6 and more picks ``pool[n % len(pool)]``: 6 a.so, 7 b.so, 8
#: current.so), run before the drawn examples so every run reaches these verdicts: a rank of a
#: weights-file artifact; a library renamed away from its weights file, which the next export to
#: its old name rewrites (foreign, for load and verify); a symlink switched; two versions of one
#: path loaded side by side; a weights file removed.
SCENARIO: list[tuple[str, dict[str, Any]]] = [
    ("export", {"dst": "a.so", "placement": "weights_file", "world": 2, "bs": 0, "cs": 1}),
    ("load", {"n": 6, "rank": 1, "world": 2}),
    ("move", {"n": 6, "dst": "b.so"}),
    ("export", {"dst": "a.so", "placement": "weights_file", "world": 0, "bs": 2, "cs": 2}),
    ("load", {"n": 7, "rank": 0, "world": 2}),
    ("verify", {"n": 7, "rank": 0, "world": 2}),
    ("symlink", {"to": "a.so"}),
    ("load", {"n": 8, "rank": None, "world": 2}),
    ("export", {"dst": "a.so", "placement": "zero_copy", "world": 2, "bs": 3, "cs": 3}),
    ("load", {"n": 8, "rank": 0, "world": 2}),
    ("load", {"n": 8, "rank": 1, "world": 3}),
    ("remove_weights", {"n": 6}),
    ("load", {"n": 7, "rank": None, "world": 2}),
    ("export", {"dst": "b.so", "placement": "inline", "world": 2, "bs": 1, "cs": 0}),
    ("load", {"n": 7, "rank": 1, "world": 2}),
    ("load", {"n": 7, "rank": None, "world": 2}),
    ("verify", {"n": 6, "rank": 0, "world": 2}),
]


def reason(err: BaseException) -> str:
    for needle, name in REASONS:
        if needle in str(err):
            return name
    if isinstance(err, FileNotFoundError):
        return "missing"
    return f"other: {type(err).__name__}: {err}"


def run(examples: int, folder: str) -> dict:
    """Run the machine (in the interpreter that imports this); -> {"counts": {rule: outcome: n}}."""
    from collections import Counter

    import tvm
    from hypothesis import HealthCheck, settings
    from hypothesis import strategies as st
    from hypothesis.stateful import (
        RuleBasedStateMachine,
        initialize,
        invariant,
        rule,
        run_state_machine_as_test,
    )
    from tvm import te

    import tvm_partial

    a, b, c = (te.placeholder((16,), "float32", name=n) for n in "abc")
    out = te.compute((16,), lambda i: a[i] * 2.0 + b[i] * 3.0 + c[i], name="out")
    sig = [a, b, c, out]
    exe = compile_te(sig)
    data = ints(16, seed=99)
    counts: Counter = Counter()
    examples_made = iter(range(10**9))

    class ShardsMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.root = Path(folder) / f"example{next(examples_made)}"
            self.root.mkdir()
            self.libs: dict[str, dict] = {}  # name -> {placement, world, b, c, link, weights}
            self.weights: dict[str, int] = {}  # weights file name -> link of the export it is of
            self.link: str | None = None  # what current.so points at
            self.live: list[tuple] = []  # (module, b, c, label)
            self.exports = 0

        def pick(self, n: int, pool: list[str]) -> str:
            """A path of ``pool``: mostly one that holds something, sometimes any."""
            held = [p for p in pool if self.resolve(p) is not None or p in self.weights]
            return held[n % len(held)] if held and n < 6 else pool[n % len(pool)]

        def path(self, name: str) -> str:
            return str(self.root / name)

        def resolve(self, name: str) -> str | None:
            """The library name a path leads to (current.so through its symlink), or None."""
            if name == LINK:
                name = self.link or ""
            return name if name in self.libs else None

        def refusals(self, name: str, rank: int | None, world: int) -> set[str]:
            """Why a load or verify of ``name`` with ``shard=(rank, world)`` must be refused."""
            real = self.resolve(name)
            if real is None:
                return {"missing"}
            lib, why = self.libs[real], set()
            if rank is not None and lib["world"] == 0:
                why.add("not sharded")
            elif rank is not None and world != lib["world"]:
                why.add("other world")
            if lib["placement"] == "weights_file":
                if lib["weights"] not in self.weights:
                    why.add("weights missing")
                elif self.weights[lib["weights"]] != lib["link"]:
                    why.add("weights foreign")
            return why

        def attempt(self, what: str, run, n: int, rank: int | None, world: int) -> tuple:
            """``run`` (load or verify) of a picked path with ``shard=(rank, world)``, refused for
            the reason the model predicts or accepted where it predicts none: (name, shard,
            result), or (None, shard, None) when refused."""
            name = self.pick(n, [*LIBS, LINK])
            why = self.refusals(name, rank, world)
            shard = None if rank is None else (rank, world)
            try:
                result = run(self.path(name), shard=shard)
            except (ValueError, FileNotFoundError) as err:
                assert reason(err) in why, (
                    f"{what}({name}, shard={shard}): expected {why or 'success'}, got {err}"
                )
                counts[f"{what}: refused, {reason(err)}"] += 1
                return None, shard, None
            assert not why, f"{what}({name}, shard={shard}) succeeded; expected a refusal for {why}"
            return name, shard, result

        def call(self, mod) -> np.ndarray:
            result = tvm.runtime.empty((16,), "float32")
            mod(tvm.runtime.tensor(data), result)
            return result.numpy()

        @initialize(
            dst=st.sampled_from(LIBS),
            placement=st.sampled_from(PLACEMENTS),
            world=st.sampled_from([0, WORLD]),
        )
        def first(self, dst: str, placement: str, world: int) -> None:
            self.export(dst, placement, world, 0, 1)

        @rule(
            dst=st.sampled_from(LIBS),
            placement=st.sampled_from(PLACEMENTS),
            world=st.sampled_from([0, WORLD]),
            bs=st.integers(0, 3),
            cs=st.integers(0, 3),
        )
        def export(self, dst: str, placement: str, world: int, bs: int, cs: int) -> None:
            n = 16 * (world or 1)
            bv, cv = ints(n, seed=bs), ints(n, seed=10 + cs)
            if world:
                pm = tvm_partial.partial(exe, signature=sig, b=bv, c=cv, shards={"b": 0, "c": 0}, world=world)
            else:
                pm = tvm_partial.partial(exe, signature=sig, b=bv, c=cv)
            kwargs: dict = {"zero_copy": placement == "zero_copy"}
            weights = None
            if placement == "weights_file":
                weights = dst + ".safetensors"
                kwargs = {"weights_file": self.path(weights)}
            tvm_partial.export_library(pm, self.path(dst), **kwargs)
            self.exports += 1
            self.libs[dst] = {"placement": placement, "world": world, "b": bv, "c": cv}
            self.libs[dst].update(link=self.exports, weights=weights)
            if weights is not None:
                self.weights[weights] = self.exports
            counts[f"export: {placement}, world {world}"] += 1

        @rule(n=st.integers(0, 7), dst=st.sampled_from(LIBS))
        def move(self, n: int, dst: str) -> None:
            """os.replace of a library (its weights file stays: the library names it)."""
            src = self.pick(n, LIBS)
            if src not in self.libs or src == dst:
                counts["move: nothing"] += 1
                return
            os.replace(self.path(src), self.path(dst))
            self.libs[dst] = self.libs.pop(src)
            counts["move: library"] += 1

        @rule(to=st.sampled_from(LIBS))
        def symlink(self, to: str) -> None:
            """current.so -> ``to``, switched by a rename (as deploys do)."""
            staged = self.path(LINK + ".new")
            os.symlink(to, staged)
            os.replace(staged, self.path(LINK))
            self.link = to
            counts["symlink"] += 1

        @rule(n=st.integers(0, 7))
        def remove_weights(self, n: int) -> None:
            weights = self.pick(n, [name + ".safetensors" for name in LIBS])
            if weights not in self.weights:
                counts["remove_weights: nothing"] += 1
                return
            os.unlink(self.path(weights))
            del self.weights[weights]
            counts["remove_weights"] += 1

        @rule(
            n=st.integers(0, 7), rank=st.sampled_from([None, 0, 1]), world=st.sampled_from([WORLD, WORLD, 3])
        )
        def load(self, n: int, rank: int | None, world: int) -> None:
            name, shard, mod = self.attempt("load", tvm_partial.load, n, rank, world)
            if name is None:
                return
            lib = self.libs[self.resolve(name) or ""]
            if lib["world"] and rank is None:  # the whole artifact: its kernel takes a rank's shard
                try:
                    self.call(mod)
                except ValueError as err:
                    assert "binds whole tensors split over 2 ranks" in str(err), str(err)
                    counts["load: whole sharded, call refused"] += 1
                    return
                raise AssertionError("a whole load of a sharded artifact computed")
            part = slice(16 * rank, 16 * rank + 16) if rank is not None else slice(0, 16)
            label = f"load({name}, shard={shard}) of export {lib['link']}"
            self.live.append((mod, lib["b"][part].copy(), lib["c"][part].copy(), label))
            counts[f"load: {lib['placement']}, {'rank' if rank is not None else 'whole'}"] += 1

        @rule(
            n=st.integers(0, 7), rank=st.sampled_from([None, 0, 1]), world=st.sampled_from([WORLD, WORLD, 3])
        )
        def verify(self, n: int, rank: int | None, world: int) -> None:
            name, _, report = self.attempt("verify", tvm_partial.verify, n, rank, world)
            if name is None:
                return
            assert report["intact"], report
            counts["verify: intact"] += 1

        @rule(which=st.integers(0, 7))
        def drop(self, which: int) -> None:
            if self.live:
                self.live.pop(which % len(self.live))
            counts["drop"] += 1

        @invariant()
        def every_live_module_computes_its_own_values(self) -> None:
            for mod, bv, cv, label in self.live:
                want = data * 2.0 + bv * 3.0 + cv
                assert np.array_equal(self.call(mod), want.astype("float32")), label

        def teardown(self) -> None:
            self.live.clear()
            shutil.rmtree(self.root, ignore_errors=True)

    machine = ShardsMachine()  # the written-out sequence first
    try:
        for name, kwargs in SCENARIO:
            getattr(machine, name)(**kwargs)
            machine.every_live_module_computes_its_own_values()
    finally:
        machine.teardown()
    run_state_machine_as_test(
        ShardsMachine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=STEPS,
            deadline=None,
            derandomize=bool(os.environ.get("CI")),
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    return {"counts": dict(sorted(counts.items()))}


def test_sharded_artifacts_among_changing_files(tmp_path: Path) -> None:
    """The machine (see the module docstring) in a fresh interpreter; the outcomes that matter
    were reached."""
    here = os.path.dirname(os.path.abspath(__file__))
    report = run_json(
        f"""
        import json, sys
        sys.path.insert(0, {here!r})
        import test_property_shards
        print(json.dumps(test_property_shards.run({EXAMPLES}, {str(tmp_path)!r})))
        """
    )
    counts = report["counts"]
    print(counts, file=sys.stderr)
    for outcome in [  # the scenario's
        "load: weights_file, rank",
        "load: refused, weights foreign",
        "verify: refused, weights foreign",
        "load: weights_file, whole",
        "load: zero_copy, rank",
        "load: refused, other world",
        "load: refused, weights missing",
        "load: inline, rank",
        "load: whole sharded, call refused",
        "verify: intact",
    ]:
        assert counts.get(outcome), f"no step ended {outcome}: {counts}"
    if os.environ.get("CI") or EXAMPLES >= 200:  # a random draw of 30 may miss a rule
        ran = {key.split(":")[0] for key in counts}
        assert ran >= {"export", "move", "symlink", "remove_weights", "load", "verify", "drop"}, sorted(ran)
