"""Plain-PyTorch references for the Mamba-2 SSD scan and its one-token step.

The recurrence (shared/SEMANTICS.md), per sequence and head, h: (headdim, dstate):

    h_t = exp(dt_t * A) * h_{t-1} + dt_t * x_t B_t^T
    y_t = h_t C_t + D * x_t ;   y_t = y_t * silu(z_t)   (if z)

- `ssd_scan_sequential` runs it token by token, as written: slow, and the ground truth.
- `ssd_scan_chunked` is the matrix ("state-space dual") form that the kernels implement: within a
  chunk of Q tokens, y = (C B^T ∘ L) (dt x) with L_ij = exp(sum_{j<k<=i} dt_k A); each chunk's
  own state; states handed from chunk to chunk; the incoming state's contribution C h. It is the
  CPU fallback of `flashssm.ssd_scan` and differentiable through autograd.
- `ssd_step_reference` is one token of the recurrence on a cache, updated in place.

Arithmetic is in float32 for fp16/bf16/fp32 inputs and in float64 for float64 inputs (the tests
run the references in float64). `state_dtype` rounds the states handed between chunks and the
returned final states, as a kernel that stores them in that precision would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from flashssm.ops.checks import SSDDims, check_ssd_scan, check_ssd_step

# Elements of the largest intra-chunk temporary, (chunks, Q, Q, nheads), built at once.
_BLOCK_ELEMENTS = 1 << 26


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def process_dt(dt, dt_bias, dt_softplus: bool, dt_limit: tuple[float, float], dtype: torch.dtype) -> torch.Tensor:
    """dt + dt_bias, softplus, clamp to dt_limit: the step size every token actually uses."""
    dt = dt.to(dtype)
    if dt_bias is not None:
        dt = dt + dt_bias.to(dtype)
    if dt_softplus:
        dt = F.softplus(dt)
    return dt.clamp(dt_limit[0], dt_limit[1])


def skip_and_gate(y, x, D, z, dtype: torch.dtype) -> torch.Tensor:
    """y + D x, then y * silu(z), cast to x's dtype. x, y, z: (..., nheads, headdim)."""
    if D is not None:
        Df = D.to(dtype)
        y = y + x.to(dtype) * (Df[:, None] if Df.dim() == 1 else Df)
    if z is not None:
        y = y * F.silu(z.to(dtype))
    return y.to(x.dtype)


def ssd_scan_sequential(x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False,
                        dt_limit=(0.0, math.inf), initial_states=None, cu_seqlens=None, state_dtype=None):
    """Token-by-token SSD scan.

    x: (batch, seqlen, nheads, headdim); dt: (batch, seqlen, nheads); A: (nheads,);
    B, C: (batch, seqlen, ngroups, dstate); D: (nheads,) or (nheads, headdim); z: like x;
    dt_bias: (nheads,); initial_states: (num_seqs, nheads, headdim, dstate);
    cu_seqlens: (num_seqs + 1,) with batch == 1.
    Returns (y like x, final_states (num_seqs, nheads, headdim, dstate) in state_dtype, or in the
    compute dtype when state_dtype is None).
    """
    dims = check_ssd_scan(x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus, dt_limit=dt_limit,
                          initial_states=initial_states, cu_seqlens=cu_seqlens, state_dtype=state_dtype,
                          allow_float64=True)
    cdt = compute_dtype(x)
    h, p, n = dims.nheads, dims.headdim, dims.dstate
    heads_per_group = h // dims.ngroups
    dtp = process_dt(dt, dt_bias, dt_softplus, dims.dt_limit, cdt)  # [batch, seqlen, nheads]
    xf, Af = x.to(cdt), A.to(cdt)
    Bh = B.to(cdt).repeat_interleave(heads_per_group, dim=2)  # [batch, seqlen, nheads, dstate]
    Ch = C.to(cdt).repeat_interleave(heads_per_group, dim=2)
    outputs, finals = [], []
    for s, (row, start, end) in enumerate(dims.sequences()):
        state = initial_states[s].to(cdt) if initial_states is not None else xf.new_zeros(h, p, n)
        for t in range(start, end):
            decay = torch.exp(dtp[row, t] * Af)[:, None, None]
            state = decay * state + (dtp[row, t][:, None] * xf[row, t])[:, :, None] * Bh[row, t][:, None, :]
            outputs.append(torch.einsum("hpn,hn->hp", state, Ch[row, t]))
        finals.append(state)
    y = torch.stack(outputs) if outputs else xf.new_zeros(0, h, p)
    y = skip_and_gate(y.reshape(x.shape), x, D, z, cdt)
    return y, torch.stack(finals).to(state_dtype or cdt)


