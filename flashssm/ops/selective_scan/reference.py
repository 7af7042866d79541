"""Plain-PyTorch references for Mamba-1's selective scan and its one-token step.

Per channel d, with a state h of size dstate (shared/SEMANTICS.md):

    delta_t = softplus(delta_t + delta_bias)            (bias and softplus each optional)
    h_t     = exp(delta_t * A_d) * h_{t-1} + delta_t * B_t * u_t
    y_t     = <h_t, C_t> + D_d * u_t ;  y_t = y_t * silu(z_t)   (if z)

B and C are shared by all channels, (batch, dstate, seqlen), or grouped, (batch, ngroups, dstate,
seqlen) with channel d reading group d // (dim // ngroups). Arithmetic is float32 for
fp16/bf16/fp32 inputs and float64 for float64 inputs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from flashssm.ops.checks import check_selective_scan, check_selective_scan_step


def compute_dtype(u: torch.Tensor) -> torch.dtype:
    return torch.float64 if u.dtype == torch.float64 else torch.float32


def process_delta(delta, delta_bias, delta_softplus: bool, dtype: torch.dtype) -> torch.Tensor:
    """delta + delta_bias (over the channel dimension, dim 1), then softplus."""
    delta = delta.to(dtype)
    if delta_bias is not None:
        shape = [1, -1] + [1] * (delta.dim() - 2)
        delta = delta + delta_bias.to(dtype).view(shape)
    return F.softplus(delta) if delta_softplus else delta


def per_channel(t: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """B or C at one step, (batch, dstate) or (batch, ngroups, dstate) -> (batch, dim or 1, dstate)."""
    t = t.to(dtype)
    if t.dim() == 2:
        return t[:, None, :]
    return t.repeat_interleave(dim // t.shape[1], dim=1)


def skip_and_gate(y, u, D, z, dtype: torch.dtype) -> torch.Tensor:
    """y + D u, then y * silu(z), cast to u's dtype. u, y, z: (batch, dim, ...)."""
    if D is not None:
        shape = [1, -1] + [1] * (u.dim() - 2)
        y = y + u.to(dtype) * D.to(dtype).view(shape)
    if z is not None:
        y = y * F.silu(z.to(dtype))
    return y.to(u.dtype)


def selective_scan_reference(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                             return_last_state=False, *, cu_seqlens=None):
    """Step-by-step selective scan.

    u, delta, z: (batch, dim, seqlen); A: (dim, dstate); B, C: (batch, dstate, seqlen) or
    (batch, ngroups, dstate, seqlen); D, delta_bias: (dim,).
    cu_seqlens: (num_seqs + 1,) offsets of sequences packed along seqlen (batch 1); each starts
        from a zero state.
    Returns y (batch, dim, seqlen) in u's dtype, and with return_last_state also the last state
    (batch or num_seqs, dim, dstate) in the compute dtype (float32, or float64 for float64 inputs).
    """
    cu = check_selective_scan(u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias, delta_softplus=delta_softplus,
                              return_last_state=return_last_state, cu_seqlens=cu_seqlens, allow_float64=True)
    return selective_scan_checked(u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias, delta_softplus=delta_softplus,
                                  return_last_state=return_last_state, cu=cu)


def selective_scan_checked(u, delta, A, B, C, *, D=None, z=None, delta_bias=None, delta_softplus=False,
                           return_last_state=False, cu=None, initial_state=None):
    """`selective_scan_reference` on inputs already validated; cu: cu_seqlens' values on the host. initial_state
    (batch, dim, dstate): the state entering the first token instead of zeros (a long sequence run in pieces, each
    from the last state of the one before, gives the whole sequence's result; not with cu)."""
    if cu is not None and initial_state is not None:
        raise ValueError("selective_scan_checked: initial_state is for one sequence a row, not with cu_seqlens")
    if cu is not None:  # each packed sequence on its own
        parts = [selective_scan_checked(u[..., s:e], delta[..., s:e], A, B[..., s:e], C[..., s:e], D=D,
                                        z=None if z is None else z[..., s:e], delta_bias=delta_bias,
                                        delta_softplus=delta_softplus, return_last_state=True)
                 for s, e in zip(cu, cu[1:])]
        y = torch.cat([p[0] for p in parts], dim=-1)
        return (y, torch.cat([p[1] for p in parts])) if return_last_state else y
    cdt = compute_dtype(u)
    batch, dim, seqlen = u.shape
    dstate = A.shape[1]
    dlt = process_delta(delta, delta_bias, delta_softplus, cdt)  # [batch, dim, seqlen]
    uf, Af = u.to(cdt), A.to(cdt)
    state = uf.new_zeros(batch, dim, dstate) if initial_state is None else initial_state.to(cdt)
    outputs = []
    for t in range(seqlen):
        Bt = per_channel(B[..., t], dim, cdt)  # [batch, dim or 1, dstate]
        Ct = per_channel(C[..., t], dim, cdt)
        state = torch.exp(dlt[:, :, t, None] * Af) * state + (dlt[:, :, t] * uf[:, :, t])[..., None] * Bt
        outputs.append((state * Ct).sum(-1))
    y = torch.stack(outputs, dim=-1) if outputs else uf.new_zeros(batch, dim, 0)
    y = skip_and_gate(y, u, D, z, cdt)
    return (y, state) if return_last_state else y


def selective_scan_step_reference(state, u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                                  state_batch_indices=None):
    """One token of the selective scan; `state` is updated in place.

    state: (cache_batch, dim, dstate); u, delta, z: (batch, dim); A: (dim, dstate);
    B, C: (batch, dstate) or (batch, ngroups, dstate); D, delta_bias: (dim,);
    state_batch_indices: (batch,) cache rows, negative for padding rows (state untouched, y zero).
    Returns y: (batch, dim) in u's dtype.
    """
    check_selective_scan_step(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                              delta_softplus=delta_softplus, state_batch_indices=state_batch_indices,
                              allow_float64=True)
    return selective_scan_step_checked(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                       delta_softplus=delta_softplus, state_batch_indices=state_batch_indices)


def selective_scan_step_checked(state, u, delta, A, B, C, *, D=None, z=None, delta_bias=None, delta_softplus=False,
                                state_batch_indices=None, out=None):
    """`selective_scan_step_reference` on inputs already validated."""
    cdt = compute_dtype(u)
    batch, dim = u.shape
    rows = torch.arange(batch, device=u.device) if state_batch_indices is None else state_batch_indices.long()
    live = torch.nonzero(rows >= 0).squeeze(1)
    cache_rows = rows[live]
    dlt = process_delta(delta[live], delta_bias, delta_softplus, cdt)  # [live, dim]
    us = u[live]
    Bt = per_channel(B[live], dim, cdt)
    Ct = per_channel(C[live], dim, cdt)
    new = torch.exp(dlt[..., None] * A.to(cdt)) * state[cache_rows].to(cdt) + (dlt * us.to(cdt))[..., None] * Bt
    y = skip_and_gate((new * Ct).sum(-1), us, D, None if z is None else z[live], cdt)
    state[cache_rows] = new.to(state.dtype)
    out = torch.zeros_like(u) if out is None else out.zero_()
    out[live] = y.to(out.dtype)
    return out
