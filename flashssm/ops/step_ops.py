"""The decoding steps (`ssd_step`, `selective_scan_step`, `causal_conv1d_update`) as `torch.library` custom ops, the form
a call takes while torch.compile traces it: Inductor calls the op as it is, and its kernel reads the strides of the
tensors it is given at run time. Traced into the graph instead, a launch carries the strides the trace saw as
constants, while Inductor keeps only the order of a traced kernel's input strides; the conv's traced kernels gave a
compiled Mamba-2 model NaN gradients that way (benchmarks/notes/hardening.md, seventy-first session). Which form:
`COMPILE_FORM` below.

Each op updates its state in place and writes y into a buffer the caller gives it (both declared mutated), returning
nothing, so a caller's `out` and a strided slice of a cache work as they do eagerly. The values of the cache-row indices
are checked inside the op, when it runs (not while a CUDA graph is captured): the trace sees no values.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from flashssm import _runtime
from flashssm.ops.checks import check_state_batch_indices

# "custom_op": the ops below; "kernel": the launches traced into torch.compile's graph, strides fixed by the trace (and
# the indices' values unchecked: the trace has none).
COMPILE_FORM = "custom_op"


def compiled_form() -> bool:
    """Whether a call now goes through the ops below: torch.compile traces it and COMPILE_FORM says so."""
    return torch.compiler.is_compiling() and COMPILE_FORM == "custom_op"


def _check_rows(indices, batch, state, name="state_batch_indices", state_name="state"):
    if indices is not None:
        check_state_batch_indices(indices, batch, state.shape[0], state.device, name, state_name)


@torch.library.custom_op("flashssm::ssd_step_", mutates_args=("state", "y"))
def ssd_step_op(state: Tensor, x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Optional[Tensor],
                z: Optional[Tensor], dt_bias: Optional[Tensor], dt_softplus: bool, dt_min: float, dt_max: float,
                state_batch_indices: Optional[Tensor], y: Tensor) -> None:
    """ssd_step on validated inputs, y written into `y`."""
    from flashssm.ops.ssd.step import ssd_step_kernel

    _check_rows(state_batch_indices, x.shape[0], state)
    with _runtime.on_device(x.device):
        ssd_step_kernel((dt_min, dt_max), state, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                        state_batch_indices=state_batch_indices, out=y)


@ssd_step_op.register_fake
def _(state, x, dt, A, B, C, D, z, dt_bias, dt_softplus, dt_min, dt_max, state_batch_indices, y):
    return None


@torch.library.custom_op("flashssm::selective_scan_step_", mutates_args=("state", "y"))
def selective_scan_step_op(state: Tensor, u: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor,
                           D: Optional[Tensor], z: Optional[Tensor], delta_bias: Optional[Tensor],
                           delta_softplus: bool, state_batch_indices: Optional[Tensor], y: Tensor) -> None:
    """selective_scan_step on validated inputs, y written into `y`."""
    from flashssm.ops.selective_scan.step import selective_scan_step_kernel

    _check_rows(state_batch_indices, u.shape[0], state)
    with _runtime.on_device(u.device):
        selective_scan_step_kernel(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                   delta_softplus=delta_softplus, state_batch_indices=state_batch_indices, out=y)


@selective_scan_step_op.register_fake
def _(state, u, delta, A, B, C, D, z, delta_bias, delta_softplus, state_batch_indices, y):
    return None


@torch.library.custom_op("flashssm::causal_conv1d_update_", mutates_args=("conv_state", "y"))
def causal_conv1d_update_op(x: Tensor, conv_state: Tensor, weight: Tensor, bias: Optional[Tensor], silu: bool,
                            conv_state_indices: Optional[Tensor], y: Tensor) -> None:
    """causal_conv1d_update on validated inputs, y written into `y`."""
    from flashssm.ops.conv1d.conv import conv1d_update

    _check_rows(conv_state_indices, x.shape[0], conv_state, "conv_state_indices", "conv_state")
    conv1d_update(x, conv_state, weight, bias, silu, conv_state_indices=conv_state_indices, out=y)


@causal_conv1d_update_op.register_fake
def _(x, conv_state, weight, bias, silu, conv_state_indices, y):
    return None


__all__ = ["COMPILE_FORM", "compiled_form", "ssd_step_op", "selective_scan_step_op", "causal_conv1d_update_op"]
