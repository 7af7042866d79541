"""The recurrent cache a language model decodes from: per layer, the conv and SSM states (Mamba
layers) or the keys and values (attention layers), one row per sequence.

A prefill writes each sequence's final states into rows 0..num_seqs-1. A decoding step reads and
writes the rows named by `batch_indices` (one per batch row; negative marks a padding row whose
states stay untouched), so that a CUDA graph captured for a batch size can serve any set of live
sequences: the graph's input buffers hold the token ids and these indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class MambaState:
    conv: torch.Tensor  # (cache_batch, conv_dim, width - 1), the last inputs to the conv
    ssm: torch.Tensor   # Mamba-2: (cache_batch, nheads, headdim, dstate); Mamba-1: (cache_batch, d_inner, dstate)

    def store(self, ssm: torch.Tensor, conv: torch.Tensor) -> None:
        """A prefill's final states of num_seqs sequences into rows 0..num_seqs-1."""
        self.ssm[:ssm.shape[0]].copy_(ssm)
        self.conv[:conv.shape[0]].copy_(conv)


@dataclass
class AttentionState:
    k: torch.Tensor                     # (cache_batch, max_seqlen, nheads_kv, head_dim)
    v: torch.Tensor                     # (cache_batch, max_seqlen, nheads_kv, head_dim)
    conv: torch.Tensor | None = None    # (cache_batch, qkv_dim, width - 1) when the layer has a conv


@dataclass
class InferenceCache:
    """States of every layer for up to `batch` sequences of at most `max_seqlen` tokens.

    lengths: (batch + 1,) int64, tokens seen by each row (the position of its next token; attention
    layers read and write keys up to it); the last entry belongs to the scratch row that padding
    rows of a decoding step write in attention layers, and stays 0. batch_indices: (live batch,) int64 rows a decoding step
    works on, or None for rows 0..batch-1.
    """

    layers: list
    lengths: torch.Tensor
    max_seqlen: int
    batch_indices: torch.Tensor | None = None
    extra: dict = field(default_factory=dict)

    @property
    def batch(self) -> int:
        return self.lengths.shape[0] - 1

    def rows(self, n: int) -> torch.Tensor:
        """The cache row of each of n batch rows (negative: padding)."""
        if self.batch_indices is not None:
            return self.batch_indices
        return torch.arange(n, device=self.lengths.device)
