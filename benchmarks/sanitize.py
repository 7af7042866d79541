"""Every kernel at small and boundary shapes, forward and backward, for compute-sanitizer (issue 9).

    bash benchmarks/sanitize.sh            # memcheck, racecheck, synccheck over this script
    python3 benchmarks/sanitize.py [--fuzz-cases N] [--plant] [--case NAME ...]

The targeted cases sit on the kernels' edges: the largest tiles (headdim 128, dstate 256, chunk
256), sequences that end mid-chunk, single tokens, packed batches with empty sequences, the
single-launch SSD's hand-over between blocks over many chunks, the selective scan split across
blocks on a long sequence, decoding through cache indices with padding rows, deterministic mode.
Then --fuzz-cases random cases of every op from tests/fuzz (small odd shapes, strides, options).
Each case is checked against its float64 reference (tests/fuzz's comparison), so a sanitizer run
that passes has run the real kernels to a right answer. --plant runs only a Triton kernel that
writes past the end of its output: memcheck must report it (sanitize.sh checks that it does).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, ".")
from tests.fuzz import fuzz as F  # noqa: E402
from tests.helpers import scan_inputs, ssd_inputs  # noqa: E402

import flashssm  # noqa: E402
from flashssm.ops.conv1d import reference as conv_ref  # noqa: E402
from flashssm.ops.norm import reference as norm_ref  # noqa: E402
from flashssm.ops.selective_scan import reference as scan_ref  # noqa: E402
from flashssm.ops.ssd import reference as ssd_ref  # noqa: E402


def on_cpu(fn, **options):
    """fn(**k, **options) run on the CPU (tensors moved there, differentiably), results moved back:
    the float64 references stay out of the sanitizer's instrumentation (thousands of small launches
    for the step-by-step ones)."""
    def cpu(v):
        return v.cpu() if torch.is_tensor(v) else v

    def run(**k):
        device = next(v.device for v in k.values() if torch.is_tensor(v))
        result = fn(**{n: cpu(v) for n, v in k.items()}, **{n: cpu(v) for n, v in options.items()})
        if isinstance(result, tuple):
            return tuple(r.to(device) if torch.is_tensor(r) else r for r in result)
        return result.to(device)

    return run


def offsets(lens: list[int], dtype: torch.dtype, device) -> torch.Tensor:
    """cu_seqlens of packed sequences of these lengths."""
    return torch.tensor([0, *itertools.accumulate(lens)], dtype=dtype, device=device)


def _ssd(out, g, device, dims, *, chunk, dtype, lens=None, state_dtype=None, grads=True, xbc=False, again=False,
         **opts):
    """ssd_scan on these dims (batch, seqlen, heads, headdim, dstate, groups) against float64. `xbc`: x, B and C as
    column blocks of one (batch, seqlen, width) buffer with columns of something else after them, as a Mamba-2 layer's
    conv output gives them (row strides past their widths). `again`: the training call twice more in the default
    (atomic) mode, the first taking the whole path and the second replaying its recorded launches
    (`_runtime.Prepared`), their gradients compared (`fuzz.repeated_training_call`)."""
    batch, seqlen, h, p, n, ng = dims
    cu = None
    if lens is not None:
        batch, seqlen = 1, sum(lens)
        cu = offsets(lens, torch.int32, device)
    kw = ssd_inputs(batch, seqlen, h, p, n, ng, dtype=dtype, device=device,
                    num_seqs=None if lens is None else len(lens), **opts)
    if xbc:
        parts = [kw["x"].flatten(2), kw["B"].flatten(2), kw["C"].flatten(2)]
        whole = torch.cat(parts + [torch.zeros_like(parts[1][..., :16])], dim=-1)
        x, B, C, _ = torch.split(whole, [t.shape[-1] for t in parts] + [16], dim=-1)
        kw.update(x=x.unflatten(-1, (h, p)), B=B.unflatten(-1, (ng, n)), C=C.unflatten(-1, (ng, n)))
    softplus = kw.pop("dt_softplus", False)
    options = dict(chunk_size=chunk, dt_softplus=softplus, cu_seqlens=cu, dt_limit=(1e-3, 0.5))

    def call(**k):
        return flashssm.ssd_scan(**k, state_dtype=state_dtype, return_final_states=True, **options)

    F.differential(out, call, on_cpu(ssd_ref.ssd_scan_chunked, **options), kw, g, device,
                   outputs=["y", "final_states"], backprop=["y", "final_states"], grads=grads,
                   tol=F.TOL[max([dtype, state_dtype or torch.float32], key=lambda d: F.TOL[d])], also_reduced={"dt"})
    if again:
        F.repeated_training_call(out, call, kw, g, device, deterministic=False)


def _scan(out, g, device, batch, dim, seqlen, dstate, *, dtype, ngroups=None, lens=None, grads=True,
          channels_last=False, again=False, **opts):
    """selective_scan against float64. `channels_last`: u, delta and z (batch, dim, seqlen) with the channels
    contiguous, as Mamba-1's mixer hands them over (views of its in_proj's output). `again`: as `_ssd`'s."""
    cu = None
    if lens is not None:
        batch, seqlen = 1, sum(lens)
        cu = offsets(lens, torch.int64, device)
    kw = scan_inputs(batch, dim, seqlen, dstate, ngroups=ngroups, dtype=dtype, device=device, **opts)
    if channels_last:
        for k in ("u", "delta", "z"):
            if k in kw:
                kw[k] = kw[k].transpose(1, 2).contiguous().transpose(1, 2)
    options = dict(delta_softplus=kw.pop("delta_softplus", False), return_last_state=True, cu_seqlens=cu)

    def call(**k):
        return flashssm.selective_scan(**k, **options)

    F.differential(out, call, on_cpu(scan_ref.selective_scan_reference, **options), kw, g, device,
                   outputs=["out", "last_state"], backprop=["out"], grads=grads, tol=F.TOL[dtype],
                   also_reduced={"delta"})
    if again:
        F.repeated_training_call(out, call, kw, g, device, deterministic=False)


