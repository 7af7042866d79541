"""Activation checkpointing (`MambaLM.set_gradient_checkpointing`, transformers' `gradient_checkpointing_enable`): a
training forward keeps each layer's inputs only and the backward runs the layer again, with the same gradients."""

import copy
import gc
import weakref

import pytest
import torch

from flashssm.modules import mamba1, mamba2
from tests.conftest import DEVICE
from tests.helpers import cases, lm_grads, same_model_gradient
from tests.models.test_models import VOCAB, make


CASES = [(name, packed, False) for name in ("mamba2", "mamba2-dmlp", "hybrid") for packed in (False, True)]
CASES += [("mamba1", True, False)]  # (the interpreter's selective scan is slow: packed only)
CASES += [("mamba2", True, True), ("hybrid", False, True)]  # (the reentrant form)
# (the MLP model's and the hybrid's unpacked steps in the non-reentrant form: their packed and reentrant cases and
# Mamba-2's unpacked one cover them; --full runs them)
CASE_IDS = ["-".join(str(v) for v in case) for case in CASES]


@pytest.mark.parametrize("name,packed,reentrant", cases(CASES, CASE_IDS,
                                                        full_ids=("mamba2-dmlp-False-False", "hybrid-False-False")))
def test_checkpointing_gives_the_same_gradients(name, packed, reentrant):
    """Loss and every parameter's gradient as without checkpointing (bit for bit on the CPU), packed sequences too, in
    both of torch.utils.checkpoint's forms; a second step replays the kernels' recorded calls inside the recompute."""
    model = make(name)
    ids = torch.randint(0, VOCAB, (1, 29) if packed else (2, 19), device=DEVICE)
    cu = torch.tensor([0, 11, 29], dtype=torch.int32, device=DEVICE) if packed else None
    want_loss, want = lm_grads(copy.deepcopy(model), ids, cu)
    ckpt = copy.deepcopy(model).set_gradient_checkpointing(use_reentrant=reentrant)
    assert ckpt.is_gradient_checkpointing
    for _ in range(1 if packed else 2):  # (the second step: unpacked only, for the interpreter's time)
        ckpt.zero_grad(set_to_none=True)
        got_loss, got = lm_grads(ckpt, ids, cu)
        assert torch.equal(got_loss, want_loss)
        for key, g in want.items():
            assert got[key] is not None and same_model_gradient(got[key], g), key


@pytest.mark.parametrize("name", ["mamba2", "mamba1"])
def test_checkpointing_keeps_no_layer_intermediates(name, monkeypatch):
    """After a training forward with checkpointing nothing holds a layer's conv output (weak references), and the
    backward runs each layer's conv again; without gradients, or while a cache fills, a layer runs once."""
    module = mamba2 if name == "mamba2" else mamba1
    made = []
    real = module.causal_conv1d

    def conv(*args, **kwargs):
        out = real(*args, **kwargs)
        made.append(weakref.ref(out[0] if isinstance(out, tuple) else out))
        return out

    monkeypatch.setattr(module, "causal_conv1d", conv)
    model = make(name)
    assert model.gradient_checkpointing_enable() is None and model.is_gradient_checkpointing
    layers = len(model.backbone.layers)
    ids = torch.randint(0, VOCAB, (1, 17), device=DEVICE)  # (one sequence: what is kept does not depend on it)
    loss = model(ids).float().square().mean()
    gc.collect()
    assert len(made) == layers and not any(r() is not None for r in made)
    loss.backward()
    assert len(made) == 2 * layers
    made.clear()
    with torch.no_grad():
        full = model(ids)
        cache = model.allocate_cache(1, 40, torch.float32)
        start = model(ids, cache=cache)
    assert len(made) == 2 * layers  # (once a layer each: no checkpoint there)
    assert torch.equal(start, full)
    model.gradient_checkpointing_disable()
    assert not model.is_gradient_checkpointing
    made.clear()
    model(ids).float().square().mean().backward()
    assert len(made) == layers


def test_checkpointing_refuses_keywords_checkpoint_does_not_take():
    """A keyword torch.utils.checkpoint does not take is refused when set, naming it (it would otherwise reach the
    layers' forward as an argument at the first training step); its own keywords are kept."""
    model = make("mamba2")
    with pytest.raises(TypeError, match="got use_reentrnat: torch.utils.checkpoint takes .*use_reentrant"):
        model.set_gradient_checkpointing(use_reentrnat=True)
    assert not model.is_gradient_checkpointing
    model.set_gradient_checkpointing(use_reentrant=True, determinism_check="none", preserve_rng_state=True)
    assert model.backbone.checkpointing == {"use_reentrant": True, "determinism_check": "none",
                                            "preserve_rng_state": True}
