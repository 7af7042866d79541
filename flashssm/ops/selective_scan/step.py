"""selective_scan_step: one decoding token of Mamba-1's scan, the state updated in place, in one launch.

One program per (block of channels, batch row) reads its [BLOCK_D, dstate] slice of the state
and of A, and writes the state slice back: the bytes are the state's (A is shared by the batch
and stays in L2). Block sizes come from the shape, never from timing at call time (that would
repeat the in-place update). No host synchronisation, no allocation but the output: CUDA-graph safe.
"""

from __future__ import annotations

import triton
import triton.language as tl

from flashssm import _runtime
from flashssm.ops.triton_common import cache_row, process_delta, silu


@triton.jit
def _scan_step_kernel(
    state_ptr, u_ptr, delta_ptr, A_ptr, B_ptr, C_ptr, D_ptr, z_ptr, delta_bias_ptr, idx_ptr, y_ptr,
    dim, dstate, dims_per_group,
    stride_s_b, stride_s_d, stride_s_n,
    stride_u_b, stride_u_d,
    stride_delta_b, stride_delta_d,
    stride_A_d, stride_A_n,
    stride_B_b, stride_B_g, stride_B_n,
    stride_C_b, stride_C_g, stride_C_n,
    stride_z_b, stride_z_d,
    stride_y_b, stride_y_d,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DELTA_BIAS: tl.constexpr, DELTA_SOFTPLUS: tl.constexpr,
    HAS_INDICES: tl.constexpr,
):
    i_d = tl.program_id(0)
    i_b = tl.program_id(1).to(tl.int64)

    o_d = i_d * BLOCK_D + tl.arange(0, BLOCK_D)
    o_n = tl.arange(0, BLOCK_N)
    m_d = o_d < dim
    m_n = o_n < dstate
    m_dn = m_d[:, None] & m_n[None, :]
    row, live = cache_row(idx_ptr, i_b, o_d, HAS_INDICES)  # a padding row: no state traffic, y = 0
    o_g = (o_d // dims_per_group)[:, None]  # B and C's group of each channel (stride 0 when shared)

    b_u = tl.load(u_ptr + i_b * stride_u_b + o_d * stride_u_d, mask=m_d, other=0.0).to(tl.float32)
    b_delta = tl.load(delta_ptr + i_b * stride_delta_b + o_d * stride_delta_d, mask=m_d, other=0.0).to(tl.float32)
    bias = 0.0
    if HAS_DELTA_BIAS:
        bias = tl.load(delta_bias_ptr + o_d, mask=m_d, other=0.0).to(tl.float32)
    b_delta = process_delta(b_delta, bias, HAS_DELTA_BIAS, DELTA_SOFTPLUS)
    b_A = tl.load(A_ptr + o_d[:, None] * stride_A_d + o_n[None, :] * stride_A_n, mask=m_dn, other=0.0).to(tl.float32)
    b_B = tl.load(B_ptr + i_b * stride_B_b + o_g * stride_B_g + o_n[None, :] * stride_B_n, mask=m_dn,
                  other=0.0).to(tl.float32)
    b_C = tl.load(C_ptr + i_b * stride_C_b + o_g * stride_C_g + o_n[None, :] * stride_C_n, mask=m_dn,
                  other=0.0).to(tl.float32)

    # [BLOCK_D, BLOCK_N]; row * stride passes 2^31 in large caches
    p_state = state_ptr + row * stride_s_b + o_d[:, None].to(tl.int64) * stride_s_d + o_n[None, :] * stride_s_n
    m_state = m_dn & live[:, None]
    b_state = tl.load(p_state, mask=m_state, other=0.0).to(tl.float32)
    b_state = tl.exp(b_delta[:, None] * b_A) * b_state + (b_delta * b_u)[:, None] * b_B
    tl.store(p_state, b_state.to(state_ptr.dtype.element_ty), mask=m_state)

    b_y = tl.sum(b_state * b_C, axis=1)
    if HAS_D:
        b_y += tl.load(D_ptr + o_d, mask=m_d, other=0.0).to(tl.float32) * b_u
    if HAS_Z:
        b_y *= silu(tl.load(z_ptr + i_b * stride_z_b + o_d * stride_z_d, mask=m_d, other=0.0).to(tl.float32))
    b_y = tl.where(live, b_y, 0.0)
    tl.store(y_ptr + i_b * stride_y_b + o_d * stride_y_d, b_y.to(y_ptr.dtype.element_ty), mask=m_d)


@_runtime.cached(maxsize=256)
def pick_block_d(batch: int, dim: int, dstate: int, n_sms: int) -> int:
    """Channels per program: 512 state elements (one warp), fewer while the grid is under ~8 programs per SM."""
    block_n = _runtime.next_power_of_2(dstate)
    block_d = max(1, min(_runtime.next_power_of_2(dim), 512 // block_n))
    while block_d > 4 and batch * _runtime.cdiv(dim, block_d) < 8 * n_sms:
        block_d //= 2
    return block_d


def supported(dstate: int) -> str | None:
    return None if dstate <= 256 else f"dstate {dstate} > 256"


def _bc_strides(t):
    """(batch, group, state) strides of B or C; shared ones (batch, dstate) read group 0 for every channel."""
    return (t.stride(0), 0, t.stride(1)) if t.dim() == 2 else tuple(t.stride())


def selective_scan_step_kernel(state, u, delta, A, B, C, *, D=None, z=None, delta_bias=None, delta_softplus=False,
                               state_batch_indices=None, out=None, block_d=None, num_warps=None):
    """Launch the step on validated inputs; returns y (batch, dim). block_d, num_warps: tuning overrides."""
    batch, dim = u.shape
    dstate = state.shape[2]
    ngroups = 1 if B.dim() == 2 else B.shape[1]
    y = out if out is not None else _runtime.empty(u.shape, u.dtype, u.device)
    block_n = _runtime.next_power_of_2(dstate)
    block_d = block_d or pick_block_d(batch, dim, dstate, _runtime.sm_count(u.device, on_cpu=1))
    z_arg = z if z is not None else u
    grid = (_runtime.cdiv(dim, block_d), batch)
    _runtime.launch(_scan_step_kernel, grid, (
        state, u, delta, A, B, C, D if D is not None else A, z_arg, delta_bias if delta_bias is not None else A,
        state_batch_indices if state_batch_indices is not None else A, y,
        dim, dstate, dim // ngroups,
        *state.stride(), *u.stride(), *delta.stride(), *A.stride(), *_bc_strides(B), *_bc_strides(C),
        *z_arg.stride(), *y.stride()), state.device,
        BLOCK_D=block_d, BLOCK_N=block_n, HAS_D=D is not None, HAS_Z=z is not None,
        HAS_DELTA_BIAS=delta_bias is not None, DELTA_SOFTPLUS=delta_softplus,
        HAS_INDICES=state_batch_indices is not None,
        num_warps=num_warps or max(1, min(8, block_d * block_n // 512)),
    )
    return y


__all__ = ["selective_scan_step_kernel", "pick_block_d", "supported"]
