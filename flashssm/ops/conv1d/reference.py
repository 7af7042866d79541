"""Plain-PyTorch causal depthwise conv1d: the definition the Triton kernels are tested against.

For each sequence and channel d, with x_ext the sequence preceded by its width − 1 initial
inputs (zeros by default):
    y_t = act(bias_d + sum_{k<width} weight[d, k] · x_ext[t + k])        (t counts from 0)
final_states are the last width − 1 entries of x_ext (they include initial inputs when the
sequence is shorter than width − 1). The update step shifts the conv state left by one, appends
the new input, and applies the same formula to the state's last `width` entries.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from flashssm.ops.checks import Conv1dDims, check_causal_conv1d, check_causal_conv1d_update


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def causal_conv1d_reference(x, weight, bias=None, activation=None, *, cu_seqlens=None, initial_states=None,
                            return_final_states=False):
    """x: (batch, dim, seqlen) any layout; weight: (dim, width); bias: (dim,); activation None or 'silu'/'swish';
    cu_seqlens: (num_seqs + 1,) with batch 1; initial_states: (num_seqs, dim, width - 1).
    Returns y like x, or (y, final_states (num_seqs, dim, width - 1)) in x's dtype."""
    dims = check_causal_conv1d(x, weight, bias, activation, cu_seqlens=cu_seqlens, initial_states=initial_states,
                               return_final_states=return_final_states, allow_float64=True)
    y, final = conv1d_checked(dims, x, weight, bias, initial_states)
    return (y, final) if return_final_states else y


def _conv(ext: torch.Tensor, weight: torch.Tensor, bias, silu: bool) -> torch.Tensor:
    """ext: (batch, dim, width - 1 + L) -> (batch, dim, L)."""
    cdt = ext.dtype
    if ext.shape[-1] < weight.shape[1]:  # an empty sequence: conv1d refuses an input shorter than its kernel
        return ext[..., :0] * 0
    y = F.conv1d(ext, weight.to(cdt)[:, None, :], None if bias is None else bias.to(cdt), groups=weight.shape[0])
    return F.silu(y) if silu else y


def conv1d_checked(dims: Conv1dDims, x, weight, bias=None, initial_states=None):
    """The reference on validated inputs: (y, final_states); differentiable in every input."""
    cdt = _compute_dtype(x)
    w = dims.width
    if dims.cu_seqlens is None:
        head = (initial_states.to(cdt) if initial_states is not None
                else x.new_zeros(dims.batch, dims.dim, w - 1, dtype=cdt))
        ext = torch.cat([head, x.to(cdt)], dim=-1)
        y = _conv(ext, weight, bias, dims.silu)
        return y.to(x.dtype), ext[..., ext.shape[-1] - (w - 1):].to(x.dtype)
    ys, finals = [], []
    for i, (_, start, end) in enumerate(dims.sequences()):
        head = (initial_states[i].to(cdt) if initial_states is not None
                else x.new_zeros(dims.dim, w - 1, dtype=cdt))
        ext = torch.cat([head, x[0, :, start:end].to(cdt)], dim=-1)
        ys.append(_conv(ext[None], weight, bias, dims.silu)[0])
        finals.append(ext[:, ext.shape[-1] - (w - 1):])
    return torch.cat(ys, dim=-1)[None].to(x.dtype), torch.stack(finals).to(x.dtype)


def causal_conv1d_update_reference(x, conv_state, weight, bias=None, activation=None, *, conv_state_indices=None):
    """x: (batch, dim) or (batch, dim, seqlen) new inputs; conv_state: (cache_batch, dim, state_len) updated
    in place; conv_state_indices: (batch,) cache rows, negative for padding (state untouched, y zero).
    Returns y like x."""
    check_causal_conv1d_update(x, conv_state, weight, bias, activation, conv_state_indices=conv_state_indices,
                               allow_float64=True)
    return conv1d_update_checked(x, conv_state, weight, bias, activation is not None,
                                 conv_state_indices=conv_state_indices)


def conv1d_update_checked(x, conv_state, weight, bias, silu: bool, *, conv_state_indices=None, out=None):
    cdt = _compute_dtype(x)
    squeeze = x.dim() == 2
    xs = x[..., None] if squeeze else x
    batch, _, seqlen = xs.shape
    state_len, w = conv_state.shape[2], weight.shape[1]
    rows = torch.arange(batch, device=x.device) if conv_state_indices is None else conv_state_indices.long()
    live = torch.nonzero(rows >= 0).squeeze(1)
    cache_rows = rows[live]
    ext = torch.cat([conv_state[cache_rows].to(cdt), xs[live].to(cdt)], dim=-1)  # (live, dim, state_len + seqlen)
    y = _conv(ext[..., state_len - (w - 1):], weight, bias, silu)
    conv_state[cache_rows] = ext[..., seqlen:].to(conv_state.dtype)
    result = torch.zeros_like(xs) if out is None else out.zero_().view(xs.shape)
    result[live] = y.to(result.dtype)
    return result[..., 0] if squeeze and out is None else (out if out is not None else result)
