"""The Mamba-2 mixer's recompute (`Mamba2Mixer.recompute`, `modules/recompute.py`): the conv's and the gated norm's
outputs remade in the backward instead of kept, with the same gradients."""

import copy
import gc
import weakref

import pytest
import torch

from flashssm.modules import mamba2
from flashssm.modules.recompute import Recompute
from tests.conftest import DEVICE
from tests.helpers import cases, lm_grads, same_model_gradient
from tests.models.test_models import VOCAB, make


def _grads(model, ids, recompute, cu_seqlens=None):
    assert model.set_recompute(recompute) is model
    return lm_grads(model, ids, cu_seqlens)


SAME_GRADIENT_CASES = [(name, packed) for name in ("mamba2", "mamba2-dmlp", "hybrid", "mamba1")
                       for packed in (False, True)]


@pytest.mark.parametrize("name,packed", cases(
    SAME_GRADIENT_CASES, [f"{name}-{packed}" for name, packed in SAME_GRADIENT_CASES],
    full_ids=("mamba1-False",)))  # (the interpreter's selective scan is slow: Mamba-1 packed only)
def test_recompute_gives_the_same_gradients(name, packed):
    """Loss and every parameter's gradient as without the recompute, bit for bit on the CPU (the remade tensors are the
    kernels' deterministic forwards), packed sequences too; the MLP model and Mamba-1 remake the conv's output only."""
    model = make(name)
    ids = torch.randint(0, VOCAB, (1, 45) if packed else (2, 37), device=DEVICE)
    cu = torch.tensor([0, 20, 45], dtype=torch.int32, device=DEVICE) if packed else None
    want_loss, want = _grads(copy.deepcopy(model), ids, False, cu)
    got_loss, got = _grads(copy.deepcopy(model), ids, True, cu)
    assert torch.equal(got_loss, want_loss)
    for key, g in want.items():
        assert same_model_gradient(got[key], g), key


@pytest.mark.parametrize("name", ["mamba2", "mamba1"])
def test_recompute_frees_the_conv_and_norm_outputs(name, monkeypatch):
    """After a training forward with the recompute, nothing holds the conv's output or (Mamba-2) the gated norm's
    (their storage is free until the backward remakes them); without it the backward keeps them. The backward remakes
    each once a layer."""
    from flashssm.modules import mamba1

    made = {"conv": [], "norm": []}
    mixer_module = mamba2 if name == "mamba2" else mamba1
    real_conv, real_norm = mixer_module.causal_conv1d, mamba2.rmsnorm_gated

    def conv(*args, **kwargs):
        out = real_conv(*args, **kwargs)
        made["conv"].append(weakref.ref(out[0] if isinstance(out, tuple) else out))
        return out

    def norm(*args, **kwargs):
        out = real_norm(*args, **kwargs)
        made["norm"].append(weakref.ref(out))
        return out

    monkeypatch.setattr(mixer_module, "causal_conv1d", conv)
    monkeypatch.setattr(mamba2, "rmsnorm_gated", norm)
    norms_a_layer = 1 if name == "mamba2" else 0
    for recompute in (False, True):
        model = make(name).set_recompute(recompute)
        layers = len(model.backbone.layers)
        made["conv"].clear()
        made["norm"].clear()
        ids = torch.randint(0, VOCAB, (1, 17), device=DEVICE)  # (one sequence: what is kept does not depend on it)
        loss = model(ids).float().square().mean()
        gc.collect()
        alive = [r() is not None for r in made["conv"] + made["norm"]]
        assert len(alive) == (1 + norms_a_layer) * layers
        assert alive == [not recompute] * len(alive), (recompute, alive)
        loss.backward()
        # the remakes: one conv (and one norm) a layer, only with the recompute
        assert len(made["conv"]) == layers * (2 if recompute else 1)
        assert len(made["norm"]) == norms_a_layer * layers * (2 if recompute else 1)


def test_recompute_unit():
    """Saves of a marked tensor's storage come back as the same views of one remade tensor (made once, in the
    backward); other saves pass through; an empty tensor is not marked; a view cannot be marked."""
    calls = []
    base = torch.randn(4, 6)

    def make():
        calls.append(1)
        return base.clone()

    a = base.clone().requires_grad_()
    marked = a * 1.0  # (a non-leaf whose storage starts at offset 0)
    rec = Recompute()
    rec.add(marked, make)
    rec.add(torch.empty(0), lambda: pytest.fail("an empty tensor is never remade"))
    other = torch.randn(3, 6, requires_grad=True)
    with rec.saving():
        out = (marked[:, 1:4] * marked.t()[2:5].t()).sum() + (other * other).sum()
    assert not calls
    out.backward()
    assert len(calls) == 1
    assert torch.equal(a.grad, torch.zeros_like(base).index_add_(1, torch.arange(1, 4), base[:, 2:5])
                       .index_add_(1, torch.arange(2, 5), base[:, 1:4]))
    assert torch.equal(other.grad, 2 * other.detach())
    with pytest.raises(ValueError, match="begin its storage"):
        rec.add(base[1:], make)


def test_recompute_steps_aside_under_the_callers_hooks(monkeypatch):
    """Under a caller's saved-tensor hooks (here save_on_cpu) the recompute remakes nothing: the caller's hooks see every
    save, the conv's output is kept by them, and the gradients are as without the recompute."""
    seen = []
    real = mamba2.causal_conv1d
    monkeypatch.setattr(mamba2, "causal_conv1d", lambda *a, **k: seen.append(1) or real(*a, **k))
    model = make("mamba2")
    ids = torch.randint(0, VOCAB, (2, 21), device=DEVICE)
    _, want = _grads(copy.deepcopy(model), ids, False)
    with torch.autograd.graph.save_on_cpu():
        seen.clear()
        _, got = _grads(copy.deepcopy(model), ids, True)
    assert len(seen) == len(model.backbone.layers)  # (no remake in the backward)
    for key, g in want.items():
        assert same_model_gradient(got[key], g), key