@dataclass
class ChunkPlan:
    """Where every chunk of every sequence lies, in the order states are handed along.

    Chunks are numbered position-major: first chunk 0 of every sequence, then chunk 1 of every
    sequence that has one, and so on. Sequences are ranked by their number of chunks, longest
    first, so the sequences still running at position k are always the first `alive[k]` ranks.
    """

    order: torch.Tensor          # [num_seqs] sequence id of each rank
    alive: list[int]             # [max_chunks] sequences with more than k chunks
    token_index: torch.Tensor    # [num_chunks, Q] flat token of each chunk slot (clamped to 0 off the end)
    valid: torch.Tensor          # [num_chunks, Q] whether the slot holds a token of the sequence
    inverse: torch.Tensor        # [tokens] slot (chunk * Q + offset) of each flat token

    @property
    def num_chunks(self) -> int:
        return self.token_index.shape[0]


def plan_chunks(dims: SSDDims, device) -> ChunkPlan:
    q = dims.chunk_size
    starts = [row * dims.seqlen + s for row, s, _ in dims.sequences()]
    lengths = [e - s for _, s, e in dims.sequences()]
    counts = [-(-length // q) for length in lengths]
    order = sorted(range(len(counts)), key=lambda s: -counts[s])
    max_chunks = counts[order[0]] if order else 0
    alive = [sum(c > k for c in counts) for k in range(max_chunks)]
    chunk_start, chunk_len = [], []
    for k, n_alive in enumerate(alive):
        for s in order[:n_alive]:
            chunk_start.append(starts[s] + k * q)
            chunk_len.append(min(q, lengths[s] - k * q))
    offsets = torch.arange(q, device=device)
    valid = offsets < torch.tensor(chunk_len, device=device, dtype=torch.long).view(-1, 1)
    token_index = torch.tensor(chunk_start, device=device, dtype=torch.long).view(-1, 1) + offsets
    token_index = torch.where(valid, token_index, torch.zeros_like(token_index))
    inverse = torch.empty(dims.batch * dims.seqlen, device=device, dtype=torch.long)
    inverse[token_index[valid]] = torch.arange(valid.numel(), device=device).view(valid.shape)[valid]
    return ChunkPlan(torch.tensor(order, device=device, dtype=torch.long), alive, token_index, valid, inverse)


def chunk_local(xc, dtc, Bc, Cc, acum):
    """Every chunk on its own, as if it started from a zero state.

    xc: (chunks, Q, ngroups, heads_per_group, headdim); dtc: (chunks, Q, ngroups, heads_per_group);
    Bc, Cc: (chunks, Q, ngroups, dstate); acum: like dtc, the inclusive cumulative sum of dt·A
    within each chunk (computed outside: torch 2.11's Inductor fails to compile this cumsum).
    Returns y_diag like xc and the chunk states (chunks, ngroups, heads_per_group, headdim, dstate).
    """
    q = xc.shape[1]
    seg = acum[:, :, None] - acum[:, None]  # [chunks, Q_i, Q_j, g, r] = sum_{j<k<=i} dt_k A
    causal = torch.ones(q, q, dtype=torch.bool, device=xc.device).tril()[:, :, None, None]
    decay = torch.exp(seg.masked_fill(~causal, -math.inf))  # masked before exp: no overflow, no NaN grads
    cb = torch.einsum("cign,cjgn->cijg", Cc, Bc)
    y_diag = torch.einsum("cijgr,cjgrp->cigrp", decay * cb[..., None], xc * dtc[..., None])
    to_end = torch.exp(acum[:, -1:] - acum) * dtc  # weight of token j in its chunk's final state
    states = torch.einsum("cjgrp,cjgn->cgrpn", xc * to_end[..., None], Bc)
    return y_diag, states


_compiled_chunk_local = None


def _chunk_local_compiled(*args):
    global _compiled_chunk_local
    if _compiled_chunk_local is None:
        _compiled_chunk_local = torch.compile(chunk_local, dynamic=False)
    return _compiled_chunk_local(*args)


def pass_states(states, chunk_decay, plan: ChunkPlan, initial, round_to: torch.dtype | None):
    """Hand states from chunk to chunk, sequentially within each sequence.

    states: (chunks, g, r, p, n) chunk-local states; chunk_decay: (chunks, g, r) = exp(sum dt A);
    initial: (num_seqs, g, r, p, n) in the compute dtype. A state handed to the next chunk is
    rounded to `round_to` (the state dtype) when given.
    Returns the state entering each chunk (chunks, ...) and each sequence's final state.
    """
    def rounded(t):
        return t if round_to is None or round_to == t.dtype else t.to(round_to).to(t.dtype)

    carry = initial[plan.order]  # ranked order
    entering, ended = [], []
    first = 0
    for k, n_alive in enumerate(plan.alive):
        ended.append(carry[n_alive:])  # sequences whose last chunk came before position k
        carry = carry[:n_alive]
        entering.append(carry)
        sl = slice(first, first + n_alive)
        carry = rounded(chunk_decay[sl][..., None, None] * carry + states[sl])
        first += n_alive
    ended.append(carry)
    finals_ranked = torch.cat(ended[::-1])
    finals = finals_ranked[torch.argsort(plan.order)]
    entering = torch.cat(entering) if entering else states
    return entering, finals


def ssd_chunked_checked(dims: SSDDims, x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False,
                        initial_states=None, state_dtype=None, compile=False):
    """The chunked reference on inputs already validated into `dims`; returns (y, final_states)."""
    cdt = compute_dtype(x)
    b, l, h, p = x.shape
    g, n, q = dims.ngroups, dims.dstate, dims.chunk_size
    r = h // g
    tokens = b * l
    plan = plan_chunks(dims, x.device)
    nc = plan.num_chunks

    def to_chunks(t):  # [tokens, ...] -> [chunks, Q, ...], zeros in slots past a sequence's end
        out = t[plan.token_index]
        mask = plan.valid.view(nc, q, *([1] * (t.dim() - 1)))
        return torch.where(mask, out, torch.zeros((), dtype=out.dtype, device=out.device))

    dtp = process_dt(dt, dt_bias, dt_softplus, dims.dt_limit, cdt)
    xc = to_chunks(x.to(cdt).reshape(tokens, g, r, p))
    dtc = to_chunks(dtp.reshape(tokens, g, r))  # dt = 0 in padding slots: they change nothing
    Bc = to_chunks(B.to(cdt).reshape(tokens, g, n))
    Cc = to_chunks(C.to(cdt).reshape(tokens, g, n))
    acum = torch.cumsum(dtc * A.to(cdt).view(g, r), dim=1)  # [chunks, Q, g, r]

    local = _chunk_local_compiled if compile else chunk_local
    per_block = max(1, _BLOCK_ELEMENTS // (q * q * h))
    blocks = [slice(i, i + per_block) for i in range(0, nc, per_block)]
    parts = [local(xc[b], dtc[b], Bc[b], Cc[b], acum[b]) for b in blocks]
    if parts:
        y_diag, states = (torch.cat(t) for t in zip(*parts))
    else:
        y_diag, states = xc, xc.new_zeros(0, g, r, p, n)

    if initial_states is not None:
        initial = initial_states.to(cdt).view(dims.num_seqs, g, r, p, n)
    else:
        initial = xc.new_zeros(dims.num_seqs, g, r, p, n)
    entering, finals = pass_states(states, torch.exp(acum[:, -1]), plan, initial, state_dtype)

    y_off = torch.exp(acum)[..., None] * torch.einsum("cign,cgrpn->cigrp", Cc, entering)
    y = (y_diag + y_off).reshape(nc * q, h, p)[plan.inverse].reshape(b, l, h, p)
    y = skip_and_gate(y, x, D, z, cdt)
    return y, finals.reshape(dims.num_seqs, h, p, n).to(state_dtype or cdt)


def ssd_scan_chunked(x, dt, A, B, C, *, chunk_size=256, D=None, z=None, dt_bias=None, dt_softplus=False,
                     dt_limit=(0.0, math.inf), initial_states=None, cu_seqlens=None, state_dtype=None,
                     compile=False):
    """Chunked (matrix-form) SSD scan; shapes as `ssd_scan_sequential`. Returns (y, final_states).

    Chunks start at each sequence's first token and never span two sequences. `compile=True` runs
    the per-chunk part through `torch.compile` (the state hand-over between chunks stays eager).
    """
    dims = check_ssd_scan(x, dt, A, B, C, chunk_size=chunk_size, D=D, z=z, dt_bias=dt_bias,
                          dt_softplus=dt_softplus, dt_limit=dt_limit, initial_states=initial_states,
                          cu_seqlens=cu_seqlens, state_dtype=state_dtype, allow_float64=True)
    return ssd_chunked_checked(dims, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                               initial_states=initial_states, state_dtype=state_dtype, compile=compile)


def ssd_step_reference(state, x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False,
                       dt_limit=(0.0, math.inf), state_batch_indices=None):
    """One token of the SSD recurrence; `state` is updated in place.

    state: (cache_batch, nheads, headdim, dstate); x, z: (batch, nheads, headdim); dt: (batch, nheads);
    A, dt_bias: (nheads,); B, C: (batch, ngroups, dstate); D: (nheads,) or (nheads, headdim);
    state_batch_indices: (batch,) cache row of each batch row, negative for padding rows (their
    state is untouched and their y is zero). Returns y: (batch, nheads, headdim).
    """
    limit = check_ssd_step(state, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                           dt_limit=dt_limit, state_batch_indices=state_batch_indices, allow_float64=True)
    return ssd_step_checked(limit, state, x, dt, A, B, C, D=D, z=z, dt_bias=dt_bias, dt_softplus=dt_softplus,
                            state_batch_indices=state_batch_indices)


def ssd_step_checked(limit, state, x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False,
                     state_batch_indices=None, out=None):
    """`ssd_step_reference` on inputs already validated (`limit` is the checked dt_limit)."""
    cdt = compute_dtype(x)
    batch, h, _ = x.shape
    heads_per_group = h // B.shape[1]
    rows = torch.arange(batch, device=x.device) if state_batch_indices is None else state_batch_indices.long()
    live = torch.nonzero(rows >= 0).squeeze(1)
    cache_rows = rows[live]
    dtp = process_dt(dt[live], dt_bias, dt_softplus, limit, cdt)  # [live, nheads]
    xs = x[live]
    Bh = B[live].to(cdt).repeat_interleave(heads_per_group, dim=1)  # [live, nheads, dstate]
    Ch = C[live].to(cdt).repeat_interleave(heads_per_group, dim=1)
    decay = torch.exp(dtp * A.to(cdt))[..., None, None]
    new = decay * state[cache_rows].to(cdt) + (dtp[..., None] * xs.to(cdt))[..., None] * Bh[:, :, None, :]
    y = torch.einsum("bhpn,bhn->bhp", new, Ch)
    y = skip_and_gate(y, xs, D, None if z is None else z[live], cdt)
    state[cache_rows] = new.to(state.dtype)
    out = torch.zeros_like(x) if out is None else out.zero_()
    out[live] = y.to(out.dtype)
    return out