def case_ssd_big_tiles(out, g, device):
    """headdim 128, dstate 256, chunk 256, 2 groups, seqlen mid-chunk, every option, bf16."""
    _ssd(out, g, device, (2, 600, 4, 128, 256, 2), chunk=256, dtype=torch.bfloat16, D="hp", z=True, dt_bias=True,
         dt_softplus=True, initial_states=True)


def case_ssd_varlen(out, g, device):
    """packed sequences with empty and single-token ones, fp16 states."""
    _ssd(out, g, device, (1, 0, 2, 64, 128, 1), chunk=128, dtype=torch.float16, lens=[0, 1, 300, 0, 257, 5],
         state_dtype=torch.float16, D="h", initial_states=True)


def case_ssd_small(out, g, device):
    """seqlen 1, headdim 32, dstate 16, chunk 64, fp32."""
    _ssd(out, g, device, (3, 1, 2, 32, 16, 1), chunk=64, dtype=torch.float32, z=True)


def case_ssd_handover(out, g, device):
    """one long sequence of 64 chunks: the state passes from block to block 63 times."""
    _ssd(out, g, device, (1, 4096 + 17, 8, 64, 64, 2), chunk=64, dtype=torch.bfloat16, state_dtype=torch.bfloat16,
         dt_softplus=True)


def case_ssd_deterministic(out, g, device):
    """the backward without float atomics (torch.use_deterministic_algorithms)."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        _ssd(out, g, device, (2, 333, 6, 64, 128, 3), chunk=128, dtype=torch.float32, D="h", dt_bias=True,
             initial_states=True)
    finally:
        torch.use_deterministic_algorithms(False)


def case_ssd_deterministic_tiles(out, g, device):
    """the deterministic mode's tiles (every sum of the paths and pair launches in a slot of its own; forced: at these
    sizes the parallel form would run), the heads split into blocks in both launches, a ragged last chunk, every
    option, its buffers allocated without torch's deterministic fill."""
    from flashssm.ops.ssd import backward_chain, backward_tiles

    saved = backward_chain.use_tiles, backward_tiles.PATHS_HEADS
    backward_chain.use_tiles = lambda dims, device, *_: True
    backward_tiles.PATHS_HEADS = 2
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        _ssd(out, g, device, (2, 1017, 6, 64, 128, 2), chunk=128, dtype=torch.bfloat16, D="hp", z=True, dt_bias=True,
             dt_softplus=True, initial_states=True)
    finally:
        torch.use_deterministic_algorithms(False)
        backward_chain.use_tiles, backward_tiles.PATHS_HEADS = saved


