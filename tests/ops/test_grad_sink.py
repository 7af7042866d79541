"""grad_sink.split: the pieces' gradients written into one buffer by the kernels that consume them, against the plain
split (the same gradients, bit for bit: the same kernels write them, only where differs). Outputs are NaN-poisoned in
the tests, so a slab element nobody wrote fails."""

import pytest
import torch

import flashssm
from flashssm.ops import grad_sink
from tests.conftest import HAS_GPU

DEVICE = "cuda" if HAS_GPU else "cpu"


def consumers(pieces, w_norm, w_conv, uses):
    """A loss over the pieces: the gated norm takes piece 0 as its z, the conv piece 1 (channels first, a transposed
    view), piece 2 plain torch ops; `uses` picks which run (and "twice": piece 1 through two convs)."""
    z, xbc, dt = pieces
    loss = (dt.float() ** 2).sum() if "dt" in uses else 0
    y = flashssm.causal_conv1d(xbc.transpose(1, 2), w_conv, None, "silu") if "conv" in uses else None
    if "twice" in uses:
        y = y + flashssm.causal_conv1d(xbc.transpose(1, 2), w_conv * 0.5, None, None)
    if "norm" in uses:
        base = y.transpose(1, 2) if y is not None else torch.ones_like(z)
        loss = loss + (flashssm.rmsnorm_gated(base, w_norm, z) ** 2).sum()
    elif y is not None:
        loss = loss + (y ** 2).sum()
    return loss


def run(sink: bool, uses, seed=0, dtype=torch.float32, checkpoint=None):
    """(h's gradient, the gradient reaching the split's source); `checkpoint`: the projection, the split and its
    consumers run under torch.utils.checkpoint (use_reentrant = that value)."""
    gen = torch.Generator().manual_seed(seed)
    h = torch.randn(2, 9, 12, generator=gen).to(DEVICE, dtype).requires_grad_()
    proj = torch.randn(12, 16 + 16 + 3, generator=gen).to(DEVICE, dtype)
    w_norm = torch.randn(16, generator=gen).to(DEVICE)
    w_conv = torch.randn(16, 4, generator=gen).to(DEVICE, dtype)
    seen = []

    def loss_of(h):
        t = h @ proj
        if t.requires_grad:
            t.register_hook(lambda g: seen.append(g))
        pieces = grad_sink.split(t, [16, 16, 3]) if sink else t.split([16, 16, 3], dim=-1)
        return consumers(pieces, w_norm, w_conv, uses)

    if checkpoint is None:
        loss_of(h).backward()
    else:
        torch.utils.checkpoint.checkpoint(loss_of, h, use_reentrant=checkpoint).backward()
    return h.grad, seen[-1]


USES = [("norm", "conv", "dt"), ("norm", "conv"), ("conv", "dt"), ("norm",), ("norm", "conv", "twice", "dt"), ("dt",)]


@pytest.mark.parametrize("uses", USES, ids=lambda u: "+".join(u))
def test_split_gradients_equal_the_plain_split(uses, monkeypatch):
    handed = []
    real = grad_sink.take
    monkeypatch.setattr(grad_sink, "take", lambda x: handed.append(real(x)) or handed[-1])
    dh, dt_sink = run(True, uses)
    want, dt_plain = run(False, uses)
    assert torch.equal(dt_sink, dt_plain) and torch.equal(dh, want)
    assert not grad_sink._SINKS  # (every sink ended with its backward)
    taken = [b for b in handed if b is not None]
    # the norm and the conv took their pieces (a second conv of the same piece did not); where one did, the gradient
    # the split returned is the slab those buffers are views of
    assert len(taken) == ("norm" in uses) + ("conv" in uses)
    if taken:
        assert all(b.untyped_storage().data_ptr() == dt_sink.untyped_storage().data_ptr() for b in taken)


@pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])
def test_split_under_activation_checkpointing(reentrant):
    """torch.utils.checkpoint around the split and its consumers, in both of its modes: the forward runs again in the
    backward. Reentrant: the first forward records nothing (a plain split), the recompute records a split with its
    sink, which the consumers take. Non-reentrant: the first split's source dies after the forward (its sink with
    it), and the recomputed pieces outlive their own source tensor, so the consumers find no sink and the split's
    backward concatenates. Either way the gradients equal the plain split's without checkpointing, and no sink
    outlives the backward."""
    import torch.utils.checkpoint  # noqa: F401

    uses = ("norm", "conv", "dt")
    want, dt_want = run(False, uses)
    for sink in (True, False):
        dh, dt_got = run(sink, uses, checkpoint=reentrant)
        assert torch.equal(dh, want) and torch.equal(dt_got, dt_want)
        assert not grad_sink._SINKS


def test_piece_of_takes_whole_pieces_only():
    t = torch.randn(2, 5, 20, requires_grad=True) * 1
    a, b, c = grad_sink.split(t, [8, 8, 4])
    sink = grad_sink._SINKS[t.untyped_storage().data_ptr()]
    assert sink.piece_of(a) == 0 and sink.piece_of(b.transpose(1, 2)) == 1 and sink.piece_of(c.flatten(0, 1)) == 2
    assert sink.piece_of(b.unflatten(-1, (2, 4))) == 1
    for part in (b[..., :4], b[:, 1:], a.transpose(1, 2)[:, ::2], t[..., :16], b.double()):
        assert sink.piece_of(part) is None
    assert grad_sink.take(b) is not None and grad_sink.take(b.transpose(1, 2)) is None  # (once a piece)
    del a, b, c, t, sink
    assert not grad_sink._SINKS  # (the source gone: its sink too)


def test_split_is_plain_without_autograd():
    t = torch.randn(3, 10, requires_grad=True)
    with torch.no_grad():
        grad_sink.split(t * 1, [4, 6])
    grad_sink.split(torch.randn(3, 10), [4, 6])
    grad_sink.split((t * 1)[:, :8], [4, 4])  # (not a tensor of its own storage)
    assert not grad_sink._SINKS
    with pytest.raises(RuntimeError):  # (torch's own error for sizes that miss the width; no sink left behind)
        grad_sink.split(u := t * 1, [4, 5])
    assert not grad_sink._SINKS and u is not None


def test_a_tensor_split_twice_hands_out_nothing():
    """Two splits of one tensor (each piece consumed by a conv whose backward asks for a buffer): the second split
    is plain and the first hands out nothing more, so neither's consumers write where the other's copies go; the
    gradients equal the plain splits'."""
    gen = torch.Generator().manual_seed(5)
    h0 = torch.randn(2, 9, 12, generator=gen).to(DEVICE)
    proj = torch.randn(12, 32, generator=gen).to(DEVICE)
    w1, w2 = (torch.randn(16, 4, generator=gen).to(DEVICE) for _ in range(2))
    grads = []
    for sink in (True, False):
        h = h0.clone().requires_grad_()
        t = h @ proj
        first = grad_sink.split(t, [16, 16]) if sink else t.split([16, 16], dim=-1)
        second = grad_sink.split(t, [16, 16]) if sink else t.split([16, 16], dim=-1)
        # (the first split's consumers last: their backward runs first and would take the live sink's pieces, which
        # the second split's backward would then copy its own gradients over before the first's reads them)
        loss = sum((flashssm.causal_conv1d(p.transpose(1, 2), w, None, "silu") ** 2).sum()
                   for p, w in ((second[0], w2), (second[1], w1), (first[0], w1), (first[1], w2)))
        loss.backward()
        grads.append(h.grad)
    assert torch.equal(grads[0], grads[1]) and not grad_sink._SINKS
