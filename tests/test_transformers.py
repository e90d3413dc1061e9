# Copyright 2026 The tvm-partial Authors
# SPDX-License-Identifier: Apache-2.0
"""Models nobody here wrote: transformers' GPT-2 (its head tied to the token embedding) and BERT,
from tiny configs with random weights (no download), through torch.export and
``tvm_partial.from_exported_program``; checkpoints as ``save_pretrained`` writes them, split in
several files, and as the Hugging Face cache lays them out (``snapshots/REV/FILE`` symlinks into
``blobs/``). Then the torch model trains one step, and nothing bound moves.

Slow (each model is exported, imported and compiled): CI runs them (`pytest -m slow`)."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import numpy as np
import pytest
import tvm

import tvm_partial

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:`isinstance.treespec, LeafSpec.` is deprecated:FutureWarning"),
]
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _hub_cache(root: Path, saved: Path) -> Path:
    """The files ``save_pretrained`` wrote to ``saved``, laid out as the Hugging Face cache does:
    each file's bytes in ``blobs/SHA256``, ``snapshots/REV/NAME`` a relative symlink to it. ->
    the snapshot folder."""
    repo = root / "models--tiny--model"
    snapshot = repo / "snapshots" / "0123456789abcdef"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for f in sorted(saved.iterdir()):
        data = f.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        (repo / "blobs" / sha).write_bytes(data)
        (snapshot / f.name).symlink_to(Path("..") / ".." / "blobs" / sha)
    return snapshot


def _call(pm, *arrays):
    out = pm(*[tvm.runtime.tensor(a.numpy()) for a in arrays])
    return (out[0] if type(out).__name__ == "Array" else out).numpy()


def _close(got, expected):
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=16, use_cache=False
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    tokens, mask = torch.tensor([[1, 2, 3, 4]]), torch.ones(1, 4, dtype=torch.int64)
    # With its attention mask: TVM cannot compile the boolean cumsum of the one transformers makes.
    program = torch.export.export(model, (), {"input_ids": tokens, "attention_mask": mask})
    exe = tvm.compile(tvm_partial.from_exported_program(program), target="llvm")
    return config, model, exe, (tokens, mask)


def test_gpt2_binds_by_its_state_dict_and_its_tied_head(gpt2):
    _, model, exe, inputs = gpt2
    state = model.state_dict()
    pm = tvm_partial.partial(exe, **state)
    names = tvm_partial.param_names(pm)["main"]
    assert names[:2] == ["input_ids", "attention_mask"] and "lm_head.weight" not in names
    assert sorted(names[2:]) == sorted(k for k in state if k != "lm_head.weight")
    expected = model(input_ids=inputs[0], attention_mask=inputs[1]).logits.detach().numpy()
    _close(_call(pm, *inputs), expected)
    # The head's name alone binds the tied weight too.
    by_head = {k: v for k, v in state.items() if k != "transformer.wte.weight"}
    assert _call(tvm_partial.partial(exe, **by_head), *inputs).tobytes() == _call(pm, *inputs).tobytes()


def test_gpt2_swaps_a_checkpoint_from_the_hub_cache_and_ignores_training(gpt2, tmp_path):
    _, fixture_model, exe, inputs = gpt2
    model = copy.deepcopy(fixture_model)  # the very model bound below is the one trained
    pm = tvm_partial.partial(exe, **model.state_dict())
    before = _call(pm, *inputs)
    lib = tmp_path / "gpt2.so"
    tvm_partial.export_library(pm, lib)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    model(input_ids=inputs[0], attention_mask=inputs[1], labels=inputs[0]).loss.backward()
    optimizer.step()
    model.eval()
    assert _call(pm, *inputs).tobytes() == before.tobytes()  # nothing bound moved
    model.save_pretrained(tmp_path / "saved", max_shard_size="40KB")
    assert (tmp_path / "saved" / "model.safetensors.index.json").exists()
    snapshot = _hub_cache(tmp_path / "cache", tmp_path / "saved")
    index = snapshot / "model.safetensors.index.json"
    # The trained state through the index, bit for bit what binding it directly computes.
    direct = _call(tvm_partial.partial(exe, **model.state_dict()), *inputs)
    assert direct.tobytes() != before.tobytes()
    _close(direct, model(input_ids=inputs[0], attention_mask=inputs[1]).logits.detach().numpy())
    assert _call(tvm_partial.load(lib, weights_file=index), *inputs).tobytes() == direct.tobytes()
    found = tvm_partial.open_weights(index)
    assert _call(tvm_partial.rebind(pm, **found), *inputs).tobytes() == direct.tobytes()
    # save_pretrained records no hashes: verify says its bytes cannot be checked, naming the file
    with pytest.raises(ValueError, match=r"model-00001-of-\d+\.safetensors.*records no payload hashes"):
        tvm_partial.verify(index)


def test_bert_with_its_batch_of_inputs(tmp_path):
    torch.manual_seed(1)
    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=16,
    )
    model = transformers.BertModel(config).eval()
    tokens = torch.tensor([[2, 5, 7, 1]])
    mask, types = torch.ones_like(tokens), torch.zeros_like(tokens)
    kwargs = {"input_ids": tokens, "attention_mask": mask, "token_type_ids": types}
    program = torch.export.export(model, (), kwargs)
    exe = tvm.compile(tvm_partial.from_exported_program(program), target="llvm")
    state = model.state_dict()
    pm = tvm_partial.partial(exe, **state)
    expected = model(**kwargs).last_hidden_state.detach().numpy()
    _close(_call(pm, tokens, mask, types), expected)
    other = transformers.BertModel(config).eval()
    other.save_pretrained(tmp_path / "saved")
    swapped = tvm_partial.rebind(pm, **tvm_partial.open_weights(tmp_path / "saved" / "model.safetensors"))
    direct = _call(tvm_partial.partial(exe, **other.state_dict()), tokens, mask, types)
    assert _call(swapped, tokens, mask, types).tobytes() == direct.tobytes()
    _close(direct, other(**kwargs).last_hidden_state.detach().numpy())