def case_ssd_tiles_spans(out, g, device):
    """the backward's tiles with their paths launch and the chain launch in spans of 3 chunks (forced: at these sizes
    the sweeps and one program a chunk would run), 2 groups of 3 heads, a ragged last span and chunk, every option."""
    from flashssm.ops.ssd import backward_chain

    saved = backward_chain.use_tiles, backward_chain.chain_span
    backward_chain.use_tiles = lambda dims, device, *_: True
    backward_chain.chain_span = lambda dims, device: 3
    try:
        _ssd(out, g, device, (2, 1017, 6, 64, 128, 2), chunk=128, dtype=torch.bfloat16, D="hp", z=True, dt_bias=True,
             dt_softplus=True, initial_states=True)
    finally:
        backward_chain.use_tiles, backward_chain.chain_span = saved


def case_ssd_halves(out, g, device):
    """few chains: the state recompute and the chain launch two chunks a program (`early_halves`, forced on for both;
    at these sizes a program a chunk would run), batch 2, a last span of one chunk (30 tokens), every option but z and
    D (the chain launch's wide form), then the deterministic mode (the recompute over dH with the carry)."""
    from flashssm.ops.ssd import backward_chain

    saved = backward_chain.use_tiles, backward_chain.early_halves
    backward_chain.use_tiles = lambda dims, device, *_: True
    backward_chain.early_halves = lambda dims, device, narrow, force=None: (True, True)
    try:
        _ssd(out, g, device, (2, 4 * 128 + 30, 6, 64, 128, 2), chunk=128, dtype=torch.bfloat16, dt_bias=True,
             dt_softplus=True, initial_states=True)
        torch.use_deterministic_algorithms(True, warn_only=True)
        _ssd(out, g, device, (2, 4 * 128 + 30, 6, 64, 128, 2), chunk=128, dtype=torch.bfloat16, dt_bias=True,
             dt_softplus=True, initial_states=True)
    finally:
        torch.use_deterministic_algorithms(False)
        backward_chain.use_tiles, backward_chain.early_halves = saved


def case_ssd_gluon_late_train(out, g, device):
    """the bench's 8 x 4K form at 8 x 512: many chains (8 sequences x 80 heads), so on Hopper the Gluon kernel's late
    publish, its training form storing the tiles' states (TMA loads and stores where bf16, seqlen a multiple of 64, D
    per head; x, B and C as column blocks of one buffer, as a Mamba-2 layer gives them); the backward's chain in spans,
    the tiles with their S, paths, pair and decay-gradient launches; then the call again, replayed."""
    _ssd(out, g, device, (8, 512, 80, 64, 128, 1), chunk=256, dtype=torch.bfloat16, D="h", dt_bias=True,
         dt_softplus=True, xbc=True, again=True)


def case_ssd_gluon_late_z(out, g, device):
    """many chains with z and D per (head, headdim): the late publish by cp.async, y moved in fp32, two headdim
    blocks, dstate 64 in two groups, a sequence ending mid-chunk; the tiles backward; replayed."""
    _ssd(out, g, device, (16, 200, 40, 128, 64, 2), chunk=128, dtype=torch.bfloat16, D="hp", z=True, dt_bias=True,
         dt_softplus=True, initial_states=True, again=True)


def case_ssd_gluon_fp16(out, g, device):
    """fp16 with many chains: the Gluon kernel's fp16 form (late publish, products of operands scaled by powers of
    two), with z (so the states for the backward come from the Triton kernel), the tiles backward on fp16's scaled
    16-bit states, D per head."""
    _ssd(out, g, device, (8, 512, 80, 64, 128, 1), chunk=256, dtype=torch.float16, D="h", z=True)


def case_ssd_gluon_batch1(out, g, device):
    """batch 1 with many heads (the 1 x 32K form at 4K + 64 tokens): the Gluon kernel's early publish in spans,
    the backward's state recompute and chain two chunks a program, the tiles in the forward's chunks; replayed."""
    _ssd(out, g, device, (1, 4096 + 64, 80, 64, 128, 1), chunk=256, dtype=torch.bfloat16, D="h", dt_bias=True,
         dt_softplus=True, again=True)


def case_ssd_gluon_packed(out, g, device):
    """packed sequences, none empty, single-token and mid-chunk ones, z, in a training call: the forward storing the
    states takes the Triton kernel's packed form (GPU run, seventy-fifth session), the backward its packed sweeps."""
    _ssd(out, g, device, (1, 0, 8, 64, 128, 1), chunk=128, dtype=torch.bfloat16, lens=[300, 1, 513, 64, 1000, 77],
         D="h", z=True, initial_states=True)


