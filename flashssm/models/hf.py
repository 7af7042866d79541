"""Switch a loaded Hugging Face transformers Mamba2 model to flashssm's kernels, in place.

Each `Mamba2Mixer` keeps its parameters, its cache handling and its outputs; only its forward
changes: the causal conv1d, the SSD scan (prefill and training), the decoding step and the gated
RMSNorm run flashssm's kernels. transformers' forward, training and `generate` then run through
them. Written against transformers 5's Mamba2 (the cache's get/update_conv_state and
get/update_recurrent_state); transformers is never imported here.
"""

from __future__ import annotations

import types

import torch

from flashssm.ops.conv1d import causal_conv1d, causal_conv1d_update
from flashssm.ops.norm import rmsnorm_gated
from flashssm.ops.ssd import ssd_scan, ssd_step

_CACHE_API = ("get_conv_state", "get_recurrent_state", "update_conv_state", "update_recurrent_state")


def _masked(hidden, attention_mask):
    """transformers zeroes the inputs at padded positions (a 2-D attention mask); so does this."""
    if attention_mask is not None and attention_mask.dim() == 2 and attention_mask.shape[1] == hidden.shape[1]:
        return (hidden * attention_mask[:, :, None]).to(hidden.dtype)
    return hidden


def _mamba2_forward(self, hidden_states, cache_params=None, attention_mask=None, **kwargs):
    batch, seqlen, _ = hidden_states.shape
    dtype = hidden_states.dtype
    conv_state = recurrent = None
    if cache_params is not None:
        missing = [m for m in _CACHE_API if not hasattr(cache_params, m)]
        if missing:
            raise TypeError(f"use_flashssm_kernels: this transformers cache has no {', '.join(missing)}; it supports "
                            f"the Mamba2 cache API of transformers 5")
        conv_state = cache_params.get_conv_state(self.layer_idx)
        recurrent = cache_params.get_recurrent_state(self.layer_idx)
    heads, hd, groups, n = self.num_heads, self.head_dim, self.n_groups, self.ssm_state_size
    projected = self.in_proj(_masked(hidden_states, attention_mask))
    gate, xBC, dt = projected.split([self.intermediate_size, self.conv_dim, heads], dim=-1)
    A = -torch.exp(self.A_log.float())
    weight = self.conv1d.weight.squeeze(1)
    D, dt_bias = self.D.float(), self.dt_bias.float()
    recording = cache_params is not None and getattr(cache_params, "is_recording_past", lambda i: False)(self.layer_idx)
    sizes = [self.intermediate_size, groups * n, groups * n]
    if conv_state is not None and recurrent is not None and seqlen == 1 and not recording:
        xBC = causal_conv1d_update(xBC[:, 0], conv_state, weight, self.conv1d.bias, self.activation)
        x, B, C = xBC.split(sizes, dim=-1)
        y = ssd_step(recurrent, x.reshape(batch, heads, hd), dt[:, 0], A, B.reshape(batch, groups, n),
                     C.reshape(batch, groups, n), D=D, dt_bias=dt_bias, dt_softplus=True,
                     dt_limit=tuple(self.time_step_limit))
        y = y.reshape(batch, 1, -1)
    else:
        xBC = xBC.transpose(1, 2)
        if cache_params is not None:  # past inputs the conv must see, if any (transformers' own logic)
            xBC = cache_params.update_conv_state(xBC, self.layer_idx, conv_kernel_size=self.conv_kernel_size)
        xBC = causal_conv1d(xBC, weight, self.conv1d.bias, self.activation)[:, :, -seqlen:]
        x, B, C = _masked(xBC.transpose(1, 2), attention_mask).split(sizes, dim=-1)
        y = ssd_scan(x.unflatten(-1, (heads, hd)), dt, A, B.unflatten(-1, (groups, n)), C.unflatten(-1, (groups, n)),
                     chunk_size=self.chunk_size, D=D, dt_bias=dt_bias, dt_softplus=True,
                     dt_limit=tuple(self.time_step_limit),
                     initial_states=None if recurrent is None else recurrent.float(),
                     return_final_states=cache_params is not None)
        if cache_params is not None:
            y, final = y
            cache_params.update_recurrent_state(final, layer_idx=self.layer_idx)
        y = y.flatten(-2)
    y = rmsnorm_gated(y, self.norm.weight, gate, eps=self.norm.variance_epsilon,
                      group_size=getattr(self.norm, "group_size", None))
    return self.out_proj(y.to(dtype))


def use_flashssm_kernels(model):
    """Make every Mamba2Mixer of a transformers Mamba2 model (Mamba2ForCausalLM, Mamba2Model, or a
    model holding them) run flashssm's kernels. Returns the model; raises if it holds no Mamba2 mixer."""
    mixers = [m for m in model.modules() if type(m).__name__ == "Mamba2Mixer" and hasattr(m, "A_log")]
    if not mixers:
        raise ValueError(f"use_flashssm_kernels: {type(model).__name__} holds no transformers Mamba2Mixer")
    for mixer in mixers:
        mixer.forward = types.MethodType(_mamba2_forward, mixer)
    return model
