"""The causal language model: embedding, residual blocks (Mamba-2, Mamba-1 or attention mixers),
final norm, LM head; the module tree and parameter names of mamba_ssm's MambaLMHeadModel."""

from __future__ import annotations

import inspect
import math
from functools import partial

import torch
import torch.utils.checkpoint
from torch import nn

from flashssm.models.config import ModelConfig
from flashssm.modules import Attention, Block, GatedMLP, InferenceCache, Mamba2Mixer, MambaMixer, RMSNorm
from flashssm.modules.block import add_norm
from flashssm.modules.norm import norm_for_linear


def _norm(config: ModelConfig, device, dtype):
    if config.rms_norm:
        return RMSNorm(config.d_model, eps=config.norm_epsilon, device=device, dtype=dtype)
    return nn.LayerNorm(config.d_model, eps=config.norm_epsilon, device=device, dtype=dtype)


def _block(config: ModelConfig, i: int, device, dtype) -> Block:
    factory = {"device": device, "dtype": dtype}
    if i in config.attn_layer_idx:
        mixer = Attention(config.d_model, layer_idx=i, **config.attn_cfg, **factory)
    elif config.layer == "Mamba2":
        mixer = Mamba2Mixer(config.d_model, layer_idx=i, **config.mixer_kwargs(), **factory)
    else:
        mixer = MambaMixer(config.d_model, layer_idx=i, **config.mixer_kwargs(), **factory)
    mlp = norm2 = None
    if config.d_intermediate > 0:
        mlp = GatedMLP(config.d_model, config.d_intermediate, config.d_model, **factory)
        norm2 = _norm(config, device, dtype)
    return Block(mixer, _norm(config, device, dtype), mlp, norm2, residual_in_fp32=config.residual_in_fp32)


def _init_weights(module: nn.Module, n_layer: int, n_residuals_per_layer: int):
    """mamba_ssm's initialisation: zero Linear biases, N(0, 0.02) embeddings, out_proj and fc2
    rescaled by 1/sqrt(residuals per layer · n_layer) (GPT-2's scheme)."""
    if isinstance(module, nn.Linear) and module.bias is not None and not getattr(module.bias, "_no_reinit", False):
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=0.02)
    for name in ("out_proj", "fc2"):
        child = getattr(module, name, None)
        if isinstance(child, nn.Linear):
            nn.init.kaiming_uniform_(child.weight, a=math.sqrt(5))
            with torch.no_grad():
                child.weight /= math.sqrt(n_residuals_per_layer * n_layer)


def _checkpoint_keywords() -> set[str]:
    """The keywords torch.utils.checkpoint.checkpoint takes for itself (its others go to the function it runs)."""
    params = inspect.signature(torch.utils.checkpoint.checkpoint).parameters.values()
    return {p.name for p in params if p.kind is p.KEYWORD_ONLY} | {"preserve_rng_state"}