def case_ssd_gluon_packed_inference(out, g, device):
    """packed sequences without gradients: the Gluon kernel's chunk-table form (IS_VARLEN; a training forward stores
    the states by the Triton kernel instead), single-token and mid-chunk sequences, z, initial states."""
    _ssd(out, g, device, (1, 0, 8, 64, 128, 1), chunk=128, dtype=torch.bfloat16, lens=[300, 1, 513, 64, 1000, 77],
         D="h", z=True, initial_states=True, grads=False)


def case_ssd_gluon_packed_late(out, g, device):
    """packed sequences without gradients, enough of them for the late publish (7 sequences x 80 heads: 560 chains,
    at least twice the resident programs of an H100 or H200): the Gluon kernel's chunk-table form publishing late,
    single-token and mid-chunk sequences, a per-head D, initial states."""
    _ssd(out, g, device, (1, 0, 80, 64, 128, 1), chunk=128, dtype=torch.bfloat16, lens=[300, 1, 513, 64, 200, 77, 128],
         D="h", initial_states=True, grads=False)


def case_scan_big_state(out, g, device):
    """dstate 256, grouped B/C, every option, bf16."""
    _scan(out, g, device, 2, 16, 700, 256, dtype=torch.bfloat16, ngroups=2, D=True, z=True, delta_bias=True,
          delta_softplus=True)


def case_scan_long(out, g, device):
    """a long sequence: the backward's many chunks, each from a state the forward checkpointed."""
    _scan(out, g, device, 1, 8, 3000, 16, dtype=torch.float32, D=True, delta_softplus=True)


def case_scan_varlen(out, g, device):
    _scan(out, g, device, 1, 24, 0, 16, dtype=torch.float16, lens=[0, 1, 500, 1100], z=True, delta_bias=True,
          delta_softplus=True)


def case_scan_mixer_layout(out, g, device):
    """the 2.8B mixer's layout (u, delta and z with the channels contiguous) at 2047 tokens (rows not a multiple of
    8: no vector loads), every option; replayed."""
    _scan(out, g, device, 4, 256, 2047, 16, dtype=torch.bfloat16, D=True, z=True, delta_bias=True,
          delta_softplus=True, channels_last=True, again=True)


def case_scan_packed_short(out, g, device):
    """64 short packed sequences (1-300 tokens: the peeled edge tiles and the rows' windows), z."""
    lens = [1 + int(v) for v in torch.randint(300, (64,), generator=g)]
    _scan(out, g, device, 1, 64, 0, 16, dtype=torch.bfloat16, lens=lens, z=True, delta_softplus=True)


def case_scan_batch1_segments(out, g, device):
    """one 6000-token sequence of 64 channels: the forward and backward split into segments across programs, dstate
    16 (the step-by-step float64 reference takes ~40 s for it)."""
    _scan(out, g, device, 1, 64, 6000, 16, dtype=torch.bfloat16, D=True, delta_softplus=True)


def case_scan_dstate128(out, g, device):
    """dstate 128 (issue 5's second shape), grouped B and C, z."""
    _scan(out, g, device, 2, 64, 1000, 128, dtype=torch.bfloat16, ngroups=2, z=True, D=True)


def case_ssd_step(out, g, device):
    """largest tile, a strided fp16 state cache, cache rows through indices with a padding row."""
    cache = F.randn(g, 6, 4, 128, 2 * 256).to(torch.float16).to(device)[..., ::2]  # every other column: strided
    kw = dict(x=F.randn(g, 4, 4, 128, dtype=torch.bfloat16), dt=F.randn(g, 4, 4), A=-torch.rand(4) - 0.5,
              B=F.randn(g, 4, 2, 256, dtype=torch.bfloat16), C=F.randn(g, 4, 2, 256, dtype=torch.bfloat16),
              D=F.randn(g, 4, 128), z=F.randn(g, 4, 4, 128, dtype=torch.bfloat16), dt_bias=F.randn(g, 4),
              state_batch_indices=torch.tensor([5, -1, 0, 3]))
    F.step_check(out, flashssm.ssd_step, ssd_ref.ssd_step_reference, cache, {k: v.to(device) for k, v in kw.items()},
                 dict(dt_softplus=True), device, F.TOL[torch.bfloat16])


