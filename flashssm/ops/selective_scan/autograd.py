"""selective_scan as `torch.library` custom ops (`flashssm::selective_scan_fwd`,
`flashssm::selective_scan_bwd`) with fake implementations and a registered autograd formula: autograd
runs the fused backward, and `torch.compile` traces through the scan without a graph break.

The forward saves its inputs and, when a backward will follow, the state entering every
`ckpt_tile`-th token (fp32, (batch, cdiv(seqlen, ckpt_tile), dim, dstate)): the backward recomputes
every other state from those. Absent outputs are empty tensors (ops return tensors only).
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from flashssm import _runtime

_INPUTS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")


def _seq_index(cu_seqlens: Optional[Tensor], u: Tensor) -> Optional[Tensor]:
    from flashssm.ops.selective_scan.scan import sequence_index

    return None if cu_seqlens is None else sequence_index(cu_seqlens.to(u.device), u.shape[2])


def _check(u, delta, A, B, C, D, z, delta_bias, cu_seqlens, delta_softplus, return_last_state):
    from flashssm.ops.checks import check_selective_scan

    # float64 is admitted here (not by selective_scan) so that gradcheck can run the kernels under the interpreter
    return check_selective_scan(u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias, delta_softplus=delta_softplus,
                                return_last_state=return_last_state, cu_seqlens=cu_seqlens, allow_float64=True)


@torch.library.custom_op("flashssm::selective_scan_fwd", mutates_args=())
def selective_scan_fwd(u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Optional[Tensor],
                       z: Optional[Tensor], delta_bias: Optional[Tensor], cu_seqlens: Optional[Tensor],
                       delta_softplus: bool, return_last_state: bool, ckpt_tile: int) -> tuple[Tensor, Tensor, Tensor]:
    """(y, last_state or empty, entering states every ckpt_tile tokens or empty (ckpt_tile 0))."""
    from flashssm.ops.selective_scan.scan import scan_forward

    cu = _check(u, delta, A, B, C, D, z, delta_bias, cu_seqlens, delta_softplus, return_last_state)
    with _runtime.on_device(u.device):
        y, last, ckpt = scan_forward(u, delta, A, B, C, D, z, delta_bias, delta_softplus,
                                     seq_index=_seq_index(cu_seqlens, u),
                                     num_seqs=None if cu is None else len(cu) - 1,
                                     return_last_state=return_last_state, ckpt_tile=ckpt_tile or None, offsets=cu)
    return y, last if last is not None else u.new_empty(0), ckpt if ckpt is not None else u.new_empty(0)


def _fake_rows(u: Tensor, dtype: torch.dtype) -> Tensor:
    """A fake (batch, dim, seqlen) output in the layout the real ops give it (`scan.rows_like`)."""
    from flashssm.ops.selective_scan.scan import rows_like

    return rows_like(u, dtype, lambda shape, dt: u.new_empty(shape, dtype=dt))


def _state_dtype(u: Tensor) -> torch.dtype:
    return torch.float64 if u.dtype == torch.float64 else torch.float32


@selective_scan_fwd.register_fake
def _(u, delta, A, B, C, D, z, delta_bias, cu_seqlens, delta_softplus, return_last_state, ckpt_tile):
    batch, dim, seqlen = u.shape
    dstate = A.shape[1]
    num_seqs = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else batch
    last = u.new_empty((num_seqs, dim, dstate), dtype=_state_dtype(u)) if return_last_state else u.new_empty(0)
    ckpt = (u.new_empty((batch, -(-seqlen // ckpt_tile), dim, dstate), dtype=_state_dtype(u)) if ckpt_tile
            else u.new_empty(0))
    return _fake_rows(u, u.dtype), last, ckpt


@torch.library.custom_op("flashssm::selective_scan_bwd", mutates_args=())
def selective_scan_bwd(dy: Tensor, dlast: Optional[Tensor], u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                       D: Optional[Tensor], z: Optional[Tensor], delta_bias: Optional[Tensor],
                       cu_seqlens: Optional[Tensor], ckpt: Tensor, delta_softplus: bool, ckpt_tile: int,
                       deterministic: bool, needs: list[bool]) -> list[Tensor]:
    """[du, ddelta, dA, dB, dC, dD, dz, ddelta_bias]; empty where the input is absent or `needs` (one
    flag per input, in that order) says its gradient is not wanted."""
    from flashssm.ops.checks import FLOAT_DTYPES_REF, check_optional, check_tensor
    from flashssm.ops.selective_scan.scan import scan_backward

    cu = _check(u, delta, A, B, C, D, z, delta_bias, cu_seqlens, delta_softplus, False)
    batch, dim, seqlen = u.shape
    dstate = A.shape[1]
    num_seqs = batch if cu is None else len(cu) - 1
    check_tensor("dy", dy, [("batch", batch), ("dim", dim), ("seqlen", seqlen)], FLOAT_DTYPES_REF, u.device)
    check_optional("dlast", dlast, [("num_seqs", num_seqs), ("dim", dim), ("dstate", dstate)], FLOAT_DTYPES_REF,
                   u.device)
    n_ckpt = -(-seqlen // ckpt_tile) if ckpt_tile > 0 else -1
    check_tensor("ckpt", ckpt, [("batch", batch), ("cdiv(seqlen, ckpt_tile)", n_ckpt), ("dim", dim),
                                ("dstate", dstate)], (_state_dtype(u),), u.device)
    with _runtime.on_device(u.device):
        grads = scan_backward(dy, dlast, u, delta, A, B, C, D, z, delta_bias, delta_softplus,
                              ckpt=ckpt.contiguous(), ckpt_tile=ckpt_tile, seq_index=_seq_index(cu_seqlens, u),
                              deterministic=deterministic, offsets=cu)
    return [g if g is not None and need else u.new_empty(0) for g, need in zip(grads, needs)]


@selective_scan_bwd.register_fake
def _(dy, dlast, u, delta, A, B, C, D, z, delta_bias, cu_seqlens, ckpt, delta_softplus, ckpt_tile, deterministic,
      needs):
    inputs = [u, delta, A, B, C, D, z, delta_bias]
    # as scan_backward allocates them (torch.compile plans its buffers by these strides:
    # tests/ops/test_custom_op_layouts.py): du, ddelta, dz in u's layout (`rows_like`), the others contiguous
    return [(_fake_rows(u, t.dtype) if name in ("u", "delta", "z") else t.new_empty(t.shape)) if t is not None and need
            else u.new_empty(0) for name, t, need in zip(_INPUTS, inputs, needs)]


def _setup_context(ctx, inputs, output):
    u, delta, A, B, C, D, z, delta_bias, cu_seqlens, delta_softplus, return_last_state, ckpt_tile = inputs
    ctx.save_for_backward(u, delta, A, B, C, D, z, delta_bias, cu_seqlens, output[2])
    ctx.options = (delta_softplus, ckpt_tile)
    ctx.return_last_state = return_last_state


def _backward(ctx, dy, dlast, _dckpt):
    u, delta, A, B, C, D, z, delta_bias, cu_seqlens, ckpt = ctx.saved_tensors
    ckpt = ckpt.contiguous()  # (as SelectiveScanFunction's backward says)
    delta_softplus, ckpt_tile = ctx.options
    if ckpt_tile == 0:
        raise RuntimeError("selective_scan_fwd ran without ckpt_tile, so it saved no states for a backward")
    inputs = (u, delta, A, B, C, D, z, delta_bias)
    needs = [bool(n) and t is not None for n, t in zip(ctx.needs_input_grad[:len(_INPUTS)], inputs)]
    if not ctx.return_last_state or dlast is None or dlast.numel() == 0:
        dlast = None
    if dy is None:
        dy = torch.zeros_like(u)
    grads = selective_scan_bwd(dy, dlast, u, delta, A, B, C, D, z, delta_bias, cu_seqlens, ckpt, delta_softplus,
                               ckpt_tile, torch.are_deterministic_algorithms_enabled(), needs)
    grads = [g if n else None for g, n in zip(grads, needs)]
    return (*grads, None, None, None, None)


torch.library.register_autograd("flashssm::selective_scan_fwd", _backward, setup_context=_setup_context)


class SelectiveScanFunction(torch.autograd.Function):
    """selective_scan's autograd in eager mode: the launches of the custom ops above without their
    dispatch (a few hundred microseconds of host time a call; see ops/ssd/autograd.py's
    SSDScanFunction). torch.compile traces the custom op instead. apply(offsets, ckpt_tile,
    return_last_state, u, delta, A, B, C, D, z, delta_bias, delta_softplus, cu_seqlens, key, plan) returns y, or
    (y, last_state); offsets: cu_seqlens' host values (validation's), or None. `plan`: the forward's steps as a call
    of this signature recorded them (`_runtime.Prepared`, its `extra` the ckpt_tile), replayed; else the whole forward
    runs, recorded under `key` (None: not). The backward of a call with a key is recorded and replayed too, under the
    forward's key, the incoming gradients' and the stored states' signatures and the gradients wanted."""

    @staticmethod
    def forward(ctx, offsets, ckpt_tile, return_last_state, u, delta, A, B, C, D, z, delta_bias, delta_softplus,
                cu_seqlens, key=None, plan=None):
        from flashssm.ops.selective_scan.scan import plan_backward, scan_forward

        inputs = (u, delta, A, B, C, D, z, delta_bias)
        out = plan.run(inputs) if plan is not None else None
        seq_index = _seq_index(cu_seqlens, u)
        if out is not None:
            y, last, ckpt = out
        else:
            num_seqs = None if offsets is None else len(offsets) - 1
            # where the forward compiles, the backward's kernels compile beside it (`_runtime.plan_ahead`)
            deterministic = torch.are_deterministic_algorithms_enabled()
            planner = lambda: plan_backward(u, delta, A, B, C, D, z, delta_bias, delta_softplus,  # noqa: E731
                                            ckpt_tile=ckpt_tile, seq_index=seq_index, num_seqs=num_seqs,
                                            return_last_state=return_last_state, offsets=offsets,
                                            deterministic=deterministic)
            with (_runtime.on_device(u.device), _runtime.compiling_ahead(planner),
                  _runtime.Recording(key, inputs, _training_switches, extra=ckpt_tile, ops=True) as rec):
                y, last, ckpt = scan_forward(u, delta, A, B, C, D, z, delta_bias, delta_softplus,
                                             seq_index=seq_index, num_seqs=num_seqs,
                                             return_last_state=return_last_state, ckpt_tile=ckpt_tile,
                                             offsets=offsets)
                rec.outputs = (y, last, ckpt)
        ctx.save_for_backward(u, delta, A, B, C, D, z, delta_bias, ckpt)
        ctx.seq_index, ctx.offsets, ctx.delta_softplus, ctx.ckpt_tile = seq_index, offsets, delta_softplus, ckpt_tile
        ctx.return_last_state, ctx.key = return_last_state, key
        return (y, last) if return_last_state else y

    @staticmethod
    @once_differentiable  # (a second derivative through the kernels raises, rather than coming out as zero)
    def backward(ctx, dy, dlast=None):
        from flashssm.ops.selective_scan.scan import scan_backward

        u, delta, A, B, C, D, z, delta_bias, ckpt = ctx.saved_tensors
        ckpt = ckpt.contiguous()  # (made so by the forward; a caller's saved-tensor hooks may return another layout)
        inputs = (u, delta, A, B, C, D, z, delta_bias)
        needs = [bool(n) and t is not None for n, t in zip(ctx.needs_input_grad[3:11], inputs)]
        if dy is None:
            dy = torch.zeros_like(u)
        dlast = dlast if ctx.return_last_state else None
        # a backward whose key an earlier one recorded replays its steps (its configuration and argument lists gave
        # the same answers then); the saved inputs are in the key, as ssd_scan's backward says why
        tensors = (dy, dlast, *inputs, ckpt)
        key = _runtime.backward_key(ctx.key, tensors, needs)
        grads = _runtime.replay(key, tensors)
        if grads is None:
            with (_runtime.on_device(u.device),
                  _runtime.Recording(key, tensors, _training_switches, ops=True) as rec):
                grads = scan_backward(dy, dlast, u, delta, A, B, C, D, z, delta_bias, ctx.delta_softplus, ckpt=ckpt,
                                      ckpt_tile=ctx.ckpt_tile, seq_index=ctx.seq_index,
                                      deterministic=torch.are_deterministic_algorithms_enabled(),
                                      offsets=ctx.offsets)
                rec.outputs = tuple(grads)
        grads = [g if n else None for g, n in zip(grads, needs)]
        return (None, None, None, *grads, None, None, None, None)


def _training_switches() -> tuple:
    """What a training call's Python reads: the scan module's switches and tuning constants (the forward's and the
    backward's configurations) and the deterministic mode (the backward's sums). A prepared training forward, and a
    prepared backward, replay only while they keep their values."""
    from flashssm.ops.selective_scan import scan

    return _runtime.module_switches(scan), torch.are_deterministic_algorithms_enabled()


__all__ = ["selective_scan_fwd", "selective_scan_bwd", "SelectiveScanFunction"]