class Backbone(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        self.embedding = nn.Embedding(config.padded_vocab_size, config.d_model, device=device, dtype=dtype)
        self.layers = nn.ModuleList(_block(config, i, device, dtype) for i in range(config.n_layer))
        self.checkpointing: dict | None = None  # torch.utils.checkpoint's keywords a layer, None: off
        self.norm_f = _norm(config, device, dtype)

    def forward(self, input_ids, cu_seqlens=None, cache=None):
        hidden, residual = self.embedding(input_ids), None
        # activation checkpointing (`MambaLM.set_gradient_checkpointing`): training only, never while a cache fills
        checkpointing = self.checkpointing if cache is None and torch.is_grad_enabled() else None
        for layer in self.layers:
            if checkpointing is not None:  # (cu_seqlens positional: the reentrant form takes no keywords)
                hidden, residual = torch.utils.checkpoint.checkpoint(layer, hidden, residual, cu_seqlens,
                                                                     **checkpointing)
            else:
                hidden, residual = layer(hidden, residual, cu_seqlens=cu_seqlens, cache=cache)
        return add_norm(hidden, residual, self.norm_f, False)[0]  # (read by lm_head)

    def step(self, input_ids, cache):
        hidden, residual = self.embedding(input_ids), None
        for layer in self.layers:
            hidden, residual = layer.step(hidden, residual, cache)
        return norm_for_linear(self.norm_f, (hidden + residual).to(self.norm_f.weight.dtype))  # (read by lm_head)


class MambaLM(nn.Module):
    """A Mamba-2, Mamba-1 or hybrid causal LM (mamba_ssm's MambaLMHeadModel).

    forward(input_ids, cu_seqlens=None, cache=None, logits_at=None): logits of every token, or only
    of the flat token positions `logits_at` (what a prefill needs: the last token of each prompt).
    step(input_ids, cache): one token per batch row, logits (batch, vocab).
    from_pretrained / save_pretrained: flashssm.models.checkpoint. generate: flashssm.generation.
    """

    def __init__(self, config: ModelConfig, device=None, dtype=None, init_weights: bool = True):
        super().__init__()
        self.config = config
        self.backbone = Backbone(config, device, dtype)
        self.lm_head = nn.Linear(config.d_model, config.padded_vocab_size, bias=False, device=device, dtype=dtype)
        if init_weights:
            self.apply(partial(_init_weights, n_layer=config.n_layer,
                               n_residuals_per_layer=2 if config.d_intermediate > 0 else 1))
        self.tie_weights()

    def tie_weights(self):
        if self.config.tie_embeddings:
            self.lm_head.weight = self.backbone.embedding.weight

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def set_recompute(self, on: bool = True) -> "MambaLM":
        """Training keeps less memory: every Mamba-2 layer remakes its conv's and gated norm's outputs in the backward
        instead of keeping them, every Mamba-1 layer its conv's (`Mamba2Mixer.recompute`, `MambaMixer.recompute`;
        FLASHSSM_RECOMPUTE=1 makes it the default). Returns self."""
        for module in self.modules():
            if isinstance(module, (Mamba2Mixer, MambaMixer)):
                module.recompute = bool(on)
        return self

    def set_gradient_checkpointing(self, on: bool = True, **checkpoint_kwargs) -> "MambaLM":
        """Activation checkpointing: a training forward keeps only each layer's inputs (the residual stream) and the
        backward runs each layer's forward again (`torch.utils.checkpoint`, non-reentrant unless
        `use_reentrant=True` is given; `checkpoint_kwargs` go to it; the layers draw no random numbers, so
        `preserve_rng_state` defaults to False). Not while a cache is filled or gradients are off. Returns self."""
        if on:
            unknown = sorted(set(checkpoint_kwargs) - _checkpoint_keywords())
            if unknown:  # (else they would reach the layers' forward as its arguments, or fail at the first step)
                raise TypeError(f"set_gradient_checkpointing got {', '.join(unknown)}: torch.utils.checkpoint takes "
                                f"{', '.join(sorted(_checkpoint_keywords()))}")
            kwargs = {"use_reentrant": False, "preserve_rng_state": False}
            kwargs.update(checkpoint_kwargs)
            self.backbone.checkpointing = kwargs
        else:
            self.backbone.checkpointing = None
        return self

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs: dict | None = None) -> None:
        """transformers' name for `set_gradient_checkpointing(True, **gradient_checkpointing_kwargs)`."""
        self.set_gradient_checkpointing(True, **(gradient_checkpointing_kwargs or {}))

    def gradient_checkpointing_disable(self) -> None:
        """transformers' name for `set_gradient_checkpointing(False)`."""
        self.set_gradient_checkpointing(False)

    @property
    def is_gradient_checkpointing(self) -> bool:
        return self.backbone.checkpointing is not None

    def check_input_ids(self, input_ids: torch.Tensor, name: str = "input_ids") -> None:
        """Token ids in [0, vocab_size) (a device synchronisation: not for the decoding loop)."""
        if not isinstance(input_ids, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of token ids, got {type(input_ids).__name__}")
        if input_ids.dtype not in (torch.int32, torch.int64):
            raise TypeError(f"{name} must have dtype int64 or int32, got {input_ids.dtype}")
        if input_ids.numel() and not torch.compiler.is_compiling():
            lo, hi = int(input_ids.min()), int(input_ids.max())
            if lo < 0 or hi >= self.config.vocab_size:
                bad = lo if lo < 0 else hi
                raise ValueError(f"{name} holds token id {bad}, outside the vocabulary [0, {self.config.vocab_size})")

    def forward(self, input_ids: torch.Tensor, cu_seqlens: torch.Tensor | None = None,
                cache: InferenceCache | None = None, logits_at: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids: (batch, seqlen) int; cu_seqlens: (num_seqs + 1,) offsets of sequences packed
        along seqlen (batch 1); cache: final states of each sequence go to its rows, lengths set.
        Returns logits (batch, seqlen, vocab) in the model's dtype, or (len(logits_at), vocab)."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, seqlen), got {tuple(input_ids.shape)}")
        self.check_input_ids(input_ids)
        hidden = self.backbone(input_ids, cu_seqlens=cu_seqlens, cache=cache)
        if cache is not None:
            if cu_seqlens is None:
                cache.lengths[:input_ids.shape[0]] = input_ids.shape[1]
            else:
                cu = cu_seqlens.to(cache.lengths.device)
                cache.lengths[:cu.numel() - 1] = cu[1:] - cu[:-1]
        if logits_at is not None:
            hidden = hidden.flatten(0, 1)[logits_at]
        return self.lm_head(hidden)[..., :self.config.vocab_size]

    def step(self, input_ids: torch.Tensor, cache: InferenceCache) -> torch.Tensor:
        """input_ids: (batch,) one token per row; the rows cache.batch_indices names (0..batch-1
        without) advance by one token. Returns logits (batch, vocab). No host synchronisation when
        the ids and indices are on the device: the step a CUDA graph captures."""
        logits = self.lm_head(self.backbone.step(input_ids, cache))[..., :self.config.vocab_size]
        rows = cache.rows(input_ids.shape[0])
        valid = rows >= 0
        cache.lengths.index_add_(0, torch.where(valid, rows, cache.batch), valid.to(cache.lengths.dtype))
        return logits

    def allocate_cache(self, batch: int, max_seqlen: int, state_dtype: torch.dtype | None = None) -> InferenceCache:
        """A zeroed cache for `batch` sequences of at most `max_seqlen` tokens (only attention layers
        use max_seqlen). state_dtype: of the SSM states (default the model's dtype, as mamba_ssm)."""
        state_dtype = self.dtype if state_dtype is None else state_dtype
        layers = []
        for block in self.backbone.layers:
            mixer = block.mixer
            if isinstance(mixer, Attention):
                layers.append(mixer.allocate_state(batch, max_seqlen, self.dtype, self.device))
            else:
                layers.append(mixer.allocate_state(batch, state_dtype, self.device))
        return InferenceCache(layers=layers, lengths=torch.zeros(batch + 1, dtype=torch.int64, device=self.device),
                              max_seqlen=max_seqlen)

    @classmethod
    def from_pretrained(cls, path, device=None, dtype=None, **kwargs) -> "MambaLM":
        from flashssm.models.checkpoint import load_pretrained

        return load_pretrained(cls, path, device=device, dtype=dtype, **kwargs)

    def save_pretrained(self, path, format: str | None = None) -> None:
        from flashssm.models.checkpoint import save_pretrained

        save_pretrained(self, path, format=format)

    def generate(self, prompts, max_new_tokens: int, **kwargs):
        from flashssm.generation import generate

        return generate(self, prompts, max_new_tokens, **kwargs)