def case_scan_step(out, g, device):
    """dstate 256, grouped B/C, padding row."""
    state = F.randn(g, 5, 32, 256)
    kw = dict(u=F.randn(g, 3, 32, dtype=torch.float16), delta=F.randn(g, 3, 32), A=-torch.rand(32, 256) - 0.1,
              B=F.randn(g, 3, 2, 256, dtype=torch.float16), C=F.randn(g, 3, 2, 256, dtype=torch.float16),
              D=F.randn(g, 32), z=F.randn(g, 3, 32, dtype=torch.float16), delta_bias=F.randn(g, 32),
              state_batch_indices=torch.tensor([4, -1, 1]))
    F.step_check(out, flashssm.selective_scan_step, scan_ref.selective_scan_step_reference, state,
                 {k: v.to(device) for k, v in kw.items()}, dict(delta_softplus=True), device, F.TOL[torch.float16])


def case_conv1d(out, g, device):
    """both layouts, widths 2 and 4, packed with empty sequences, initial and final states, gradients."""
    for width, channels_last in ((4, True), (2, False)):
        lens = [0, 3, 1, 200, 0, 77]
        x = F.randn(g, 1, 5376 // 8, sum(lens), dtype=torch.bfloat16)
        if channels_last:
            x = x.transpose(1, 2).contiguous().transpose(1, 2)
        kw = dict(x=x, weight=F.randn(g, x.shape[1], width, dtype=torch.bfloat16),
                  bias=F.randn(g, x.shape[1], dtype=torch.bfloat16),
                  initial_states=F.randn(g, len(lens), x.shape[1], width - 1, dtype=torch.bfloat16))
        kw = {k: v.to(device) for k, v in kw.items()}
        cu = offsets(lens, torch.int64, device)
        options = dict(activation="silu", return_final_states=True, cu_seqlens=cu)
        F.differential(out, lambda **k: flashssm.causal_conv1d(**k, **options),
                       on_cpu(conv_ref.causal_conv1d_reference, **options), kw, g, device,
                       outputs=["out", "final_states"], backprop=["out"], grads=True, tol=F.TOL[torch.bfloat16])


def case_conv1d_update(out, g, device):
    """three new tokens into a cache with more rows than the batch, one padding row."""
    state = F.randn(g, 5, 40, 4).to(device)
    want_state = state.double().clone()
    x = F.randn(g, 3, 40, 3).to(device)
    w, b = F.randn(g, 40, 4).to(device), F.randn(g, 40).to(device)
    idx = torch.tensor([2, -1, 4], device=device)
    y = flashssm.causal_conv1d_update(x, state, w, b, "silu", conv_state_indices=idx)
    y_ref = conv_ref.causal_conv1d_update_reference(x.double(), want_state, w.double(), b.double(), "silu",
                                                    conv_state_indices=idx)
    F.compare(out, "y", y, y_ref, F.TOL[torch.float32])
    F.compare(out, "state", state, want_state, F.TOL[torch.float32])


def case_rmsnorm(out, g, device):
    """Mamba-2 2.7B's width in 8 groups and in one (a group past WIDE_GROUP: the wide backward), and an odd width;
    both gate orders; gradients."""
    for rows, dim, group, before in (((3, 7), 5120, 640, False), ((2, 3), 5120, 5120, False), ((5,), 33, 33, True)):
        kw = dict(x=F.randn(g, *rows, dim, dtype=torch.bfloat16), weight=F.randn(g, dim, dtype=torch.bfloat16),
                  z=F.randn(g, *rows, dim, dtype=torch.bfloat16))
        kw = {k: v.to(device) for k, v in kw.items()}
        options = dict(eps=1e-5, group_size=group, norm_before_gate=before)
        F.differential(out, lambda **k: flashssm.rmsnorm_gated(**k, **options),
                       on_cpu(norm_ref.rmsnorm_gated_reference, **options), kw, g, device,
                       outputs=["y"], backprop=["y"], grads=True, tol=F.TOL[torch.bfloat16])


CASES = [case_ssd_big_tiles, case_ssd_varlen, case_ssd_small, case_ssd_handover, case_ssd_deterministic,
         case_ssd_deterministic_tiles, case_ssd_tiles_spans, case_ssd_halves, case_ssd_gluon_late_train,
         case_ssd_gluon_late_z, case_ssd_gluon_fp16, case_ssd_gluon_batch1, case_ssd_gluon_packed,
         case_ssd_gluon_packed_inference, case_ssd_gluon_packed_late,
         case_scan_big_state, case_scan_long, case_scan_varlen, case_scan_mixer_layout, case_scan_packed_short,
         case_scan_batch1_segments, case_scan_dstate128, case_ssd_step, case_scan_step, case_conv1d,
         case_conv1d_update, case_rmsnorm]

# the constexpr switches that name a launch's form in the coverage report (a launch's other constexprs are sizes)
_FORM_FLAGS = ("EARLY", "TMA", "TMA_STATES", "STORE_STATES", "IS_VARLEN", "HAS_Z", "DET", "PIECES", "PDL", "FP16")


def kernels_in_source() -> list[str]:
    """Every kernel the package defines: @triton.jit and @gluon.jit functions named *_kernel."""
    import pathlib
    import re

    found = set()
    for path in pathlib.Path(flashssm.__file__).parent.rglob("*.py"):
        text = path.read_text()
        found.update(re.findall(r"@(?:triton|gluon)\.jit[^\n]*\n(?:@[^\n]*\n)*\s*def (\w+_kernel)\(", text))
    return sorted(found)


class Launches:
    """Records which kernels each case launched, and in which forms (`_FORM_FLAGS` set in their constexprs), by
    wrapping `_runtime._launch`: every launch of a call that takes its whole path (a replay launches what that
    recorded)."""

    def __init__(self):
        from flashssm import _runtime

        self.seen, self.case = {}, None
        inner = _runtime._launch

        def launch(kernel, grid, args, device, meta):
            name = getattr(getattr(kernel, "fn", None), "__name__", None) or getattr(kernel, "__name__", "?")
            form = "+".join(f for f in _FORM_FLAGS if meta.get(f) not in (None, False, 0))
            self.seen.setdefault(name, {}).setdefault(form, set()).add(self.case)
            return inner(kernel, grid, args, device, meta)

        _runtime._launch = launch

    def of(self, case: str) -> str:
        """The kernels (and forms) `case` launched, in one line."""
        return ", ".join(f"{name}[{form or '-'}]" for name, forms in sorted(self.seen.items())
                         for form, cases in sorted(forms.items()) if case in cases)

    def report(self) -> str:
        lines = []
        for name in kernels_in_source():
            forms = self.seen.get(name)
            if not forms:
                lines.append(f"  {name}: not launched")
                continue
            for form, cases in sorted(forms.items()):
                lines.append(f"  {name}[{form or '-'}]: {', '.join(sorted(c or '?' for c in cases))}")
        return "\n".join(lines)


def plant(device):
    """A kernel that writes 64 elements past the end of its 1000-element output."""
    import triton
    import triton.language as tl

    @triton.jit
    def _past_the_end(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 1.0, mask=offs < n + 64)

    out = torch.empty(1000, device=device)
    _past_the_end[(1,)](out, 1000, BLOCK=2048)
    torch.cuda.synchronize()
    print("planted kernel ran (memcheck must have reported an invalid write above)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fuzz-cases", type=int, default=24)
    parser.add_argument("--fuzz-seed", type=int, default=91)
    parser.add_argument("--plant", action="store_true")
    parser.add_argument("--device", default="cuda", help="cpu runs the driver under the Triton interpreter")
    parser.add_argument("--case", action="append", help="run only this targeted case (name without case_; repeatable)")
    args = parser.parse_args()
    device = torch.device(args.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    if args.plant:
        plant(device)
        return 0
    failed = ran = 0
    launches = Launches()
    for i, case in enumerate(CASES):
        if args.case and case.__name__.removeprefix("case_") not in args.case:
            continue
        ran += 1
        launches.case = case.__name__.removeprefix("case_")
        start = time.perf_counter()
        out = F.Outcome()
        try:
            case(out, F._gen(1000 + i), device)
        except Exception as err:  # report and go on: the sanitizer's findings matter more than one case
            out.failures.append(f"raised {type(err).__name__}: {err}")
        sync()
        failed += bool(out.failures)
        print(f"{case.__name__}: {'; '.join(out.failures) or 'ok'} ({time.perf_counter() - start:.1f} s)", flush=True)
        print(f"  launched: {launches.of(launches.case)}", flush=True)  # (a run cut short still says what ran)
    launches.case = "fuzz"
    if args.fuzz_cases:
        report = F.fuzz(args.fuzz_seed, float("inf"), list(F.CASES), device, max_cases=args.fuzz_cases,
                        log=lambda s: print(s, flush=True))
        failed += len(report["failed"])
        print(f"fuzz seed {args.fuzz_seed}: {report['cases']} cases, {len(report['failed'])} failed", flush=True)
    print("kernels launched (form: the cases that launched it):\n" + launches.report(), flush=True)
    print(f"sanitize driver: {ran} targeted cases + {args.fuzz_cases} fuzz cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
