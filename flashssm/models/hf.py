"""Switch a loaded Hugging Face transformers Mamba2 model to flashssm's kernels, in place.

Each `Mamba2Mixer` keeps its parameters, its cache handling and its outputs; only its forward
changes: the causal conv1d, the SSD scan (prefill and training), the decoding step and the gated
RMSNorm run flashssm's kernels. transformers' forward, training and `generate` then run through
them. The cache APIs of transformers 5.2x (passed as `cache_params`, or from 5.24 as `cache`), 5.1x and
4.4x's Mamba2Cache are handled; transformers is never imported here.
"""

from __future__ import annotations

import types

import torch
import torch.nn.functional as F

from flashssm.ops.conv1d import causal_conv1d, causal_conv1d_update
from flashssm.ops.norm import rmsnorm_gated
from flashssm.ops.ssd import ssd_scan, ssd_step

_CACHE_API = ("get_conv_state", "get_recurrent_state", "update_conv_state", "update_recurrent_state")


def _masked(hidden, attention_mask):
    """transformers zeroes the inputs at padded positions (a 2-D attention mask); so does this."""
    if attention_mask is not None and attention_mask.dim() == 2 and attention_mask.shape[1] == hidden.shape[1]:
        return (hidden * attention_mask[:, :, None]).to(hidden.dtype)
    return hidden


class _Cache:
    """transformers' Mamba2 cache, any of its APIs: transformers 5.2x (get/update_conv_state,
    get/update_recurrent_state), 5.1x (has_previous_state, layers[i].conv_states) or 4.4x's Mamba2Cache (conv_states / ssm_states tensors per layer,
    a decoding step recognised by cache_position > 0)."""

    def __init__(self, cache, layer, kwargs):
        self.cache, self.layer = cache, layer
        self.v5 = hasattr(cache, "update_conv_state") and hasattr(cache, "update_recurrent_state")
        if self.v5 and all(hasattr(cache, m) for m in _CACHE_API):  # transformers >= 5.2x
            self.conv = cache.get_conv_state(layer)
            self.ssm = cache.get_recurrent_state(layer)
            recording = getattr(cache, "is_recording_past", lambda i: False)(layer)
            self.decoding = self.conv is not None and self.ssm is not None and not recording
        elif self.v5 and hasattr(cache, "has_previous_state") and hasattr(cache, "layers"):  # transformers 5.1x
            entry = cache.layers[layer]
            previous = cache.has_previous_state(layer)
            self.conv = entry.conv_states[0] if previous else None
            self.ssm = entry.recurrent_states[0] if previous else None
            self.decoding = previous and not getattr(entry, "record_past", False)
        elif hasattr(cache, "conv_states") and hasattr(cache, "ssm_states"):  # transformers 4.4x
            self.v5 = False
            position = kwargs.get("cache_position")
            self.conv, self.ssm = cache.conv_states[layer], cache.ssm_states[layer]
            self.decoding = position is not None and int(position[0]) > 0
        else:
            raise TypeError(f"use_flashssm_kernels: {type(cache).__name__} is neither transformers 5's cache nor "
                            f"4.x's Mamba2Cache")

    def conv_input(self, xBC, kernel):
        """(batch, dim, seqlen) inputs of a prefill -> the inputs the conv must see; caches the last ones."""
        if self.v5:
            return self.cache.update_conv_state(xBC, self.layer, conv_kernel_size=kernel)
        self.conv.copy_(F.pad(xBC, (self.conv.shape[-1] - xBC.shape[-1], 0)))
        return xBC

    def initial_state(self):
        return self.ssm.float() if self.v5 and self.ssm is not None else None

    def store_state(self, final):
        if self.v5:
            self.cache.update_recurrent_state(final, layer_idx=self.layer)
        else:
            self.ssm.copy_(final)


def _mamba2_forward(self, hidden_states, cache_params=None, attention_mask=None, cache=None, **kwargs):
    # (transformers 5.24 renamed the mixer's `cache_params` to `cache`: a cache passed under either name is used)
    cache_params = cache if cache_params is None else cache_params
    batch, seqlen, _ = hidden_states.shape
    dtype = hidden_states.dtype
    cache = None if cache_params is None else _Cache(cache_params, self.layer_idx, kwargs)
    heads, hd, groups, n = self.num_heads, self.head_dim, self.n_groups, self.ssm_state_size
    projected = self.in_proj(_masked(hidden_states, attention_mask))
    d_mlp = (projected.shape[-1] - 2 * self.intermediate_size - 2 * groups * n - heads) // 2
    _, _, gate, xBC, dt = projected.split([d_mlp, d_mlp, self.intermediate_size, self.conv_dim, heads], dim=-1)
    A = -torch.exp(self.A_log.float())
    weight = self.conv1d.weight.squeeze(1)
    D, dt_bias = self.D.float(), self.dt_bias.float()
    limit = tuple(float(v) for v in self.time_step_limit)
    sizes = [self.intermediate_size, groups * n, groups * n]
    if cache is not None and cache.decoding and seqlen == 1:
        xBC = causal_conv1d_update(xBC[:, 0], cache.conv, weight, self.conv1d.bias, self.activation)
        x, B, C = xBC.split(sizes, dim=-1)
        y = ssd_step(cache.ssm, x.reshape(batch, heads, hd), dt[:, 0], A, B.reshape(batch, groups, n),
                     C.reshape(batch, groups, n), D=D, dt_bias=dt_bias, dt_softplus=True, dt_limit=limit)
        y = y.reshape(batch, 1, -1)
    else:
        xBC = xBC.transpose(1, 2)
        if cache is not None:  # past inputs the conv must see, if any (transformers' own logic)
            xBC = cache.conv_input(xBC, self.conv_kernel_size)
        xBC = causal_conv1d(xBC, weight, self.conv1d.bias, self.activation)[:, :, -seqlen:]
        x, B, C = _masked(xBC.transpose(1, 2), attention_mask).split(sizes, dim=-1)
        y = ssd_scan(x.unflatten(-1, (heads, hd)), dt, A, B.unflatten(-1, (groups, n)), C.unflatten(-1, (groups, n)),
                     chunk_size=self.chunk_size, D=D, dt_bias=dt_bias, dt_softplus=True, dt_limit=limit,
                     initial_states=None if cache is None else cache.initial_state(),
                     return_final_states=cache is not None)
        if cache is not None:
            y, final = y
            cache.store_state(final)
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
