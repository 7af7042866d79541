"""Text generation: packed prefill, then one token per step for every live sequence, the step
captured in a CUDA graph per batch-size bucket.

Prompts of different lengths are prefilled together as one packed sequence (cu_seqlens), never
padded: a pad token would run through the recurrence and corrupt the state. Each prompt's final
conv and SSM states land in its cache row. The decoding loop then feeds one token per live
sequence; a sequence that samples an EOS token (or reaches max_new_tokens) leaves the batch, and
the rest continue. On CUDA, the step for n live sequences replays the graph captured for the
next power of two >= n, its spare rows marked as padding (cache index -1: they read and write no
state), so a whole generation captures at most log2(batch) + 1 graphs, reused across calls.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from flashssm.ops.checks import as_int


@dataclass
class GenerationStats:
    prompt_tokens: int
    new_tokens: int
    prefill_seconds: float
    decode_seconds: float
    graphs_captured: int

    @property
    def decode_tokens_per_second(self) -> float:
        decoded = self.new_tokens - (1 if self.new_tokens else 0)
        return decoded / self.decode_seconds if self.decode_seconds > 0 else math.nan


def _prompts(prompts, vocab_size: int) -> list[list[int]]:
    if isinstance(prompts, torch.Tensor):
        if prompts.dim() not in (1, 2) or prompts.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"prompts as a tensor must be int32/int64 of shape (seqlen,) or (batch, seqlen), got "
                             f"{prompts.dtype} {tuple(prompts.shape)}")
        prompts = prompts.tolist() if prompts.dim() == 2 else [prompts.tolist()]
    elif isinstance(prompts, (list, tuple)) and prompts and not isinstance(prompts[0], (list, tuple, torch.Tensor)):
        prompts = [list(prompts)]
    if not isinstance(prompts, (list, tuple)) or not prompts:
        raise ValueError("prompts must be a non-empty list of token-id lists (or a tensor of token ids)")
    out = []
    for i, p in enumerate(prompts):
        p = p.tolist() if isinstance(p, torch.Tensor) else list(p)
        if not p:
            raise ValueError(f"prompt {i} is empty: every prompt needs at least one token")
        for t in p:
            if isinstance(t, bool) or not isinstance(t, int):
                raise TypeError(f"prompt {i} holds {t!r}; token ids must be ints")
            if not 0 <= t < vocab_size:
                raise ValueError(f"prompt {i} holds token id {t}, outside the vocabulary [0, {vocab_size})")
        out.append(p)
    return out


def _check_options(max_new_tokens, temperature, top_k, top_p, eos_token_id):
    max_new_tokens = as_int("max_new_tokens", max_new_tokens)
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if not (isinstance(temperature, (int, float)) and temperature >= 0):
        raise ValueError(f"temperature must be a number >= 0 (0: greedy), got {temperature!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an int >= 0 (0: off), got {top_k!r}")
    if not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    eos = set() if eos_token_id is None else {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id)
    if any(isinstance(e, bool) or not isinstance(e, int) for e in eos):
        raise TypeError(f"eos_token_id must be an int or a list of ints, got {eos_token_id!r}")
    return max_new_tokens, eos


def sample(logits: torch.Tensor, temperature: float, top_k: int, top_p: float,
           generator: torch.Generator | None) -> torch.Tensor:
    """Next token ids (n,) from logits (n, vocab): greedy at temperature 0 (or top_k 1), else
    softmax(logits / temperature) restricted to the top_k ids and the smallest set whose probability
    reaches top_p."""
    if temperature == 0 or top_k == 1:
        return logits.argmax(dim=-1)
    logits = logits.float() / temperature
    if top_k > 0:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    if top_p < 1:
        ordered, order = torch.sort(logits, dim=-1, descending=True)
        probs = ordered.softmax(dim=-1)
        drop = probs.cumsum(dim=-1) - probs > top_p  # ids entirely past the top_p mass
        logits = logits.scatter(-1, order, ordered.masked_fill(drop, -math.inf))
    return torch.multinomial(logits.softmax(dim=-1), 1, generator=generator).squeeze(-1)


class StepGraphs:
    """CUDA graphs of model.step for the batch buckets 1, 2, 4, ...; built on first use, bound to one
    cache (the graphs read and write its tensors)."""

    def __init__(self, model, cache):
        self.model, self.cache = model, cache
        self.graphs: dict[int, tuple] = {}
        self.pool = torch.cuda.graph_pool_handle()

    def _capture(self, bucket: int):
        device = self.cache.lengths.device
        ids = torch.zeros(bucket, dtype=torch.int64, device=device)
        rows = torch.full((bucket,), -1, dtype=torch.int64, device=device)  # all padding while warming up
        self.cache.batch_indices = rows
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            for _ in range(2):  # compiles the kernels, settles the allocator
                self.model.step(ids, self.cache)
        torch.cuda.current_stream(device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            logits = self.model.step(ids, self.cache)
        self.graphs[bucket] = (graph, ids, rows, logits)

    def __call__(self, ids: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        n = ids.shape[0]
        bucket = 1 << (n - 1).bit_length()
        if bucket not in self.graphs:
            self._capture(bucket)
        graph, ids_buf, rows_buf, logits = self.graphs[bucket]
        ids_buf[:n].copy_(ids)
        rows_buf[:n].copy_(rows)
        rows_buf[n:].fill_(-1)
        graph.replay()
        return logits[:n]


def _session(model, batch: int, max_seqlen: int, state_dtype, use_graphs: bool):
    """The model's cache (and graphs) if it fits this request, else new ones kept for the next call.
    Graphs read the weights where they were at capture: a model moved or cast since (new storage)
    gets a new session."""
    key = (state_dtype, use_graphs, model.device, model.dtype, tuple(p.data_ptr() for p in model.parameters()))
    s = getattr(model, "_flashssm_decode", None)
    if s is None or s["key"] != key or s["cache"].batch < batch or s["cache"].max_seqlen < max_seqlen:
        cache = model.allocate_cache(batch, max_seqlen, state_dtype)
        s = {"key": key, "cache": cache, "graphs": StepGraphs(model, cache) if use_graphs else None}
        model._flashssm_decode = s
    return s["cache"], s["graphs"]


@torch.inference_mode()
def generate(model, prompts, max_new_tokens: int, *, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
             eos_token_id=None, seed: int | None = None, cuda_graph: bool | None = None,
             state_dtype: torch.dtype | None = None, progress: bool = False, return_stats: bool = False):
    """Continue each prompt by up to max_new_tokens tokens.

    prompts: a list of token-id lists (any lengths), one list, or a (batch, seqlen) / (seqlen,)
        tensor of ids. temperature 0 is greedy; top_k 0 and top_p 1 turn those filters off.
    eos_token_id: an id or ids that end a sequence (kept as its last token).
    seed: seeds sampling (same seed, same prompts, same tokens); None uses torch's global RNG.
    cuda_graph: capture the decoding step (default: on CUDA). state_dtype: SSM cache precision
        (default the model's dtype).
    Returns the new tokens of each prompt (list of lists), and GenerationStats with return_stats.
    """
    cfg = model.config
    prompts = _prompts(prompts, cfg.vocab_size)
    max_new_tokens, eos = _check_options(max_new_tokens, temperature, top_k, top_p, eos_token_id)
    out: list[list[int]] = [[] for _ in prompts]
    n, device = len(prompts), model.device
    use_graphs = device.type == "cuda" if cuda_graph is None else bool(cuda_graph)
    if use_graphs and device.type != "cuda":
        raise ValueError("cuda_graph=True needs the model on a CUDA device")
    stats = GenerationStats(sum(map(len, prompts)), 0, 0.0, 0.0, 0)
    if max_new_tokens == 0:
        return (out, stats) if return_stats else out
    generator = None
    if seed is not None:
        generator = torch.Generator(device=device)
        generator.manual_seed(seed)
    cache, graphs = _session(model, n, max(map(len, prompts)) + max_new_tokens, state_dtype, use_graphs)
    for module in model.modules():  # weights changed since the graphs were captured reach them
        if hasattr(module, "step_params"):
            module.step_params()
    graphs_before = len(graphs.graphs) if graphs else 0

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    t0 = time.perf_counter()
    lengths = torch.tensor([0] + [len(p) for p in prompts]).cumsum(0)
    ids = torch.tensor([t for p in prompts for t in p], dtype=torch.int64, device=device)[None]
    logits = model(ids, cu_seqlens=lengths, cache=cache, logits_at=(lengths[1:] - 1).to(device))
    tokens = sample(logits, temperature, top_k, top_p, generator)
    sync()
    t1 = time.perf_counter()
    live = list(range(n))  # prompt index = cache row of each live sequence
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=max_new_tokens * n, unit="tok", desc="generating")
        except ImportError:
            bar = None
    for step in range(max_new_tokens):
        values = tokens.tolist()
        still = []
        for row, t in zip(live, values):
            out[row].append(t)
            if t not in eos and len(out[row]) < max_new_tokens:
                still.append(row)
            elif bar is not None:
                bar.update(max_new_tokens - len(out[row]))
        if bar is not None:
            bar.update(len(live))
        if not still:
            break
        alive = set(still)
        keep = [i for i, row in enumerate(live) if row in alive] if len(still) < len(live) else None
        live = still
        rows = torch.tensor(live, dtype=torch.int64, device=device)
        if keep is not None:
            tokens = tokens[torch.tensor(keep, device=device)]
        if graphs is not None:
            logits = graphs(tokens, rows)
        else:
            cache.batch_indices = rows
            logits = model.step(tokens, cache)
        tokens = sample(logits, temperature, top_k, top_p, generator)
    sync()
    if bar is not None:
        bar.close()
    cache.batch_indices = None
    stats.new_tokens = sum(map(len, out))
    stats.prefill_seconds, stats.decode_seconds = t1 - t0, time.perf_counter() - t1
    stats.graphs_captured = (len(graphs.graphs) if graphs else 0) - graphs_before
    return (out, stats) if return_stats else out
