"""ssd_step: one decoding token of the SSD recurrence, the state updated in place, in one launch.

One program per (block of headdim, head, batch row) updates its [BLOCK_P, dstate] slice of the
state: it reads the slice once, writes it once, and everything else it reads (x, dt, B, C, D, z)
is a few hundred bytes. The step is bound by the state's bytes at large batch and by launch
latency at small batch, so the block size is chosen from the batch (more, smaller programs when
there are few rows) and never tuned at call time: autotuning would repeat the in-place update.

Nothing here synchronises with the host or allocates except the output (`out=` avoids even
that), so the step can be captured in a CUDA graph.
"""

from __future__ import annotations

import triton
import triton.language as tl

from flashssm import _runtime
from flashssm.ops.triton_common import cache_row, process_dt, silu


@triton.jit
def _ssd_step_kernel(
    state_ptr, x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, z_ptr, dt_bias_ptr, idx_ptr, y_ptr,
    headdim, dstate, heads_per_group,
    stride_s_b, stride_s_h, stride_s_p, stride_s_n,
    stride_x_b, stride_x_h, stride_x_p,
    stride_dt_b, stride_dt_h,
    stride_B_b, stride_B_g, stride_B_n,
    stride_C_b, stride_C_g, stride_C_n,
    stride_z_b, stride_z_h, stride_z_p,
    stride_y_b, stride_y_h, stride_y_p,
    stride_D_h, stride_D_p,
    dt_lo, dt_hi,
    BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
    HAS_D: tl.constexpr, HAS_Z: tl.constexpr, HAS_DT_BIAS: tl.constexpr, DT_SOFTPLUS: tl.constexpr,
    HAS_INDICES: tl.constexpr,
):
    i_p = tl.program_id(0)
    i_h = tl.program_id(1)
    i_b = tl.program_id(2).to(tl.int64)
    g = i_h // heads_per_group

    o_p = i_p * BLOCK_P + tl.arange(0, BLOCK_P)
    o_n = tl.arange(0, BLOCK_N)
    m_p = o_p < headdim
    m_n = o_n < dstate
    row, live = cache_row(idx_ptr, i_b, o_p, HAS_INDICES)  # a padding row: no state traffic, y = 0
    m_state = (m_p & live)[:, None] & m_n[None, :]

    dt = tl.load(dt_ptr + i_b * stride_dt_b + i_h * stride_dt_h).to(tl.float32)
    dt_bias = 0.0
    if HAS_DT_BIAS:
        dt_bias = tl.load(dt_bias_ptr + i_h).to(tl.float32)
    dt = process_dt(dt, dt_bias, dt_lo, dt_hi, HAS_DT_BIAS, DT_SOFTPLUS)
    decay = tl.exp(dt * tl.load(A_ptr + i_h).to(tl.float32))

    b_x = tl.load(x_ptr + i_b * stride_x_b + i_h * stride_x_h + o_p * stride_x_p, mask=m_p, other=0.0).to(tl.float32)
    b_B = tl.load(B_ptr + i_b * stride_B_b + g * stride_B_g + o_n * stride_B_n, mask=m_n, other=0.0).to(tl.float32)
    b_C = tl.load(C_ptr + i_b * stride_C_b + g * stride_C_g + o_n * stride_C_n, mask=m_n, other=0.0).to(tl.float32)
    # [BLOCK_P, BLOCK_N]; row * stride passes 2^31 in large caches
    p_state = (state_ptr + row * stride_s_b + i_h.to(tl.int64) * stride_s_h
               + o_p[:, None].to(tl.int64) * stride_s_p + o_n[None, :] * stride_s_n)
    b_state = tl.load(p_state, mask=m_state, other=0.0).to(tl.float32)
    b_state = b_state * decay + (dt * b_x)[:, None] * b_B[None, :]
    tl.store(p_state, b_state.to(state_ptr.dtype.element_ty), mask=m_state)

    b_y = tl.sum(b_state * b_C[None, :], axis=1)  # [BLOCK_P]
    if HAS_D:
        b_y += tl.load(D_ptr + i_h * stride_D_h + o_p * stride_D_p, mask=m_p, other=0.0).to(tl.float32) * b_x
    if HAS_Z:
        b_z = tl.load(z_ptr + i_b * stride_z_b + i_h * stride_z_h + o_p * stride_z_p, mask=m_p, other=0.0)
        b_y *= silu(b_z.to(tl.float32))
    b_y = tl.where(live, b_y, 0.0)
    tl.store(y_ptr + i_b * stride_y_b + i_h * stride_y_h + o_p * stride_y_p, b_y.to(y_ptr.dtype.element_ty), mask=m_p)


@_runtime.cached(maxsize=256)
def pick_block_p(batch: int, nheads: int, headdim: int, dstate: int, num_sms: int) -> int:
    """Rows of headdim per program: 512 state elements (one warp's worth, benchmarks/notes/steps.md),
    fewer while the grid has under ~8 programs per SM (small batches are latency-bound)."""
    block_n = _runtime.next_power_of_2(dstate)
    block_p = max(1, min(_runtime.next_power_of_2(headdim), 512 // block_n))
    while block_p > 2 and batch * nheads * _runtime.cdiv(headdim, block_p) < 8 * num_sms:
        block_p //= 2
    return block_p


def supported(dstate: int) -> str | None:
    return None if dstate <= 256 else f"dstate {dstate} > 256"


def ssd_step_kernel(limit, state, x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False,
                    state_batch_indices=None, out=None, block_p=None, num_warps=None):
    """Launch the step on validated inputs (`limit` is the checked dt_limit); returns y.
    block_p and num_warps override the table (for tuning)."""
    batch, nheads, headdim = x.shape
    ngroups, dstate = B.shape[1], B.shape[2]
    y = out if out is not None else _runtime.empty(x.shape, x.dtype, x.device)
    block_n = _runtime.next_power_of_2(dstate)
    # under the interpreter programs run one by one: size the grid for one "SM" (fewer programs is faster)
    block_p = block_p or pick_block_p(batch, nheads, headdim, dstate, _runtime.sm_count(x.device, on_cpu=1))
    stride_D = (0, 0) if D is None else (D.stride(0), D.stride(1) if D.dim() == 2 else 0)
    z_arg = z if z is not None else x
    grid = (_runtime.cdiv(headdim, block_p), nheads, batch)
    _runtime.launch(_ssd_step_kernel, grid, (
        state, x, dt, A, B, C, D if D is not None else A, z_arg, dt_bias if dt_bias is not None else A,
        state_batch_indices if state_batch_indices is not None else A, y,
        headdim, dstate, nheads // ngroups,
        *state.stride(), *x.stride(), *dt.stride(), *B.stride(), *C.stride(), *z_arg.stride(), *y.stride(),
        *stride_D, float(limit[0]), float(limit[1])), state.device,
        BLOCK_P=block_p, BLOCK_N=block_n, HAS_D=D is not None, HAS_Z=z is not None,
        HAS_DT_BIAS=dt_bias is not None, DT_SOFTPLUS=dt_softplus, HAS_INDICES=state_batch_indices is not None,
        num_warps=num_warps or max(1, min(8, block_p * block_n // 512)),
    )
    return y


__all__ = ["ssd_step_kernel", "pick_block_p", "supported"]
