"""ssd_scan as `torch.library` custom ops (`flashssm::ssd_scan_fwd`, `flashssm::ssd_scan_bwd`)
with fake implementations and a registered autograd formula, so that autograd runs the fused
backward and `torch.compile` traces a model through ssd_scan without a graph break.

The ops take the same arguments as ssd_scan, with the optional tensors as `Tensor?`, dt_limit as
two floats and state_dtype as a name. They return tensors only: an absent output (final states
not asked for, y before the gate when there is no gate) is an empty tensor.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from flashssm import _runtime

_STATE_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def state_dtype_name(dtype: torch.dtype | None) -> str:
    return {v: k for k, v in _STATE_DTYPES.items()}[dtype or torch.float32]


def _dims(x, dt, A, B, C, D, z, dt_bias, initial_states, cu_seqlens, chunk_size, dt_softplus, dt_lo, dt_hi,
          state_dtype):
    from flashssm.ops.checks import check_ssd_scan

    # float64 is admitted here (not by ssd_scan) so that gradcheck can run the kernels under the interpreter
    return check_ssd_scan(x, dt, A, B, C, chunk_size=chunk_size, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                          dt_limit=(dt_lo, dt_hi), initial_states=initial_states, cu_seqlens=cu_seqlens,
                          state_dtype=_STATE_DTYPES[state_dtype], allow_float64=True)


@torch.library.custom_op("flashssm::ssd_scan_fwd", mutates_args=())
def ssd_scan_fwd(x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Optional[Tensor], z: Optional[Tensor],
                 dt_bias: Optional[Tensor], initial_states: Optional[Tensor], cu_seqlens: Optional[Tensor],
                 chunk_size: int, dt_softplus: bool, dt_lo: float, dt_hi: float, return_final_states: bool,
                 state_dtype: str, store_ypre: bool) -> tuple[Tensor, Tensor, Tensor]:
    """(y, final_states or empty, y before the gate or empty)."""
    from flashssm.ops.ssd.forward import launch

    dims = _dims(x, dt, A, B, C, D, z, dt_bias, initial_states, cu_seqlens, chunk_size, dt_softplus, dt_lo, dt_hi,
                 state_dtype)
    y, final, ypre, _ = launch(dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                               initial_states=initial_states, return_final_states=return_final_states,
                               state_dtype=_STATE_DTYPES[state_dtype], store_ypre=store_ypre)
    return y, final if final is not None else x.new_empty(0), ypre if ypre is not None else x.new_empty(0)


@ssd_scan_fwd.register_fake
def _(x, dt, A, B, C, D, z, dt_bias, initial_states, cu_seqlens, chunk_size, dt_softplus, dt_lo, dt_hi,
      return_final_states, state_dtype, store_ypre):
    batch, _, nheads, headdim = x.shape
    num_seqs = cu_seqlens.shape[0] - 1 if cu_seqlens is not None else batch
    final = (x.new_empty((num_seqs, nheads, headdim, B.shape[-1]), dtype=_STATE_DTYPES[state_dtype])
             if return_final_states else x.new_empty(0))
    # contiguous, as the launch allocates them, whatever x's layout (torch.compile plans its buffers by these strides:
    # tests/ops/test_custom_op_layouts.py)
    ypre = x.new_empty(x.shape) if store_ypre and z is not None else x.new_empty(0)
    return x.new_empty(x.shape), final, ypre


@torch.library.custom_op("flashssm::ssd_scan_bwd", mutates_args=())
def ssd_scan_bwd(dy: Tensor, dfinal: Optional[Tensor], x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor,
                 D: Optional[Tensor], z: Optional[Tensor], ypre: Optional[Tensor], dt_bias: Optional[Tensor],
                 initial_states: Optional[Tensor], cu_seqlens: Optional[Tensor], chunk_size: int, dt_softplus: bool,
                 dt_lo: float, dt_hi: float, state_dtype: str, deterministic: bool,
                 needs: list[bool]) -> list[Tensor]:
    """[dx, ddt, dA, dB, dC, dD, dz, ddt_bias, dinitial_states]; empty where the input is absent or
    `needs` (one flag per input, in that order) says its gradient is not wanted."""
    from flashssm.ops.ssd.backward import ssd_backward

    from flashssm.ops.checks import FLOAT_DTYPES_REF, check_optional, check_tensor

    dims = _dims(x, dt, A, B, C, D, z, dt_bias, initial_states, cu_seqlens, chunk_size, dt_softplus, dt_lo, dt_hi,
                 state_dtype)
    like_x = [(n, s) for n, s in zip(("batch", "seqlen", "nheads", "headdim"), x.shape)]
    check_tensor("dy", dy, like_x, FLOAT_DTYPES_REF, x.device)
    check_optional("ypre", ypre, like_x, (x.dtype,), x.device)
    check_optional("dfinal", dfinal, [("num_seqs", dims.num_seqs), ("nheads", dims.nheads), ("headdim", dims.headdim),
                                      ("dstate", dims.dstate)], FLOAT_DTYPES_REF, x.device)
    if z is not None and ypre is None:
        raise ValueError("ypre (y before the z gate, from ssd_scan_fwd) is required when z is given")
    grads = ssd_backward(dims, dy, dfinal, x, dt, A, B, C, D=D, z=z, ypre=ypre, dt_bias=dt_bias,
                         dt_softplus=dt_softplus, initial_states=initial_states,
                         state_dtype=_STATE_DTYPES[state_dtype], deterministic=deterministic, needs=needs)
    return [g if g is not None else x.new_empty(0) for g in grads]


@ssd_scan_bwd.register_fake
def _(dy, dfinal, x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, cu_seqlens, chunk_size, dt_softplus, dt_lo,
      dt_hi, state_dtype, deterministic, needs):
    inputs = [x, dt, A, B, C, D, z, dt_bias, initial_states]
    # contiguous, as ssd_backward allocates them (see the forward's fake)
    return [t.new_empty(t.shape) if t is not None and need else x.new_empty(0) for t, need in zip(inputs, needs)]


_INPUTS = ("x", "dt", "A", "B", "C", "D", "z", "dt_bias", "initial_states")


def _setup_context(ctx, inputs, output):
    (x, dt, A, B, C, D, z, dt_bias, initial_states, cu_seqlens, chunk_size, dt_softplus, dt_lo, dt_hi,
     return_final_states, state_dtype, store_ypre) = inputs
    ypre = output[2] if z is not None else None
    ctx.save_for_backward(x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, cu_seqlens)
    ctx.options = (chunk_size, dt_softplus, dt_lo, dt_hi, state_dtype)
    ctx.return_final_states = return_final_states


def _backward(ctx, dy, dfinal, _dypre):
    x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, cu_seqlens = ctx.saved_tensors
    needs = [bool(n) for n in ctx.needs_input_grad[:len(_INPUTS)]]
    inputs = (x, dt, A, B, C, D, z, dt_bias, initial_states)
    needs = [n and t is not None for n, t in zip(needs, inputs)]
    if not ctx.return_final_states or dfinal is None or dfinal.numel() == 0:
        dfinal = None
    if dy is None:
        dy = torch.zeros_like(x)
    grads = ssd_scan_bwd(dy, dfinal, x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, cu_seqlens,
                         *ctx.options, torch.are_deterministic_algorithms_enabled(), needs)
    grads = [g if n else None for g, n in zip(grads, needs)]
    return (*grads, None, None, None, None, None, None, None, None)


torch.library.register_autograd("flashssm::ssd_scan_fwd", _backward, setup_context=_setup_context)


class SSDScanFunction(torch.autograd.Function):
    """ssd_scan's autograd in eager mode: the same launches as the custom ops above, without their
    dispatch. The custom op's autograd wrapper costs ~250 us of host time a call and its backward op
    ~120 us more (benchmarks/host_custom_op.py on the GPU machine), as much as the GPU's whole
    forward + backward at 1x2K; torch.compile still traces the custom op (ops/ssd/__init__.py picks).
    apply(dims, state_dtype, return_final_states, x, dt, A, B, C, D, z, dt_bias, initial_states,
    dt_softplus, key, plan) returns y, or (y, final_states). `plan`: the forward's launches as a call of this signature
    recorded them (`_runtime.Prepared`), replayed; else the whole forward runs, recorded under `key` (None: not). The
    backward of a call with a key is recorded and replayed too (`_runtime.backward_key`): its steps, torch calls
    included, under the forward's key, the incoming gradients' signatures and which gradients are wanted."""

    @staticmethod
    def forward(ctx, dims, state_dtype, return_final_states, x, dt, A, B, C, D, z, dt_bias, initial_states,
                dt_softplus, key=None, plan=None):
        inputs = (x, dt, A, B, C, D, z, dt_bias, initial_states)
        out = plan.run(inputs) if plan is not None else None
        if out is not None:
            y, final, ypre, states = out
        else:
            with _runtime.Recording(key, inputs, _training_switches, extra=dims) as rec:
                y, final, ypre, states = _forward(ctx, dims, state_dtype, return_final_states, dt_softplus, *inputs)
                rec.outputs = (y, final, ypre, states)
        # (the states through save_for_backward too, an intermediate tensor: freed once the backward has run)
        ctx.save_for_backward(x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, states)
        ctx.dims, ctx.state_dtype, ctx.dt_softplus = dims, state_dtype, dt_softplus
        ctx.return_final_states, ctx.key = return_final_states, key
        return (y, final) if return_final_states else y

    @staticmethod
    @once_differentiable  # (a second derivative through the kernels raises, rather than coming out as zero)
    def backward(ctx, dy, dfinal=None):
        from flashssm.ops.ssd.backward import ssd_backward

        x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, states = ctx.saved_tensors
        if states is not None:  # (made contiguous by the forward; a caller's saved-tensor hooks may return another
            states = states.contiguous()  # layout, and the backward's launches read it as made)
        inputs = (x, dt, A, B, C, D, z, dt_bias, initial_states)
        needs = [bool(n) and t is not None for n, t in zip(ctx.needs_input_grad[3:12], inputs)]
        if dy is None:
            dy = torch.zeros_like(x)
        dfinal = dfinal if ctx.return_final_states else None
        # a backward whose key an earlier one recorded replays its steps: its Python (the form, configurations,
        # argument lists, launch keys) gave the same answers then. Every tensor it reads is in the key, the saved inputs
        # too: a caller's saved-tensor hooks (save_on_cpu, offloading) may give them back in another layout than the
        # forward's key holds, and a replay launches with the recorded strides
        tensors = (dy, dfinal, x, dt, A, B, C, D, z, ypre, dt_bias, initial_states, states)
        key = _runtime.backward_key(ctx.key if PREPARED_BACKWARD else None, tensors, needs)
        grads = _runtime.replay(key, tensors)
        if grads is None:
            with _runtime.Recording(key, tensors, _training_switches, ops=True) as rec:
                grads = ssd_backward(ctx.dims, dy, dfinal, x, dt, A, B, C, D=D, z=z, ypre=ypre, dt_bias=dt_bias,
                                     dt_softplus=ctx.dt_softplus, initial_states=initial_states,
                                     state_dtype=ctx.state_dtype, needs=needs, states=states)
                rec.outputs = tuple(grads)
        grads = [g if n else None for g, n in zip(grads, needs)]
        return (None, None, None, *grads, None, None, None)


def _forward(ctx, dims, state_dtype, return_final_states, dt_softplus, x, dt, A, B, C, D, z, dt_bias, initial_states):
    """SSDScanFunction's forward launches: (y, final states or None, y before the gate or None, the states entering the
    chunks for the backward or None)."""
    from flashssm.ops.ssd.backward import plan_backward
    from flashssm.ops.ssd.backward_chain import forward_states
    from flashssm.ops.ssd.forward import launch, pick_config

    cfg = pick_config(dims, x.dtype, x.device)
    # the forward also stores the states entering the chunks, which the backward would recompute (small calls, and the
    # tiles where that holds no more memory than mamba_ssm's autograd: `forward_states`)
    states, state_chunk = forward_states(dims, x, B, C, z, state_dtype, cfg) or (None, None)
    # where the forward compiles, the backward's kernels compile beside it (`_runtime.plan_ahead`)
    planner = lambda: plan_backward(  # noqa: E731
        dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus, initial_states=initial_states,
        state_dtype=state_dtype, return_final_states=return_final_states, states=states,
        needs=[bool(n) and t is not None
               for n, t in zip(ctx.needs_input_grad[3:12], (x, dt, A, B, C, D, z, dt_bias, initial_states))])
    with _runtime.compiling_ahead(planner):
        y, final, ypre, _ = launch(dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                                   initial_states=initial_states, return_final_states=return_final_states,
                                   state_dtype=state_dtype, store_ypre=z is not None, config=cfg, states=states,
                                   state_chunk=state_chunk)
    return y, final, ypre, states


# A recorded training call's backward replays its steps (`_runtime.backward_key`). False: its whole Python path every
# call, the forward's replay kept (A/B: benchmarks/ab_host_path.py).
PREPARED_BACKWARD = True


_switch_modules = None


def _training_switches() -> tuple:
    """What a training call's Python reads beside the inference forward's (`forward.prepared_switches`): the
    deterministic mode, and every switch and tuning constant of the backward's modules (`_runtime.module_switches`):
    they decide whether and how the forward stores the states for the backward (`backward_chain.forward_states`,
    which asks `use_tiles` and the tiles' chunk among others) and everything the backward does. A prepared training
    forward, and a prepared backward, replay only while they keep their values."""
    global _switch_modules
    if _switch_modules is None:
        from flashssm.ops.ssd import backward, backward_chain, backward_tiles, forward

        _switch_modules = forward, backward, backward_chain, backward_tiles
    forward = _switch_modules[0]
    return (forward.prepared_switches(), torch.are_deterministic_algorithms_enabled(),
            _runtime.module_switches(*_switch_modules[1:]))


__all__ = ["ssd_scan_fwd", "ssd_scan_bwd", "state_dtype_name", "SSDScanFunction"]
