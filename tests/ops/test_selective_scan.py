"""selective_scan's Triton kernels (forward and fused backward) against the float64 reference.

On the CPU the kernels run under the Triton interpreter at small shapes; small tiles and chunks
force several chunks per sequence and several tiles per chunk in the backward's reverse walk. The gpu-marked
tests run real shapes in bf16.
"""

import itertools

import pytest
import torch

import flashssm
from flashssm.ops.selective_scan import reference as ref
from flashssm.ops.selective_scan.autograd import selective_scan_bwd, selective_scan_fwd
from flashssm.ops.selective_scan.scan import (BackwardConfig, ForwardConfig, ckpt_layout, ckpt_states, scan_backward,
                                              scan_forward, sequence_index)
from tests.conftest import HAS_GPU
from tests.helpers import (TOLERANCES, assert_close, assert_workspace_clean, cases, filled_allocations, in_dry_run,
                           pairs_of_four, rel_err, relaid, scan_inputs, spread)

GRAD_NAMES = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")
# batch, dim, seqlen, dstate, ngroups (None: B and C shared by the channels)
SHAPES = [(2, 6, 37, 5, None), (1, 3, 1, 16, None), (2, 8, 70, 4, 2), (1, 4, 33, 3, 4), (3, 5, 16, 8, 1)]
SHAPE_IDS = [f"B{b}-D{d}-L{l}-N{n}-G{g}" for b, d, l, n, g in SHAPES]
OPTIONS = list(itertools.product([False, True], repeat=4))  # D, z, delta_bias, delta_softplus
OPTION_IDS = [f"D{int(a)}-z{int(b)}-bias{int(c)}-sp{int(d)}" for a, b, c, d in OPTIONS]


def _inputs(shape, dtype, device, opts=(True, True, True, True)):
    batch, dim, seqlen, dstate, ngroups = shape
    D, z, bias, sp = opts
    kw = scan_inputs(batch, dim, seqlen, dstate, ngroups=ngroups, dtype=dtype, device=device, D=D, z=z,
                     delta_bias=bias, delta_softplus=sp)
    if bias and not sp:  # keep delta positive: a negative one makes the state grow past fp32
        kw["delta_bias"] = kw["delta_bias"].abs() * 0.1
    return kw


def _grads_ref(kw, dy, dlast=None, cu_seqlens=None):
    """y, last_state and every gradient of the float64 reference."""
    leaves = {k: v.double().requires_grad_() for k, v in kw.items() if isinstance(v, torch.Tensor)}
    rest = {k: v for k, v in kw.items() if not isinstance(v, torch.Tensor)}
    y, last = ref.selective_scan_reference(**leaves, **rest, return_last_state=True, cu_seqlens=cu_seqlens)
    loss = (y * dy.double()).sum() + (0 if dlast is None else (last * dlast.double()).sum())
    names = [k for k in GRAD_NAMES if k in leaves]
    grads = torch.autograd.grad(loss, [leaves[k] for k in names])
    return y.detach(), last.detach(), dict(zip(names, grads))


def _packed_case(lengths, dim, dstate, ngroups, device, dlast=True):
    """Packed sequences of `lengths` (batch 1, fp32, B and C in ngroups groups; None: shared), a random dy and
    last-state gradient: (cu, cu_seqlens, inputs, dy, dlast, the float64 reference's (y, last states, gradients))."""
    cu = [0] + list(itertools.accumulate(lengths))
    kw = _inputs((1, dim, cu[-1], dstate, ngroups), torch.float32, device)
    cu_t = torch.tensor(cu, dtype=torch.int32, device=device)
    dy = torch.randn_like(kw["u"])
    dl = torch.randn(len(lengths), dim, dstate, device=device) if dlast else None
    return cu, cu_t, kw, dy, dl, _grads_ref(kw, dy, dl, cu_seqlens=cu_t)


def _check_grads(got: dict, expected: dict, dtype, what=""):
    for name, g in expected.items():
        # reductions over many tokens (A, D, delta_bias) sum rounding errors of opposite sign: 4x
        tol = TOLERANCES[dtype] * (4 if name in ("A", "D", "delta_bias") else 1)
        assert got[name] is not None, f"{what}d{name} missing"
        assert got[name].shape == g.shape, f"{what}d{name}: shape {tuple(got[name].shape)} != {tuple(g.shape)}"
        assert not torch.isnan(got[name]).any(), f"{what}d{name}: NaN"
        err = rel_err(got[name], g)
        assert err <= tol, f"{what}d{name}: relative error {err:.3e} > {tol:.0e}"


def _entering_ref(kw, tokens):
    """The float64 reference's state entering token `tokens` (the last state of the tokens before it)."""
    return ref.selective_scan_reference(**{n: (v[..., :tokens] if n in ("u", "delta", "z", "B", "C") else v).double()
                                           if isinstance(v, torch.Tensor) else v for n, v in kw.items()},
                                        return_last_state=True)[1]


def _direct(kw, dy, dlast, *, fwd_cfg, bwd_cfg, cu_seqlens=None, deterministic=False, rows=True):
    """The launchers called directly with chosen tiles: (y, last, grads by name). Packed sequences: the rows of
    `varlen_rows`, forward and backward (a chain of segments a sequence), or with rows False the packed row as one
    sequence."""
    seq = sequence_index(cu_seqlens, kw["u"].shape[2]) if cu_seqlens is not None else None
    num_seqs = None if cu_seqlens is None else cu_seqlens.numel() - 1
    offsets = tuple(cu_seqlens.tolist()) if cu_seqlens is not None and rows else None
    args = [kw.get(k) for k in GRAD_NAMES]
    y, last, ckpt = scan_forward(*args, kw.get("delta_softplus", False), seq_index=seq, num_seqs=num_seqs,
                                 return_last_state=True, ckpt_tile=bwd_cfg.chunk, config=fwd_cfg, offsets=offsets)
    grads = scan_backward(dy, dlast, *args, kw.get("delta_softplus", False), ckpt=ckpt, ckpt_tile=bwd_cfg.chunk,
                          seq_index=seq, deterministic=deterministic, config=bwd_cfg, offsets=offsets)
    return y, last, {k: g for k, g in zip(GRAD_NAMES, grads) if kw.get(k) is not None}


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_forward_and_gradients_several_chunks(shape, device):
    """Chunks of 8 tokens in tiles of 4, 2 lanes per channel: the gradient runs back through several
    chunks and tiles, and several programs add to dB, dC."""
    kw = _inputs(shape, torch.float32, device)
    dy = torch.randn_like(kw["u"])
    n_out = shape[0]
    dlast = torch.randn(n_out, shape[1], shape[3], device=device)
    y_ref, last_ref, g_ref = _grads_ref(kw, dy, dlast)
    block = 1 if shape[4] is not None and shape[1] // shape[4] == 1 else 2
    y, last, grads = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(block, 2, 8, 1),
                             bwd_cfg=BackwardConfig(block, 2, 4, 8, 1))
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(last, last_ref, torch.float32, "last_state")
    _check_grads(grads, g_ref, torch.float32)


# lanes per channel, tile, B and C loaded a tile ahead into registers (prefetch_bc 64) or not;
# shapes where the lanes leave padded state slots, tiles that end mid-sequence
FWD_LAYOUTS = [(1, 2, 0), (2, 4, 0), (4, 8, 64), (8, 1, 0)]


@pytest.mark.parametrize("lanes,tile,prefetch,dtype", spread(
    FWD_LAYOUTS, [torch.float32, torch.bfloat16, torch.float16], [f"lanes{a}-tile{b}-pf{c}" for a, b, c in FWD_LAYOUTS],
    ["fp32", "bf16", "fp16"]))
def test_forward_layouts(lanes, tile, prefetch, dtype, device):
    """The forward with every split of the states across lanes and every tile, against float64: y,
    the last states and the states kept for the backward, with shared and grouped B and C, packed
    sequences (empty and one-token ones) and a length that ends mid-tile."""
    for shape, cu in (((2, 6, 38, 5, None), None), ((1, 8, 35, 6, 2), [0, 9, 9, 10, 35])):
        kw = _inputs(shape, dtype, device)
        cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32, device=device)
        y_ref, last_ref = ref.selective_scan_reference(**{k: v.double() if isinstance(v, torch.Tensor) else v
                                                          for k, v in kw.items()},
                                                       return_last_state=True, cu_seqlens=cu_t)
        seq = None if cu is None else sequence_index(cu_t, shape[2])
        block = 2 if shape[4] else 4
        args = [kw.get(k) for k in GRAD_NAMES]
        y, last, ckpt = scan_forward(*args, True, seq_index=seq, num_seqs=None if cu is None else len(cu) - 1,
                                     return_last_state=True, ckpt_tile=8,
                                     config=ForwardConfig(block, lanes, tile, 1, prefetch_bc=prefetch))
        assert y.dtype == dtype and not torch.isnan(y).any()
        assert_close(y, y_ref, dtype, "y")
        assert_close(last, last_ref, dtype, "last_state")
        if cu is None:  # the state entering token 8 is the last state of the first 8 tokens
            assert_close(ckpt_states(ckpt)[:, 1], _entering_ref(kw, 8), dtype, "ckpt")
            assert torch.count_nonzero(ckpt[:, 0]) == 0


# dstate, the forward's lanes, the backward's lanes: the stored states in runs of the default backward's lanes
# (`ckpt_layout`: dstate 8 two runs of 4, dstate 16 four runs of 4, dstate 12 four runs of 3), stored in groups of 4
# slots by forward lanes that divide the runs' count (STEP 4, 2 and 1 slot apart) and slot by slot otherwise (4
# lanes at dstate 8, runs of 3); read back by backward lanes other than the runs' count too. dstate 12 at one lane
# both ways: the last state and dA, in natural order, stored four slots at a time (three groups a channel)
# (the default CPU run: slot by slot, STEP 4 and 2, dstate 12 at one lane; the rest with --full)
LANE_RUNS = [(8, 1, 2), (8, 2, 1), (8, 4, 4), (16, 1, 4), (16, 2, 2), (16, 4, 8), (12, 2, 4), (12, 1, 1)]


@pytest.mark.parametrize("dstate,fwd_lanes,bwd_lanes", cases(
    LANE_RUNS, [f"n{a}-fwd{b}-bwd{c}" for a, b, c in LANE_RUNS],
    full_ids=("n8-fwd1-bwd2", "n8-fwd2-bwd1", "n16-fwd4-bwd8", "n12-fwd2-bwd4")))
def test_states_stored_in_lane_runs(dstate, fwd_lanes, bwd_lanes, device):
    """The backward's stored states ordered by the backward's lanes: each stored state (back in natural order)
    against float64, the last state, and every gradient of a backward reading them, with a channel block cut by
    dim."""
    ck, run = ckpt_layout(dstate)
    assert (ck, run) == {8: (2, 4), 16: (4, 4), 12: (4, 3)}[dstate]
    kw = _inputs((2, 6, 21, dstate, None), torch.float32, device)
    dy = torch.randn_like(kw["u"])
    dlast = torch.randn(2, 6, dstate, device=device)
    _, last_ref, g_ref = _grads_ref(kw, dy, dlast)
    args = [kw.get(k) for k in GRAD_NAMES]
    block = max(1, 16 // fwd_lanes)
    _, _, ckpt = scan_forward(*args, True, ckpt_tile=8, config=ForwardConfig(block, fwd_lanes, 4, 1))
    assert torch.count_nonzero(ckpt[:, 0]) == 0
    for k in (1, 2):  # the state entering token 8 k is the last state of the first 8 k tokens
        entering = _entering_ref(kw, 8 * k)
        assert_close(ckpt_states(ckpt)[:, k], entering, torch.float32, f"ckpt[:, {k}]")
        assert (ckpt[:, k] - entering.float()).abs().max() > 1e-2  # (stored out of natural order)
    _, last, grads = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(block, fwd_lanes, 4, 1),
                             bwd_cfg=BackwardConfig(max(1, 8 // bwd_lanes), bwd_lanes, 4, 8, 1))
    assert_close(last, last_ref, torch.float32, "last_state")
    _check_grads(grads, g_ref, torch.float32)


@pytest.mark.parametrize("dtype", cases([(torch.bfloat16,), (torch.float16,)], ["bf16", "fp16"], full_ids=("bf16",)))
def test_forward_bc_tiles_in_input_dtype(dtype, device, monkeypatch):
    """The forward reads B and C from tiles in their own 16-bit dtype (`BC_INPUT_DTYPE`) above dstate 16 and where it
    stores the backward's states, 8 tokens a 16-byte load: y, the last state and the stored states bit-identical to
    the fp32 tiles' and close to float64, grouped B/C (dstate 20, a ragged last tile), shared (dstate 16, states
    stored), and one lane in segments (their first pass reads the tiles too)."""
    from flashssm.ops.selective_scan import scan

    for shape, ckpt_tile, cfg in (((2, 8, 45, 20, 2), None, ForwardConfig(4, 2, 8, 1)),
                                  ((2, 8, 45, 16, None), 16, ForwardConfig(4, 2, 8, 1)),
                                  ((1, 8, 45, 16, None), 16, ForwardConfig(4, 1, 8, 1, segment=16))):
        kw = _inputs(shape, dtype, device)
        y_ref, last_ref = ref.selective_scan_reference(**{k: v.double() if isinstance(v, torch.Tensor) else v
                                                          for k, v in kw.items()}, return_last_state=True)
        args = [kw.get(k) for k in GRAD_NAMES]
        out = {}
        for on in (False, True):
            monkeypatch.setattr(scan, "BC_INPUT_DTYPE", on)
            out[on] = scan_forward(*args, True, return_last_state=True, ckpt_tile=ckpt_tile, config=cfg)
        assert_close(out[True][0], y_ref, dtype, f"{shape}: y")
        assert_close(out[True][1], last_ref, dtype, f"{shape}: last_state")
        for a, b in zip(out[False], out[True]):
            if a is not None:
                assert torch.equal(a, b), shape


def test_forward_output_shared_by_lanes(device, monkeypatch):
    """The forward's output work (the gate, D's term, y's store) shared by a channel's lanes, each its share of a
    tile's tokens (`SPLIT_OUT_FWD`), against the tile's own layout, which repeats it on every lane: y, the last states
    and the stored states bit-identical (on a GPU, where a multiply-add may contract otherwise, within 1e-6), y against
    float64. Two lanes at tiles of 8 and 2 tokens (one token a lane), four lanes, a length that ends mid-tile, with and
    without the gate and D, late segments, and packed sequences as rows of their own (their edge tiles' masks) and
    sharing rows (the per-token sequence index)."""
    from flashssm.ops.selective_scan import scan

    runs = [((2, 8, 45, 16, None), (True, True, True, True), ForwardConfig(4, 2, 8, 1), None),
            ((2, 8, 45, 6, 2), (False, True, False, True), ForwardConfig(2, 4, 8, 1), None),
            ((1, 8, 37, 5, None), (True, False, True, False), ForwardConfig(4, 2, 2, 1), None),
            ((1, 8, 45, 16, None), (True, True, True, True), ForwardConfig(4, 2, 8, 1, segment=16, hand_late=True),
             None),
            ((1, 8, 45, 6, 2), (True, True, True, True), ForwardConfig(4, 2, 8, 1), [0, 9, 9, 10, 45])]
    for shape, opts, cfg, cu in runs:
        for group in (0, 12) if cu else (0,):
            monkeypatch.setattr(scan, "ROW_GROUP", group)
            kw = _inputs(shape, torch.float32, device, opts)
            cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32, device=device)
            y_ref, last_ref = ref.selective_scan_reference(**{k: v.double() if isinstance(v, torch.Tensor) else v
                                                              for k, v in kw.items()},
                                                           return_last_state=True, cu_seqlens=cu_t)
            packed = {} if cu is None else dict(seq_index=sequence_index(cu_t, shape[2]), num_seqs=len(cu) - 1,
                                                offsets=tuple(cu))
            args = [kw.get(k) for k in GRAD_NAMES]
            out = {}
            for on in (False, True):
                monkeypatch.setattr(scan, "SPLIT_OUT_FWD", on)
                out[on] = scan_forward(*args, kw.get("delta_softplus", False), return_last_state=True,
                                       ckpt_tile=None if cu else 16, config=cfg, **packed)
            what = f"{shape} {opts} {cfg} group {group}"
            assert_close(out[True][0], y_ref, torch.float32, f"{what}: y")
            assert_close(out[True][1], last_ref, torch.float32, f"{what}: last_state")
            for a, b in zip(out[False], out[True]):
                if a is not None:
                    if HAS_GPU:  # (a multiply-add may contract otherwise)
                        assert rel_err(b, a) <= 1e-6, what
                    else:
                        assert torch.equal(a, b), what


# (shape, options D z bias softplus, the backward's configuration, cu_seqlens, deterministic): four lanes at tiles of 8
# (two tokens a lane) with every option, and without the gate and D in deterministic mode; two lanes at tiles of 2 in
# segments; packed sequences as rows of their own and sharing rows (the default CPU run: the first and the packed)
SHARED_TOKENS_RUNS = [((2, 8, 45, 16, None), (True, True, True, True), BackwardConfig(2, 4, 8, 16, 1), None, False),
                      ((2, 8, 45, 6, 2), (False, False, True, True), BackwardConfig(2, 4, 8, 16, 1), None, True),
                      ((1, 8, 45, 5, None), (True, True, False, False), BackwardConfig(4, 2, 2, 8, 1, segment=16), None,
                       False),
                      ((1, 8, 45, 6, 2), (True, True, True, True), BackwardConfig(2, 4, 8, 8, 1), [0, 9, 9, 10, 45],
                       False)]


@pytest.mark.parametrize("shape,opts,bcfg,cu,deterministic", cases(
    SHARED_TOKENS_RUNS, ["lanes4", "lanes4-deterministic", "lanes2-segments", "packed"],
    full_ids=("lanes4-deterministic", "lanes2-segments")))
def test_backward_tokens_shared_by_lanes(shape, opts, bcfg, cu, deterministic, device, monkeypatch):
    """The backward's per-token work shared by a channel's lanes (`SHARED_TOKENS_BWD`: the tile's softplus, the gate's
    sigmoid and dy computed once a channel and handed to its lanes, du, ddelta, dz and the shares of dD and
    ddelta_bias each lane's share) against every lane computing it: du, ddelta, dz and the other gradients
    bit-identical (on a GPU, where a multiply-add may contract otherwise, within 1e-6), dD and ddelta_bias (summed in
    another order) within fp32 rounding, every gradient against float64 (packed: rows of their own, the edge chunks'
    masks, and rows shared by short sequences, the sequence index)."""
    from flashssm.ops.selective_scan import scan

    for group in (0, 12) if cu else (0,):
        monkeypatch.setattr(scan, "ROW_GROUP", group)
        kw = _inputs(shape, torch.float32, device, opts)
        cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32, device=device)
        dy = torch.randn_like(kw["u"])
        dlast = torch.randn(shape[0] if cu is None else len(cu) - 1, shape[1], shape[3], device=device)
        _, _, g_ref = _grads_ref(kw, dy, dlast, cu_seqlens=cu_t)
        out = {}
        for on in (False, True):
            monkeypatch.setattr(scan, "SHARED_TOKENS_BWD", on)
            out[on] = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(4, 2, 8, 1), bwd_cfg=bcfg, cu_seqlens=cu_t,
                              deterministic=deterministic)[2]
        what = f"group {group}: "
        _check_grads(out[True], g_ref, torch.float32, what)
        for name, g in out[False].items():
            if name in ("D", "delta_bias"):
                assert_close(out[True][name], g, torch.float32, what + name)
            elif HAS_GPU:  # (a multiply-add may contract otherwise; dB and dC: float atomics in any order)
                assert rel_err(out[True][name], g) <= 1e-6, what + name
            else:
                assert torch.equal(out[True][name], g), what + name


# lanes per channel, tile, chunk (tokens between stored states; several tiles per chunk or one)
BWD_LAYOUTS = [(1, 4, 8), (2, 8, 16), (4, 8, 32), (8, 2, 8)]


@pytest.mark.parametrize("lanes,tile,chunk", cases(
    BWD_LAYOUTS, [f"lanes{a}-tile{b}-chunk{c}" for a, b, c in BWD_LAYOUTS],
    full_ids=("lanes2-tile8-chunk16", "lanes8-tile2-chunk8")))
def test_backward_layouts(lanes, tile, chunk, device):
    """The backward with every split of the states across lanes, tiles and chunks, against float64:
    every gradient, with shared and grouped B and C, packed sequences (empty and one-token ones, a
    last-state gradient per sequence) and a length that ends mid-chunk (shared B and C at the default
    lanes only: the interpreter is slow)."""
    cases = [((1, 8, 35, 6, 2), [0, 9, 9, 10, 35])] + ([((2, 6, 38, 5, None), None)] if lanes == 4 else [])
    for shape, cu in cases:
        kw = _inputs(shape, torch.float32, device)
        cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32, device=device)
        dy = torch.randn_like(kw["u"])
        dlast = torch.randn(shape[0] if cu is None else len(cu) - 1, shape[1], shape[3], device=device)
        _, _, g_ref = _grads_ref(kw, dy, dlast, cu_seqlens=cu_t)
        block = 2 if shape[4] else 8 // lanes
        _, _, grads = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(2, 1, 8, 1),
                              bwd_cfg=BackwardConfig(block, lanes, tile, chunk, 1), cu_seqlens=cu_t)
        _check_grads(grads, g_ref, torch.float32, f"{shape}: ")


# forward (lanes, tile, segment), backward (lanes, tile, chunk, segment): several segments per sequence, one
# that does not divide it, one that is a single tile or chunk
# and whether the forward hands its state on late. Each layout once, both hand-overs among them: the full cross
# product took 4 minutes of the interpreter, CI's largest share, for no path these three do not take
SEGMENT_LAYOUTS = [((1, 4, 8), (2, 4, 8, 16), False), ((2, 8, 16), (4, 8, 8, 8), True),
                   ((4, 2, 6), (1, 2, 8, 24), True)]


SEGMENT_IDS = [f"fwd{a}-bwd{b}{'-late' * c}".replace(" ", "") for a, b, c in SEGMENT_LAYOUTS]


# (the four-lane forward's late hand-over with the one-lane backward, 34 s of the interpreter, runs with --full and on
# the GPU; the default run keeps one layout of each hand-over)
@pytest.mark.parametrize("fwd,bwd,hand_late", cases(SEGMENT_LAYOUTS, SEGMENT_IDS, full_ids=(SEGMENT_IDS[2],)))
def test_segments(fwd, bwd, hand_late, device):
    """The sequence cut into segments, one program each, the state (forward) and its gradient
    (backward) handed between them: y, the last states, the stored states and every gradient against
    float64, with shared and grouped B and C, packed sequences that start and end inside and on the
    edges of segments (empty and one-token ones, a last-state gradient per sequence), and deterministic
    mode; the workspace is clean afterwards. The forward hands the state on before its output pass (its
    own first pass) or after it (hand_late); packed sequences each as a chain of segments from its first token's
    tile (`varlen_rows`), and once as the packed row cut into segments."""
    cases = [((2, 6, 38, 5, None), None, False, True), ((1, 8, 35, 6, 2), [0, 9, 9, 10, 35], False, True),
             ((1, 4, 40, 3, None), [0, 8, 8, 17, 40], True, True), ((1, 8, 35, 6, 2), [0, 9, 9, 10, 35], False, False)]
    for shape, cu, deterministic, rows in cases:
        kw = _inputs(shape, torch.float32, device)
        cu_t = None if cu is None else torch.tensor(cu, dtype=torch.int32, device=device)
        dy = torch.randn_like(kw["u"])
        dlast = torch.randn(shape[0] if cu is None else len(cu) - 1, shape[1], shape[3], device=device)
        y_ref, last_ref, g_ref = _grads_ref(kw, dy, dlast, cu_seqlens=cu_t)
        block = 2 if shape[4] else 4
        y, last, grads = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(block, fwd[0], fwd[1], 1, segment=fwd[2],
                                                                   hand_late=hand_late),
                                 bwd_cfg=BackwardConfig(block, bwd[0], bwd[1], bwd[2], 1, segment=bwd[3]),
                                 cu_seqlens=cu_t, deterministic=deterministic, rows=rows)
        assert_close(y, y_ref, torch.float32, f"{shape}: y")
        assert_close(last, last_ref, torch.float32, f"{shape}: last_state")
        _check_grads(grads, g_ref, torch.float32, f"{shape}: ")
        if cu is None:  # the states kept for the backward, at every segment edge too
            args = [kw.get(k) for k in GRAD_NAMES]
            _, _, ckpt = scan_forward(*args, True, return_last_state=False, ckpt_tile=8,
                                      config=ForwardConfig(block, fwd[0], fwd[1], 1, segment=fwd[2],
                                                           hand_late=hand_late))
            _, _, ckpt1 = scan_forward(*args, True, return_last_state=False, ckpt_tile=8,
                                       config=ForwardConfig(block, fwd[0], fwd[1], 1))
            assert_close(ckpt, ckpt1, torch.float32, "ckpt")
    assert_workspace_clean()


# (the per-token form on rows of one sequence, the A/B switch's other side, runs with --full and on the GPU: the shared
# rows take that form by default)
@pytest.mark.parametrize("group,window", cases([(0, True), (12, True), (0, False)],
                                               ["row-each", "shared-rows", "row-each-varlen-form"],
                                               full_ids=("row-each-varlen-form",)))
def test_packed_rows(group, window, device, monkeypatch):
    """Packed sequences as the rows of a dense batch (`varlen_rows`), forward and backward: a row per sequence
    (group 0; the backward reads each one's boundaries from its row, or with WINDOW_BWD off from the per-token
    sequence index) or short sequences sharing a row (group 12: the per-token index), sequences that start and end
    inside chunks, empty and one-token ones, a long one cut into segments whose gradient is handed back between
    them (and one without segments), deterministic mode: y, the last states and every gradient against float64
    (NaN-poisoned outputs), and the tables have the rows the case is about. The workspace is clean afterwards."""
    from flashssm.ops.selective_scan import scan
    from flashssm.ops.selective_scan.scan import varlen_rows

    monkeypatch.setattr(scan, "ROW_GROUP", group)
    monkeypatch.setattr(scan, "WINDOW_BWD", window)
    # (the 9-token sequence ends one token before a tile's end, and the next one starts there: an edge tile taken
    # for an inner one would let one sequence's token into the other's state)
    cu, cu_t, kw, dy, dlast, (y_ref, last_ref, g_ref) = _packed_case([5, 0, 1, 19, 3, 4, 30, 9, 6], 8, 5, 2, device)
    assert cu[-2] % 8 == 7
    for segment, deterministic in ((0, False), (16, True)):
        table, n_rows, shared, chained = varlen_rows(tuple(cu), segment, 8, torch.device("cpu"), group)
        lo_hi = [tuple(row[2:4]) for row in table.tolist()]
        assert shared == bool(group) and chained == bool(segment)
        if group:  # the first three sequences share a row, and its window spans them
            assert (0, 6) in lo_hi, lo_hi
        else:
            assert n_rows >= 5 and [row[6] for row in table.tolist()][:5] == [0, 2, 3, 4, 5], table
        if segment:  # the 30-token sequence's segments: each but the first follows its previous one
            assert sum(row[4] >= 0 for row in table.tolist()) >= 1, table
        y, last, grads = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(4, 2, 8, 1),
                                 bwd_cfg=BackwardConfig(4, 2, 4, 8, 1, segment=segment), cu_seqlens=cu_t,
                                 deterministic=deterministic)
        what = f"segment {segment}: "
        assert_close(y, y_ref, torch.float32, what + "y")
        assert_close(last, last_ref, torch.float32, what + "last_state")
        _check_grads(grads, g_ref, torch.float32, what)
    assert_workspace_clean()


@pytest.mark.parametrize("where_chained", [True, False], ids=["where-chained", "config-rule"])
def test_rows_hand_over_compiled_where_chained(where_chained, device, monkeypatch):
    """SEGMENTS_WHERE_CHAINED: the packed rows' kernels compile the hand-over between segments only where some row
    chains on to another; off, the forward where its configuration has segments and the backward always. Both
    configurations have segments of 16 tokens; one packing's sequences all fit in a segment (no row chains), the
    other's 30-token one takes two. The SEGMENTS each launch compiled is the rule's, and y, the last states and every
    gradient match float64 either way."""
    from flashssm import _runtime
    from flashssm.ops.selective_scan import scan

    monkeypatch.setattr(scan, "SEGMENTS_WHERE_CHAINED", where_chained)
    monkeypatch.setattr(scan, "ROW_GROUP", 0)
    launched = {}
    launch = _runtime.launch

    def spy(kernel, grid, args, dev, **meta):
        if "SEGMENTS" in meta:
            launched[kernel.fn.__name__ if hasattr(kernel, "fn") else kernel.__name__] = meta["SEGMENTS"]
        return launch(kernel, grid, args, dev, **meta)

    monkeypatch.setattr(_runtime, "launch", spy)
    for lengths, chains in (([5, 0, 1, 9, 3, 4, 7, 6], False), ([5, 0, 1, 9, 3, 30, 7, 6], True)):
        cu, cu_t, kw, dy, dlast, (y_ref, last_ref, g_ref) = _packed_case(lengths, 4, 5, 2, device)
        assert scan.varlen_rows(tuple(cu), 16, 8, torch.device("cpu"))[3] == chains
        launched.clear()
        y, last, grads = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(2, 2, 8, 1, segment=16),
                                 bwd_cfg=BackwardConfig(2, 2, 4, 8, 1, segment=16), cu_seqlens=cu_t)
        want = (chains, chains) if where_chained else (True, True)
        assert (launched["_scan_fwd_kernel"], launched["_scan_bwd_kernel"]) == want, launched
        what = f"chains {chains}: "
        assert_close(y, y_ref, torch.float32, what + "y")
        assert_close(last, last_ref, torch.float32, what + "last_state")
        _check_grads(grads, g_ref, torch.float32, what)
    assert_workspace_clean()


@pytest.mark.parametrize("segment", [0, 8], ids=["whole-rows", "segments"])
def test_rows_peeled_edge_tiles(segment, device, monkeypatch):
    """PEEL_EDGE_TILES_FWD: the forward's rows of one sequence run their masked first and last tiles outside the dense
    tiles' loop. The same operations in the same order, so y, the last states and the backward's stored states are the
    same bits as with one loop; and y and the last states match float64. Sequences that start and end inside tiles, on
    their edges, within one tile (1, 3 and 5 tokens), empty, and one cut into segments of 8 (the middle ones inner
    throughout)."""
    from flashssm.ops.selective_scan import scan

    monkeypatch.setattr(scan, "ROW_GROUP", 0)
    cu, cu_t, kw, dy, dlast, (y_ref, last_ref, _) = _packed_case([5, 0, 1, 19, 3, 8, 30, 9, 6], 4, 5, 2, device)
    assert scan.varlen_rows(tuple(cu), segment, 8, torch.device("cpu"))[3] == bool(segment)
    args = [kw.get(k) for k in GRAD_NAMES]
    seq = sequence_index(cu_t, cu[-1])
    outs = []
    for peel in (False, True):
        monkeypatch.setattr(scan, "PEEL_EDGE_TILES_FWD", peel)
        outs.append(scan_forward(*args, kw.get("delta_softplus", False), seq_index=seq, num_seqs=len(cu) - 1,
                                 return_last_state=True, ckpt_tile=8, config=ForwardConfig(2, 2, 8, 1, segment=segment),
                                 offsets=tuple(cu)))
    (y0, last0, ck0), (y1, last1, ck1) = outs
    assert torch.equal(y0, y1) and torch.equal(last0, last1) and torch.equal(ck0, ck1)
    assert_close(y1, y_ref, torch.float32, "y")
    assert_close(last1, last_ref, torch.float32, "last_state")
    assert_workspace_clean()


def test_peel_rule(device, monkeypatch):
    """PEEL_EDGE_TILES_FWD's default (None): the forward's rows of one sequence peel their edge tiles where it stores
    the backward's states, or where the sequences average at most PEEL_MEAN_TOKENS tokens; True and False force it. The
    PEEL each forward launch compiles is the rule's, and y matches float64 either way."""
    from flashssm import _runtime
    from flashssm.ops.selective_scan import scan

    assert scan.PEEL_EDGE_TILES_FWD is None
    assert scan.peel_edge_tiles((0, 300, 600), False) and scan.peel_edge_tiles((0, 3000, 6000), True)
    assert not scan.peel_edge_tiles((0, 3000, 6000), False)
    monkeypatch.setattr(scan, "ROW_GROUP", 0)
    monkeypatch.setattr(scan, "PEEL_MEAN_TOKENS", 8)  # (the case's 9 sequences of 86 tokens average 9.6)
    peeled = []
    launch = _runtime.launch

    def spy(kernel, grid, args, dev, **meta):
        if "PEEL" in meta:
            peeled.append(meta["PEEL"])
        return launch(kernel, grid, args, dev, **meta)

    monkeypatch.setattr(_runtime, "launch", spy)
    cu, cu_t, kw, dy, dlast, (y_ref, _, _) = _packed_case([5, 0, 1, 19, 3, 8, 30, 9, 11], 4, 5, 2, device)
    args = [kw.get(k) for k in GRAD_NAMES]
    seq = sequence_index(cu_t, cu[-1])
    for mean, forced, ckpt_tile, want in ((8, None, None, False), (8, None, 8, True), (10, None, None, True),
                                          (10, False, 8, False), (8, True, None, True)):
        monkeypatch.setattr(scan, "PEEL_MEAN_TOKENS", mean)
        monkeypatch.setattr(scan, "PEEL_EDGE_TILES_FWD", forced)
        peeled.clear()
        y, _, _ = scan_forward(*args, kw.get("delta_softplus", False), seq_index=seq, num_seqs=len(cu) - 1,
                               return_last_state=True, ckpt_tile=ckpt_tile,
                               config=ForwardConfig(2, 2, 8, 1, segment=0), offsets=tuple(cu))
        assert peeled == [want], (mean, forced, ckpt_tile, peeled)
        assert_close(y, y_ref, torch.float32, f"y (peel {want})")
    assert_workspace_clean()


@pytest.mark.parametrize("dlast", [True, False], ids=["last-state-grad", ""])
def test_shared_rows_clean_chunks(dlast, device, monkeypatch):
    """SHARED_CHUNKS_DENSE: in a launch whose rows are shared by short sequences, the backward runs a chunk inside a
    row's tokens with the dense code where no sequence starts in it (nor, with the last states' gradient, ends at its
    last token), and every other with the sequence index and the window; SHARED_TILES_DENSE: the forward's tiles the
    same way (with the last states returned). Chunks and tiles of 8 tokens here: a shared row [0, 29) of four
    sequences whose inner chunks hold a start at 3, an end at 15 (the next starting at 16, the chunk after), and a
    start at 16; a 40-token sequence whose inner chunks are clean; a shared row whose inner chunk ends the packing (and
    its last sequence). y, the last states and every gradient against float64, with and without the last states'
    gradient."""
    from flashssm.ops.selective_scan import scan
    from flashssm.ops.selective_scan.scan import varlen_rows

    monkeypatch.setattr(scan, "ROW_GROUP", 32)
    monkeypatch.setattr(scan, "SHARED_CHUNKS_DENSE", True)
    monkeypatch.setattr(scan, "SHARED_TILES_DENSE", True)
    cu, cu_t, kw, dy, dl, (y_ref, last_ref, g_ref) = _packed_case([3, 13, 8, 5, 40, 1, 10], 8, 4, 2, device, dlast)
    table, _, shared, chained = varlen_rows(tuple(cu), 0, 8, torch.device("cpu"), 32)
    assert shared and not chained, table
    assert [tuple(row[2:4]) for row in table.tolist()] == [(0, 29), (29, 69), (69, 80)], table
    y, last, grads = _direct(kw, dy, dl, fwd_cfg=ForwardConfig(4, 2, 8, 1), bwd_cfg=BackwardConfig(4, 2, 4, 8, 1),
                             cu_seqlens=cu_t)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(last, last_ref, torch.float32, "last_state")
    _check_grads(grads, g_ref, torch.float32, "")
    assert_workspace_clean()


# The packed forms a kernel takes: the per-token sequence index over the whole packed row (one program a block of
# channels); that row cut into segments, the state handed on early or late; the rows of `varlen_rows`, one sequence a
# row (a long one a chain of segments; the edge tiles and chunks take the window's masks; "rows-whole": the forward
# without segments, each row a whole sequence and no hand-over code) or short ones sharing a row.
# ("shared-rows-clean-chunks": with the chunks and tiles inside one sequence by the dense code, SHARED_CHUNKS_DENSE for
# the backward and SHARED_TILES_DENSE for the forward, the default; "shared-rows": both switches off)
PACKED_FORMS = {
    "whole": (ForwardConfig(2, 1, 4, 1), BackwardConfig(2, 2, 4, 8, 1), False, None),
    "segments": (ForwardConfig(2, 1, 4, 1, segment=8), BackwardConfig(2, 2, 4, 8, 1, segment=16), False, None),
    "segments-late": (ForwardConfig(2, 2, 8, 1, segment=8, hand_late=True), BackwardConfig(2, 1, 2, 8, 1, segment=8),
                      False, None),
    "rows": (ForwardConfig(2, 2, 8, 1, segment=8), BackwardConfig(2, 2, 4, 8, 1, segment=16), True, 0),
    "rows-whole": (ForwardConfig(2, 2, 8, 1), BackwardConfig(2, 2, 4, 8, 1, segment=16), True, 0),
    "shared-rows": (ForwardConfig(2, 2, 8, 1), BackwardConfig(2, 2, 4, 8, 1), True, 12),
    "shared-rows-clean-chunks": (ForwardConfig(2, 2, 8, 1), BackwardConfig(2, 2, 4, 8, 1), True, 12),
}


@pytest.mark.parametrize("form", cases([(f,) for f in PACKED_FORMS], list(PACKED_FORMS),
                                       full_ids=("segments-late", "shared-rows")))
def test_packed_nan_stays_in_its_sequence(form, device, monkeypatch):
    """A NaN or inf in one packed sequence's inputs (u, delta, B, C, z at one token) or in the gradients reaching one
    sequence (dy at a token, its last state's) reaches that sequence's outputs and gradients only: every other
    sequence's y, last state and per-token gradients are the float64 reference's, which runs each sequence on its
    own. (The state used to be dropped at a sequence's first token by a multiplication by 0, and 0 x NaN is NaN: one
    bad prompt of a packed prefill made every later one NaN, and one bad sequence's gradient every earlier one's.)
    The NaN sequence's later outputs are NaN, as in the reference. And an A of -inf (a decay of 0) keeps the forward
    finite, as in the reference."""
    from flashssm.ops.selective_scan import scan

    fwd_cfg, bwd_cfg, rows, group = PACKED_FORMS[form]
    if group is not None:
        monkeypatch.setattr(scan, "ROW_GROUP", group)
    monkeypatch.setattr(scan, "SHARED_CHUNKS_DENSE", form.endswith("clean-chunks"))
    monkeypatch.setattr(scan, "SHARED_TILES_DENSE", form.endswith("clean-chunks"))
    lengths = [5, 0, 1, 19, 3, 4, 30, 9, 6]
    cu = [0] + list(itertools.accumulate(lengths))
    shape = (1, 4, cu[-1], 5, 2)
    cu_t = torch.tensor(cu, dtype=torch.int32, device=device)
    clean = _inputs(shape, torch.float32, device)
    n_seqs = len(lengths)
    seq_of = torch.repeat_interleave(torch.arange(n_seqs), torch.tensor(lengths))

    def others(bad_seqs):
        keep = torch.ones(cu[-1], dtype=torch.bool)
        for s in bad_seqs:
            keep[cu[s]:cu[s + 1]] = False
        return keep.to(device), [s for s in range(n_seqs) if s not in bad_seqs]

    def check(kw, dy, dlast, bad_seqs, what):
        y_ref, last_ref, g_ref = _grads_ref(kw, dy, dlast, cu_seqlens=cu_t)
        y, last, grads = _direct(kw, dy, dlast, fwd_cfg=fwd_cfg, bwd_cfg=bwd_cfg, cu_seqlens=cu_t, rows=rows)
        keep, good = others(bad_seqs)
        assert torch.isfinite(y_ref[..., keep]).all() and torch.isfinite(last_ref[good]).all()  # (the case's premise)
        assert torch.isfinite(y[..., keep]).all(), f"{what}: NaN in another sequence's y"
        assert_close(y[..., keep], y_ref[..., keep], torch.float32, f"{what}: the other sequences' y")
        assert torch.isfinite(last[good]).all(), f"{what}: NaN in another sequence's last state"
        assert_close(last[good], last_ref[good], torch.float32, f"{what}: the other sequences' last states")
        for name in ("u", "delta", "B", "C", "z"):
            got, want = grads[name][..., keep], g_ref[name][..., keep]
            assert torch.isfinite(got).all(), f"{what}: NaN in d{name} of another sequence's tokens"
            assert_close(got, want, torch.float32, f"{what}: d{name} of the other sequences' tokens")
        return y

    dy = torch.randn_like(clean["u"])
    dlast = torch.randn(n_seqs, shape[1], shape[3], device=device)
    # (cu = 0 5 5 6 25 28 32 62 71 77, tiles and chunks of 8.) Bad inputs: NaN in sequence 0 (which shares its row
    # with 1 and 2 where rows are shared); in 3 at its first token (6, in the last tile of 2's row), in its middle
    # and at its last token (24, in the first tile of 4's row); at the first token of 7 (62, in the last tile of 6's
    # row, whose segments hand gradients back); inf in u of 3 (which the segments cut)
    bad_tokens = [2, cu[3], cu[3] + 7, cu[4] - 1, cu[7]]
    kw = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in clean.items()}
    for name in ("u", "delta", "B", "C", "z"):
        for t in bad_tokens:
            kw[name][..., t] = float("nan")
    kw["u"][0, 1, cu[3] + 12] = float("inf")
    y = check(kw, dy, dlast, (0, 3, 7), "NaN and inf inputs")
    assert torch.isnan(y[0, :, cu[3]:cu[4]]).all(), "the NaN did not reach its sequence's later outputs"
    assert [int(seq_of[t]) for t in bad_tokens] == [0, 3, 3, 3, 7]
    # bad incoming gradients: NaN in dy at the same tokens, and in the last states' of 0 and 3
    dy_bad = dy.clone()
    for t in bad_tokens:
        dy_bad[0, 2, t] = float("nan")
    dlast_bad = dlast.clone()
    dlast_bad[[0, 3], 1, 2] = float("nan")
    check(clean, dy_bad, dlast_bad, (0, 3, 7), "NaN incoming gradients")
    # A of -inf at one state: its decay is 0 at every token, the forward finite in the reference; the neighbours'
    # tokens in a row's edge tiles pass as a decay of 1 (never exp2(0 x -inf), a NaN)
    kw = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in clean.items()}
    with torch.no_grad():
        kw["A"][1, 0] = float("-inf")
    y_ref, last_ref, _ = _grads_ref(kw, dy, dlast, cu_seqlens=cu_t)
    y, last, _ = _direct(kw, dy, dlast, fwd_cfg=fwd_cfg, bwd_cfg=bwd_cfg, cu_seqlens=cu_t, rows=rows)
    assert torch.isfinite(y_ref).all() and torch.isfinite(last_ref).all()  # (the case's premise)
    assert torch.isfinite(y).all() and torch.isfinite(last).all(), "A = -inf: NaN in y or the last states"
    assert_close(y, y_ref, torch.float32, "A = -inf: y")
    assert_close(last, last_ref, torch.float32, "A = -inf: last states")
    assert_workspace_clean()


@pytest.mark.parametrize("hand_late", [False, True], ids=["", "late"])
def test_segments_nan_propagates_without_hang(hand_late, device):
    """A NaN in the first segment reaches every later segment's output of its channel through the
    hand-over (as the sequential recurrence does), and the other channels stay finite; nothing hangs."""
    kw = _inputs((1, 4, 40, 3, None), torch.float32, device)
    kw["u"][0, 1, 5] = float("nan")
    args = [kw.get(k) for k in GRAD_NAMES]
    y, _, ckpt = scan_forward(*args, True, ckpt_tile=8, config=ForwardConfig(4, 1, 4, 1, segment=8,
                                                                             hand_late=hand_late))
    assert torch.isnan(y[0, 1, 5:]).all() and not torch.isnan(y[0, [0, 2, 3]]).any()
    dy = torch.ones_like(y)
    dy[0, 2, 30] = float("nan")
    grads = scan_backward(dy, None, *args, True, ckpt=ckpt, ckpt_tile=8, config=BackwardConfig(4, 1, 4, 8, 1, segment=8))
    du = grads[0]
    assert torch.isnan(du[0, 2, :31]).all() and not torch.isnan(du[0, 2, 31:]).any()


def test_segment_choice():
    """Segments where the channels alone leave an H100 or H200 (132 SMs) short of warps (batch 1 or 2 of the 2.8B
    shape, long sequences), none where the grid is full (8x2K of the 2.8B shape) or the sequence short. The forward's
    early segments are FWD_SEGMENT tokens, doubled while they would pass FWD_SEGMENT_WAVES waves (forty-fifth
    session), and none where four lanes fill most of a wave (dim 1536 at batch 8). The backward's are BWD_SEGMENT
    tokens, doubled likewise, where the channels' grid leaves most of its last wave empty (batch 1 and 2 of the 2.8B
    shape; not 3 x 8K, 4 x 8K or 8 x 2K), shorter (down to BWD_SHORTEST tokens) where the segments' grid would leave
    its own last wave part empty (short sequences), and none for a sequence under BWD_SEGMENTS_FROM tokens
    (forty-sixth session). The forward's late hand-over segments even out the waves of a full grid of two-lane programs (4x8K,
    16x2K)."""
    from flashssm.ops.selective_scan.scan import (BWD_RESIDENT, BWD_SEGMENT, BWD_SEGMENT_WAVES, BWD_SEGMENTS_FROM,
                                                  BWD_SHORTEST, FWD_SEGMENT, FWD_SEGMENTS_FROM, LATE_SEGMENT,
                                                  backward_config_uncached, forward_config)

    for batch, dim, seqlen, segment in ((1, 5120, 32768, FWD_SEGMENT), (1, 5120, 2048, FWD_SEGMENT),
                                        (1, 5120, 262144, 8 * FWD_SEGMENT), (2, 5120, 16384, FWD_SEGMENT),
                                        (2, 5120, 8192, FWD_SEGMENT), (1, 1536, 32768, FWD_SEGMENT),
                                        (6, 1536, 8192, FWD_SEGMENT), (1, 768, 8192, FWD_SEGMENT)):
        f = forward_config(batch, dim, 16, 1, 132, 2, seqlen)
        assert (f.lanes, f.num_warps, f.segment, f.hand_late) == (1, 1, segment, False), (batch, dim, seqlen, f)
        for channels_last in (False, True):
            assert forward_config(batch, dim, 16, 1, 132, 2, seqlen, channels_last=channels_last) == f
    four = forward_config(8, 1536, 16, 1, 132, 2, 8192)
    assert (four.lanes, four.segment) == (4, 0), four
    for batch, dim, seqlen, segment in ((1, 5120, 32768, 2 * BWD_SEGMENT), (1, 5120, 2048, BWD_SEGMENT // 2),
                                        (2, 5120, 16384, 2 * BWD_SEGMENT), (2, 5120, 4096, BWD_SEGMENT),
                                        (1, 5120, 262144, 16 * BWD_SEGMENT), (1, 1536, 32768, BWD_SEGMENT),
                                        (8, 1536, 2048, BWD_SEGMENT), (1, 768, 8192, BWD_SEGMENT // 2),
                                        (2, 5120, 2048, BWD_SEGMENT), (1, 1536, 8192, BWD_SEGMENT),
                                        (2, 5120, 1024, BWD_SEGMENT // 2), (1, 1536, 2048, BWD_SHORTEST),
                                        (1, 1536, 1500, BWD_SHORTEST)):
        b = backward_config_uncached(batch, dim, 16, 1, seqlen, 132, 2)
        programs = -(-dim // b.block_d) * batch * -(-seqlen // b.segment)
        assert b.segment == segment and b.segment % b.chunk == 0, (batch, dim, seqlen, b)
        assert programs <= BWD_SEGMENT_WAVES * BWD_RESIDENT * 132, (batch, dim, seqlen, b)
    for batch, seqlen in ((8, 2048), (3, 8192), (4, 8192), (1, BWD_SEGMENTS_FROM - 1)):
        assert backward_config_uncached(batch, 5120, 16, 1, seqlen, 132, 2).segment == 0, (batch, seqlen)
    # where the channels fill the GPU already: late hand-over segments for grids of under LATE_WAVES waves
    # (8x2K, 16x2K, 4x8K: 1.6, 3.2, 0.8 waves), none at 32x2K (6.5 waves) or for short sequences
    for batch, seqlen in ((8, 2048), (16, 2048), (4, 8192)):
        f = forward_config(batch, 5120, 16, 1, 132, 2, seqlen)
        assert f.hand_late and f.segment == LATE_SEGMENT and f.lanes == 2 and f.num_warps == 1, (batch, seqlen, f)
    for batch, seqlen in ((32, 2048), (8, 1024), (1, 32768), (2, 16384)):
        assert not forward_config(batch, 5120, 16, 1, 132, 2, seqlen).hand_late, (batch, seqlen)
    assert forward_config(8, 5120, 16, 1, 132, 2).segment == 0  # (seqlen unknown)
    short = forward_config(1, 5120, 16, 1, 132, 2, FWD_SEGMENTS_FROM - 1)
    assert short.segment == 0 and short.lanes == 4, short
    assert forward_config(1, 5120, 16, 1, 132, 2).segment == 0  # (seqlen unknown)
    assert forward_config(1, 5120, 64, 1, 132, 2, 32768).segment == 0  # (above dstate 16: lanes)


def test_packed_backward_choice():
    """The packed backward runs its rows as a dense batch's (`packed_backward_config`: the batch of as many longest
    sequences as the tokens fill) where that batch's configuration has no segments, as at 8 x 2K, 64 x 256 or a
    ragged packing of the 2.8B shape on an H100, and in segments where one long sequence dominates the packing
    (ROWS_BWD_SEGMENTS); the packed row as one sequence above dstate 32 (segments whatever the grid: not measured)."""
    from flashssm.bench.workloads import ragged_lengths
    from flashssm.ops.selective_scan.scan import packed_backward_config, packed_batch

    def offsets(lengths):
        return tuple([0] + list(itertools.accumulate(lengths)))

    for lengths in ([2048] * 8, [256] * 64, ragged_lengths(8, 16384, multiple=64), [5, 0, 1] * 40 + [300] * 50):
        cfg = packed_backward_config(offsets(lengths), 5120, 16, 1, 132, 2)
        assert cfg is not None and cfg.segment == 0, (lengths, cfg)
    assert packed_batch(offsets([2048] * 8)) == (8, 2048)
    assert packed_batch(offsets([16384, 3, 5])) == (1, 16384)
    long_one = packed_backward_config(offsets([16384, 3, 5]), 5120, 16, 1, 132, 2)
    assert long_one is not None and 0 < long_one.segment < 16384
    assert packed_backward_config(offsets([1024] * 4), 5120, 128, 1, 132, 2) is None


def test_backward_segments_above_dstate_32():
    """Above dstate 32 the backward runs in segments of WIDE_SEGMENT tokens whatever the grid, whole chunks, at most
    WIDE_PROGRAMS programs (fewer, longer segments for big batches); none for a sequence shorter than two of them
    or where the grid alone has WIDE_PROGRAMS programs, or at dstate 16 on a full grid."""
    from flashssm.ops.selective_scan.scan import WIDE_PROGRAMS, WIDE_SEGMENT, backward_config_uncached

    for batch, seqlen, dstate in ((1, 1024, 128), (4, 1024, 128), (1, 4096, 64), (8, 2048, 128), (4, 4096, 256)):
        cfg = backward_config_uncached(batch, 5120, dstate, 1, seqlen, 132, 2)
        n_seg = -(-seqlen // cfg.segment)
        warps = -(-5120 // cfg.block_d) * batch
        assert cfg.segment >= WIDE_SEGMENT and cfg.segment % cfg.chunk == 0, (batch, seqlen, dstate, cfg)
        assert n_seg * warps <= WIDE_PROGRAMS, (batch, seqlen, dstate, cfg)
        assert cfg.segment == WIDE_SEGMENT or n_seg * warps > WIDE_PROGRAMS // 2, (batch, seqlen, dstate, cfg)
    assert backward_config_uncached(1, 5120, 128, 1, 2 * WIDE_SEGMENT - 1, 132, 2).segment == 0
    assert backward_config_uncached(64, 5120, 256, 1, 4096, 132, 2).segment == 0  # 327680 programs already
    assert backward_config_uncached(8, 5120, 16, 1, 2048, 132, 2).segment == 0


@pytest.mark.parametrize("field,value", [("block_d", 3), ("lanes", 0), ("lanes", 64), ("num_warps", 1.0),
                                         ("tile", 16), ("tile", 3), ("maxnreg", 8), ("maxnreg", 300),
                                         ("chunk", 24), ("chunk", 0)])
def test_configs_reject_bad_fields(field, value):
    """Launch configurations (tuning knobs, also taken by the launchers) refuse values the kernels
    cannot split by, and register caps ptxas would refuse or turn into spills of everything."""
    fwd = dict(block_d=8, lanes=4, tile=8, num_warps=1)
    bwd = dict(fwd, chunk=32)
    if field in fwd or field == "maxnreg":
        with pytest.raises(ValueError, match=field):
            ForwardConfig(**dict(fwd, **{field: value}))
    with pytest.raises(ValueError, match=field):
        BackwardConfig(**dict(bwd, **{field: value}))
    assert BackwardConfig(**bwd, maxnreg=168).maxnreg == 168
    assert ForwardConfig(**fwd, maxnreg=168).maxnreg == 168
    for bad in (-8, 12, 8.0):  # segments: whole tiles (forward), whole chunks (backward)
        with pytest.raises(ValueError, match="segment"):
            ForwardConfig(**fwd, segment=bad)
        with pytest.raises(ValueError, match="segment"):
            BackwardConfig(**dict(bwd, chunk=16), segment=bad if bad != 12 else 24)
    with pytest.raises(ValueError, match="prefetch_bc"):
        ForwardConfig(**fwd, prefetch_bc=-1)
    with pytest.raises(ValueError, match="hand_late"):
        ForwardConfig(**fwd, segment=8, hand_late=1)
    with pytest.raises(ValueError, match="hand_late"):
        ForwardConfig(**fwd, hand_late=True)  # no segments to hand on


def test_configs_must_not_straddle_groups(device):
    """A hand-given block of channels wider than a group of B and C is refused, not run with the first
    channel's group for all of them."""
    kw = _inputs((1, 4, 9, 3, 4), torch.float32, device)  # 4 groups of one channel
    args = [kw.get(k) for k in GRAD_NAMES]
    with pytest.raises(ValueError, match="block_d"):
        scan_forward(*args, False, config=ForwardConfig(2, 1, 8, 1))
    _, _, ckpt = scan_forward(*args, False, ckpt_tile=8, config=ForwardConfig(1, 1, 8, 1))
    with pytest.raises(ValueError, match="block_d"):
        scan_backward(torch.randn_like(kw["u"]), None, *args, False, ckpt=ckpt, ckpt_tile=8,
                      config=BackwardConfig(2, 2, 4, 8, 1))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_backward_16bit(dtype, device):
    """16-bit inputs and incoming gradient: every gradient in its input's dtype, against float64."""
    kw = _inputs((1, 4, 45, 16, None), dtype, device)
    dy = torch.randn_like(kw["u"])
    _, _, g_ref = _grads_ref(kw, dy)
    _, _, grads = _direct(kw, dy, None, fwd_cfg=ForwardConfig(4, 1, 8, 1), bwd_cfg=BackwardConfig(4, 4, 8, 32, 1))
    for name, g in grads.items():
        assert g.dtype == kw[name].dtype, f"d{name} dtype"
    _check_grads(grads, g_ref, dtype)


@pytest.mark.parametrize("opts", pairs_of_four(OPTIONS, OPTION_IDS))
def test_every_option_through_autograd(opts, device):
    """The public function: forward, last state and every gradient, each option on and off."""
    kw = _inputs((2, 3, 29, 4, None), torch.float32, device, opts)
    dy = torch.randn(2, 3, 29, device=device)
    dlast = torch.randn(2, 3, 4, device=device)
    y_ref, last_ref, g_ref = _grads_ref(kw, dy, dlast)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y, last = flashssm.selective_scan(**leaves, return_last_state=True)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(last, last_ref, torch.float32, "last_state")
    names = [k for k in GRAD_NAMES if k in g_ref]
    got = torch.autograd.grad((y * dy).sum() + (last * dlast).sum(), [leaves[k] for k in names])
    _check_grads(dict(zip(names, got)), g_ref, torch.float32)


def test_fp16(device):
    kw = _inputs((2, 8, 41, 6, 2), torch.float16, device)
    dy = torch.randn(2, 8, 41, device=device, dtype=torch.float16)
    y_ref, _, g_ref = _grads_ref(kw, dy)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y = flashssm.selective_scan(**leaves)
    assert y.dtype == torch.float16
    assert_close(y, y_ref, torch.float16, "y")
    names = list(g_ref)
    got = torch.autograd.grad(y, [leaves[k] for k in names], dy)
    for name, g in zip(names, got):
        assert g.dtype == kw[name].dtype, f"d{name} dtype"
    _check_grads(dict(zip(names, got)), g_ref, torch.float16)


VARLEN = [[1], [5, 1, 30], [0, 17, 1, 0, 20], [16, 16], [9, 0]]


@pytest.mark.parametrize("lengths", VARLEN, ids=["-".join(map(str, v)) for v in VARLEN])
def test_varlen(lengths, device):
    """Packed sequences equal each sequence alone, forward, last states and gradients (tiles of 8:
    boundaries fall inside and on the edges of chunks)."""
    seqlen = sum(lengths)
    kw = _inputs((1, 4, seqlen, 3, None), torch.float32, device)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), dtype=torch.int32, device=device)
    dy = torch.randn(1, 4, seqlen, device=device)
    dlast = torch.randn(len(lengths), 4, 3, device=device)
    y_ref, last_ref, g_ref = _grads_ref(kw, dy, dlast, cu_seqlens=cu)
    y, last, grads = _direct(kw, dy, dlast, fwd_cfg=ForwardConfig(2, 2, 8, 1), bwd_cfg=BackwardConfig(2, 2, 4, 8, 1),
                             cu_seqlens=cu)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(last, last_ref, torch.float32, "last_state")
    _check_grads(grads, g_ref, torch.float32)
    # and through the public function
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y2, last2 = flashssm.selective_scan(**leaves, return_last_state=True, cu_seqlens=cu)
    assert_close(y2, y_ref, torch.float32, "y (public)")
    assert_close(last2, last_ref, torch.float32, "last_state (public)")


def test_varlen_nothing_crosses_a_boundary(device):
    """Changing the first sequence changes nothing in the second, and the second's loss gives the
    first's inputs exactly zero gradient."""
    kw = _inputs((1, 4, 30, 3, None), torch.float32, device)
    cu = torch.tensor([0, 13, 30], dtype=torch.int32, device=device)
    y = flashssm.selective_scan(**kw, cu_seqlens=cu)
    changed = dict(kw, u=kw["u"].clone())
    changed["u"][..., :13] += 1.0
    y2 = flashssm.selective_scan(**changed, cu_seqlens=cu)
    assert torch.equal(y[..., 13:], y2[..., 13:])
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y3, last = flashssm.selective_scan(**leaves, cu_seqlens=cu, return_last_state=True)
    du, ddelta, dz = torch.autograd.grad(y3[..., 13:].sum() + last[1].sum(),
                                         [leaves["u"], leaves["delta"], leaves["z"]])
    for g in (du, ddelta, dz):
        assert torch.count_nonzero(g[..., :13]) == 0


def test_deterministic_is_bit_identical(device):
    kw = _inputs((2, 4, 40, 4, None), torch.float32, device)
    dy = torch.randn(2, 4, 40, device=device)
    cfg = dict(fwd_cfg=ForwardConfig(2, 1, 8, 1), bwd_cfg=BackwardConfig(2, 2, 4, 8, 1), deterministic=True)
    _, _, g1 = _direct(kw, dy, None, **cfg)
    _, _, g2 = _direct(kw, dy, None, **cfg)
    for name in g1:
        assert torch.equal(g1[name], g2[name]), name
    _, _, g_ref = _grads_ref(kw, dy)
    _check_grads(g1, g_ref, torch.float32)


def test_deterministic_mode_through_autograd(device):
    kw = _inputs((1, 6, 20, 4, 3), torch.float32, device)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        y = flashssm.selective_scan(**leaves)
        dy = torch.randn_like(y)
        first = torch.autograd.grad(y, [leaves["B"], leaves["A"]], dy, retain_graph=True)
        second = torch.autograd.grad(y, [leaves["B"], leaves["A"]], dy)
    finally:
        torch.use_deterministic_algorithms(previous)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_deterministic_mode_skips_fills(device):
    """The scan's buffers and outputs are allocated with torch's deterministic-mode fill off (`_runtime.buffer`):
    every kernel writes them whole before anything reads them."""
    kw = _inputs((1, 6, 20, 4, 3), torch.float32, device)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}

    def train():
        y = flashssm.selective_scan(**leaves)
        torch.autograd.grad(y, [leaves["u"], leaves["B"], leaves["A"]], torch.ones_like(y))

    filled, total = filled_allocations(train)
    assert not filled and total >= 4, (filled, total)


def test_gradcheck_custom_op():
    """torch.autograd.gradcheck of the custom op in float64 (the kernels compute in float64 then)."""
    if HAS_GPU:
        pytest.skip("float64 kernels are checked under the interpreter")
    kw = _inputs((1, 3, 11, 2, None), torch.float64, "cpu")
    cu = torch.tensor([0, 4, 11], dtype=torch.int32)
    leaves = [kw[k].detach().double().requires_grad_() for k in GRAD_NAMES]

    def f(*args):
        y, last, _ = selective_scan_fwd(*args, cu, True, True, 8)
        return y, last

    assert torch.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-7, rtol=1e-5, fast_mode=True)


def test_only_requested_gradients(device):
    kw = _inputs((1, 4, 12, 3, None), torch.float32, device)
    u = kw["u"].clone().requires_grad_()
    y = flashssm.selective_scan(**dict(kw, u=u))
    (du,) = torch.autograd.grad(y.sum(), [u])
    _, _, g_ref = _grads_ref(kw, torch.ones_like(kw["u"]))
    assert_close(du, g_ref["u"], torch.float32, "du")


def test_noncontiguous_inputs_and_gradient(device):
    kw = _inputs((2, 5, 24, 4, None), torch.float32, device)
    u = kw["u"].transpose(1, 2).contiguous().transpose(1, 2).requires_grad_()  # channels innermost
    B = torch.randn(2, 24, 4, device=device).transpose(1, 2).requires_grad_()
    dy = torch.randn(2, 24, 5, device=device).transpose(1, 2)
    kw2 = dict(kw, u=u, B=B)
    y = flashssm.selective_scan(**kw2)
    du, dB = torch.autograd.grad(y, [u, B], dy)
    y_ref, _, g_ref = _grads_ref(dict(kw, u=u.detach(), B=B.detach()), dy)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(du, g_ref["u"], torch.float32, "du")
    assert_close(dB, g_ref["B"], torch.float32, "dB")


@pytest.mark.parametrize("layout", ["expanded", "transposed"])
@pytest.mark.parametrize("varlen", [False, True], ids=["dense", "varlen"])
def test_noncontiguous_last_state_gradient(layout, varlen, device):
    """The last state's incoming gradient in any layout: `loss = y.sum() + last.sum()` hands autograd's expanded ones
    (strides 0) to the backward, which read them as a contiguous block past their one element (gradients of 1e30 or
    NaN, an out-of-bounds read on the GPU)."""
    kw = _inputs((2 if not varlen else 1, 5, 24, 4, None), torch.float32, device)
    cu = torch.tensor([0, 9, 24], device=device) if varlen else None
    leaves = {k: v.clone().requires_grad_() for k, v in kw.items() if isinstance(v, torch.Tensor)}
    y, last = flashssm.selective_scan(**leaves, **{k: v for k, v in kw.items() if k not in leaves},
                                      return_last_state=True, cu_seqlens=cu)
    if layout == "expanded":
        dlast = torch.ones(1, 1, 1, device=device).expand(last.shape)
    else:
        dlast = torch.randn(last.shape[0], last.shape[2], last.shape[1], device=device).transpose(1, 2)
    dy = torch.randn_like(y)
    names = [k for k in GRAD_NAMES if k in leaves]
    got = dict(zip(names, torch.autograd.grad([y, last], [leaves[k] for k in names], [dy, dlast])))
    _, _, g_ref = _grads_ref(kw, dy, dlast.contiguous(), cu_seqlens=cu)
    _check_grads(got, g_ref, torch.float32)


@pytest.mark.parametrize("like_u", [True, False], ids=["outputs-like-u", "tokens-contiguous"])
@pytest.mark.parametrize("varlen", [False, True], ids=["dense", "varlen"])
def test_outputs_keep_u_layout(like_u, varlen, device, monkeypatch):
    """y and du, ddelta, dz take u's layout (`rows_like`): channels contiguous for the Mamba-1 mixer's transposed
    views, stored a vector across channels a token, at an odd length, dense and packed; delta and z in the other
    layout still get their gradients right (they follow u's layout). The previous form (OUTPUTS_LIKE_U False) for
    A/B."""
    from flashssm.ops.selective_scan import scan

    monkeypatch.setattr(scan, "OUTPUTS_LIKE_U", like_u)
    batch = 1 if varlen else 2
    cu = torch.tensor([0, 5, 6, 21], dtype=torch.int32, device=device) if varlen else None
    kw = _inputs((batch, 6, 21, 4, None), torch.float32, device)
    kw["u"], kw["z"] = relaid(kw["u"], (0, 2, 1)), relaid(kw["z"], (0, 2, 1))  # delta stays tokens contiguous
    # (clones of dense tensors keep their strides)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    assert leaves["u"].stride(1) == leaves["z"].stride(1) == 1 and leaves["delta"].stride(2) == 1
    dy = torch.randn(batch, 6, 21, device=device)
    y_ref, _, g_ref = _grads_ref(kw, dy, cu_seqlens=cu)
    y = flashssm.selective_scan(**leaves, cu_seqlens=cu)
    assert (y.stride(1) == 1) == like_u and (y.stride(2) == 1) != like_u
    assert_close(y, y_ref, torch.float32, "y")
    names = list(g_ref)
    got = dict(zip(names, torch.autograd.grad(y, [leaves[k] for k in names], dy)))
    assert flashssm.ops.selective_scan.kernel_available(kw["u"], 4)
    for k in ("u", "delta", "z"):
        assert (got[k].stride(1) == 1) == like_u, f"d{k}: strides {got[k].stride()}"
    _check_grads(got, g_ref, torch.float32)
    plain = flashssm.selective_scan(**{k: v.detach().contiguous() if isinstance(v, torch.Tensor) else v
                                       for k, v in kw.items()}, cu_seqlens=cu)
    assert plain.is_contiguous() and torch.equal(plain, y.detach())


def test_channels_last_forward_choice():
    """u channels contiguous (the Mamba-1 mixer's layout) where one lane a channel gives 8 warps an SM at dstate <=
    16: one lane, 64 channels a program in two warps, no segments (8x2K, 64x2K of the 2.8B shape), or 32 channels in
    one warp and late segments where those programs make one to LATE_WAVES waves (16x2K, 32x2K); elsewhere (4x8K,
    where it was slower) the choice is the contiguous layout's."""
    from flashssm.ops.selective_scan.scan import forward_config

    for batch in (8, 64):  # (under one wave of one-warp programs, and past LATE_WAVES)
        f = forward_config(batch, 5120, 16, 1, 132, 2, 2048, channels_last=True)
        assert (f.lanes, f.block_d, f.num_warps, f.segment, f.hand_late) == (1, 64, 2, 0, False), f
    for batch in (16, 32):  # (between: one-warp programs in late segments)
        f = forward_config(batch, 5120, 16, 1, 132, 2, 2048, channels_last=True)
        assert (f.lanes, f.block_d, f.num_warps, f.segment, f.hand_late) == (1, 32, 1, 512, True), f
    assert forward_config(8, 5120, 16, 1, 132, 2, 2048).lanes == 2
    assert forward_config(8, 128, 16, 4, 1, 2, 2048, channels_last=True).block_d == 32  # (groups of 32: one warp)
    assert forward_config(8, 96, 16, 4, 1, 2, 2048, channels_last=True) == forward_config(8, 96, 16, 4, 1, 2, 2048)
    # batch 1 and 2 (one lane in early segments), 4x8K (two lanes in late ones), dstate 128: as contiguous
    assert forward_config(32, 5120, 16, 1, 132, 2, 2048, channels_last=True).lanes == 1
    for args in ((1, 5120, 16, 1, 132, 2, 32768), (2, 5120, 16, 1, 132, 2, 16384), (4, 5120, 16, 1, 132, 2, 8192),
                 (8, 5120, 128, 1, 132, 2, 2048)):
        assert forward_config(*args, channels_last=True) == forward_config(*args), args


def _record_configs(monkeypatch, scan, name="forward_config"):
    """scan's `name` (forward_config unless said) wrapped so that every configuration it picks is appended to the list
    returned."""
    picked, choose = [], getattr(scan, name)

    def pick(*args, **kwargs):
        config = choose(*args, **kwargs)
        if not in_dry_run():  # (compile-ahead's dry run of the backward on a GPU picks too)
            picked.append(config)
        return config

    monkeypatch.setattr(scan, name, pick)
    return picked


def test_channels_last_forward_config(device, monkeypatch):
    """The public path on channels-contiguous u, delta and z where that choice applies (a one-SM GPU, so that one
    lane fills it: 4 x 66 channels, a part block; dstate 12): y and the last states against float64, from the
    inference forward and from the training one (which also stores the backward's states: their order for the
    backward's lanes is `test_states_stored_in_lane_runs`'; the GPU test `test_gpu_channels_last_one_lane` checks
    the gradients)."""
    from flashssm.ops.selective_scan import scan

    monkeypatch.setattr(scan._runtime, "sm_count", lambda *a, **k: 1)
    picked = _record_configs(monkeypatch, scan)
    kw = _inputs((4, 66, 21, 12, None), torch.float32, device)
    for k in ("u", "delta", "z"):
        kw[k] = relaid(kw[k], (0, 2, 1))
    y_ref, last_ref = ref.selective_scan_reference(**{k: v.double() if isinstance(v, torch.Tensor) else v
                                                      for k, v in kw.items()}, return_last_state=True)
    for grad in (False, True):
        leaves = {k: v.detach().clone().requires_grad_(grad) if isinstance(v, torch.Tensor) else v
                  for k, v in kw.items()}
        y, last = flashssm.selective_scan(**leaves, return_last_state=True)
        assert (picked[-1].lanes, picked[-1].block_d, picked[-1].num_warps) == (1, 64, 2), picked
        assert_close(y, y_ref, torch.float32, "y")
        assert_close(last, last_ref, torch.float32, "last_state")


def test_early_segments_public_path(device, monkeypatch):
    """The public path where `forward_config` takes one lane in short early segments (`_early_segment`), with the
    rule's sizes shrunk to the interpreter's (segments of 16 tokens from 64, four SMs): batch 2, 20 channels (a part
    block), 83 tokens (a ragged last segment), dstate 12, every option, against float64: the training call (whose
    forward stores the backward's states segment by segment) on tokens-contiguous inputs, y, the last states and every
    gradient; the inference call on channels-contiguous ones, y and the last states; and packed sequences (the longest
    cut into segments, an empty and a one-token one), the training call. The backward's rule (`_backward_segment`)
    shrunk likewise (segments of 32 tokens from 64) cuts the training calls' backward into segments too."""
    from flashssm.ops.selective_scan import scan

    monkeypatch.setattr(scan._runtime, "sm_count", lambda *a, **k: 4)
    monkeypatch.setattr(scan, "FWD_SEGMENT", 16)
    monkeypatch.setattr(scan, "FWD_SEGMENTS_FROM", 64)
    monkeypatch.setattr(scan, "BWD_SEGMENT", 32)
    monkeypatch.setattr(scan, "BWD_SHORTEST", 32)
    monkeypatch.setattr(scan, "BWD_SEGMENTS_FROM", 64)
    caches = (scan.forward_config, scan.backward_config)
    for cached in caches:
        cached.cache_clear()  # (picks made with the rules' real sizes)
    try:
        picked = _record_configs(monkeypatch, scan)
        picked_bwd = _record_configs(monkeypatch, scan, "backward_config")
        kw = _inputs((2, 20, 83, 12, None), torch.float32, device)
        dy = torch.randn(2, 20, 83, device=device)
        dlast = torch.randn(2, 20, 12, device=device)
        y_ref, last_ref, g_ref = _grads_ref(kw, dy, dlast)
        for layout, train in (("tokens", True), ("channels", False)):
            leaves = {k: v.detach().clone().requires_grad_(train) if isinstance(v, torch.Tensor) else v
                      for k, v in kw.items()}
            if layout == "channels":
                for k in ("u", "delta", "z"):
                    leaves[k] = relaid(leaves[k], (0, 2, 1))
            y, last = flashssm.selective_scan(**leaves, return_last_state=True)
            cfg = picked[-1]
            assert (cfg.lanes, cfg.num_warps, cfg.segment, cfg.hand_late) == (1, 1, 16, False), (layout, cfg)
            assert_close(y, y_ref, torch.float32, f"{layout}: y")
            assert_close(last, last_ref, torch.float32, f"{layout}: last_state")
            if train:
                names = list(g_ref)
                got = torch.autograd.grad((y * dy).sum() + (last * dlast).sum(), [leaves[k] for k in names])
                _check_grads(dict(zip(names, got)), g_ref, torch.float32, f"{layout}: ")
                assert picked_bwd[-1].segment == 32, picked_bwd[-1]
        # packed sequences: their configuration is a dense batch's of as many of the longest (70 tokens: segments),
        # the rows of `varlen_rows` cut at the segments
        lengths = [1, 70, 0, 12]
        cu = torch.tensor([0] + list(itertools.accumulate(lengths)), dtype=torch.int32, device=device)
        one = {k: v[:1] if isinstance(v, torch.Tensor) and k in ("u", "delta", "z", "B", "C") else v
               for k, v in kw.items()}
        dlast = torch.randn(len(lengths), 20, 12, device=device)
        y_ref, last_ref, g_ref = _grads_ref(one, dy[:1], dlast, cu_seqlens=cu)
        leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in one.items()}
        y, last = flashssm.selective_scan(**leaves, return_last_state=True, cu_seqlens=cu)
        cfg = picked[-1]
        assert (cfg.lanes, cfg.segment) == (1, 16), cfg
        assert_close(y, y_ref, torch.float32, "packed: y")
        assert_close(last, last_ref, torch.float32, "packed: last_state")
        names = list(g_ref)
        got = torch.autograd.grad((y * dy[:1]).sum() + (last * dlast).sum(), [leaves[k] for k in names])
        _check_grads(dict(zip(names, got)), g_ref, torch.float32, "packed: ")
        assert picked_bwd[-1].segment == 32, picked_bwd[-1]
    finally:
        for cached in caches:
            cached.cache_clear()  # (picks made with the shrunk sizes)


def test_nan_input_gives_nan_without_hang(device):
    kw = _inputs((1, 4, 20, 3, None), torch.float32, device)
    kw["u"][0, 1, 5] = float("nan")
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y = flashssm.selective_scan(**leaves)
    assert torch.isnan(y[0, 1, 5:]).all() and not torch.isnan(y[0, [0, 2, 3]]).any()
    dy = torch.ones_like(y)
    dy[0, 2, 3] = float("nan")
    du, dB = torch.autograd.grad(y, [leaves["u"], leaves["B"]], dy)
    assert torch.isnan(du[0, 2, :4]).any() and torch.isnan(dB).any()


def test_compile_fullgraph(device):
    """torch.compile traces through the custom ops, forward and backward, without a graph break."""
    kw = _inputs((1, 4, 16, 3, None), torch.float32, device)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}

    def f(u, delta, A, B, C, D, z, delta_bias):
        return flashssm.selective_scan(u, delta, A, B, C, D, z, delta_bias, True).square().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager" if device == "cpu" else "inductor")
    args = [leaves[k] for k in GRAD_NAMES]
    loss = compiled(*args)
    grads = torch.autograd.grad(loss, args)
    loss_e = f(*args)
    grads_e = torch.autograd.grad(loss_e, args)
    torch.testing.assert_close(loss, loss_e, rtol=1e-5, atol=1e-5)
    for g, ge in zip(grads, grads_e):
        torch.testing.assert_close(g, ge, rtol=1e-4, atol=1e-5)


def test_backward_op_checks_its_gradients(device):
    kw = _inputs((1, 4, 10, 3, None), torch.float32, device)
    args = [kw.get(k) for k in GRAD_NAMES]
    y, _, ckpt = selective_scan_fwd(*args, None, True, False, 8)
    with pytest.raises(ValueError, match="dy"):
        selective_scan_bwd(torch.zeros(1, 4, 9, device=device), None, *args, None, ckpt, True, 8, False, [True] * 8)
    with pytest.raises(ValueError, match="dlast"):
        selective_scan_bwd(torch.zeros_like(y), torch.zeros(2, 4, 3, device=device), *args, None, ckpt, True, 8,
                           False, [True] * 8)
    with pytest.raises(ValueError, match="ckpt"):
        selective_scan_bwd(torch.zeros_like(y), None, *args, None, ckpt, True, 4, False, [True] * 8)


def test_bad_cu_seqlens(device):
    kw = _inputs((2, 4, 10, 3, None), torch.float32, device)
    with pytest.raises(ValueError, match="batch == 1"):
        flashssm.selective_scan(**kw, cu_seqlens=torch.tensor([0, 10], dtype=torch.int32))
    kw = _inputs((1, 4, 10, 3, None), torch.float32, device)
    with pytest.raises(ValueError, match="end at"):
        flashssm.selective_scan(**kw, cu_seqlens=torch.tensor([0, 9], dtype=torch.int32))


# ---- real shapes on the GPU ----

@pytest.mark.gpu
@pytest.mark.parametrize("dstate,ngroups", [(16, None), (128, None), (16, 4), (256, 1)])
def test_gpu_bf16_against_float64(dstate, ngroups):
    kw = scan_inputs(2, 512, 1500, dstate, ngroups=ngroups, dtype=torch.bfloat16, device="cuda", D=True, z=True,
                     delta_bias=True, delta_softplus=True)
    _check_public_bf16(kw, torch.randn(2, 512, 1500, device="cuda", dtype=torch.bfloat16))


def _check_public_bf16(kw, dy):
    """flashssm.selective_scan on kw's tensors as laid out (leaves detached, not cloned: a clone of padded rows would
    be contiguous): y, last states and every gradient of <y, dy> against float64, at bf16 tolerances."""
    y_ref, last_ref, g_ref = _grads_ref(kw, dy)
    leaves = {k: v.detach().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    assert all(leaves[k].stride() == kw[k].stride() for k in ("u", "delta"))
    y, last = flashssm.selective_scan(**leaves, return_last_state=True)
    assert_close(y, y_ref, torch.bfloat16, "y")
    assert_close(last, last_ref, torch.float32, "last_state")
    names = list(g_ref)
    got = torch.autograd.grad(y, [leaves[k] for k in names], dy)
    _check_grads(dict(zip(names, got)), g_ref, torch.bfloat16)


def test_row_align():
    """What the kernels are told their (batch, dim, seqlen) rows start at multiples of: a wrong claim would be a
    misaligned vector access on the GPU (test_gpu_row_alignments runs these layouts there)."""
    from flashssm.ops.selective_scan.scan import ROW_ALIGN, row_align

    assert ROW_ALIGN == 8
    rows = lambda seqlen, stride=None: torch.empty(2, 6, stride or seqlen)[..., :seqlen]  # noqa: E731
    assert [row_align(rows(n), seqlen=n) for n in (2048, 2040, 2044, 2046, 2047, 1)] == [8, 8, 4, 2, 1, 1]
    assert row_align(rows(2047, 2048)) == 8 and row_align(rows(2047, 2048), seqlen=2047) == 1
    assert row_align(torch.empty(2, 2048, 6).transpose(1, 2)) == 1  # stride 1 along dim (the Mamba-1 mixer's)
    assert row_align(rows(2040), rows(2044), rows(2048)) == 4  # every tensor's rows
    assert row_align(torch.empty(1, 6, 40)[:, 1:, :]) == 8  # (rows past an offset: the data pointer's own alignment)


def _check_public_fp32(kw, dy, dlast, cu):
    """flashssm.selective_scan with its picked configurations: y, last states and every gradient (of
    <y, dy> + <last, dlast>) against float64, at fp32 tolerances."""
    y_ref, last_ref, g_ref = _grads_ref(kw, dy, dlast, cu_seqlens=cu)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y, last = flashssm.selective_scan(**leaves, return_last_state=True, cu_seqlens=cu)
    assert_close(y, y_ref, torch.float32, "y")
    assert_close(last, last_ref, torch.float32, "last_state")
    names = list(g_ref)
    got = torch.autograd.grad((y * dy).sum() + (last * dlast).sum(), [leaves[k] for k in names])
    _check_grads(dict(zip(names, got)), g_ref, torch.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["2040", "2044", "2046", "2047", "2047-in-2048", "2040-transposed"])
def test_gpu_row_alignments(layout):
    """Rows of every alignment `row_align` tells the kernels (16-bit rows of 8, 4, 2 and 1 elements; rows of 2047
    tokens at a stride of 2048; stride 1 along dim), forward and backward, bf16, against float64."""
    seqlen = int(layout.split("-")[0])
    kw = scan_inputs(2, 64, seqlen, 16, dtype=torch.bfloat16, device="cuda", D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    for k in ("u", "delta", "z"):
        if layout.endswith("in-2048"):
            wide = torch.zeros(2, 64, 2048, device="cuda", dtype=kw[k].dtype)
            wide[..., :seqlen] = kw[k]
            kw[k] = wide[..., :seqlen]
        elif layout.endswith("transposed"):
            kw[k] = relaid(kw[k], (0, 2, 1))
    _check_public_bf16(kw, torch.randn(2, 64, seqlen, device="cuda", dtype=torch.bfloat16))


@pytest.mark.gpu
def test_gpu_channels_last_one_lane():
    """Channels-contiguous u, delta and z on a grid that one lane a channel fills (8 x (32 SMs + 40) channels: a part
    block), where the forward runs one lane a channel in 64-channel programs (`forward_config(channels_last=True)`):
    bf16 against float64, forward and every gradient, at a length that is no multiple of 8."""
    from flashssm.ops.selective_scan.scan import forward_config

    n_sms = torch.cuda.get_device_properties(0).multi_processor_count
    dim = 32 * n_sms + 40
    assert forward_config(8, dim, 16, 1, n_sms, 2, 301, channels_last=True).lanes == 1
    kw = scan_inputs(8, dim, 301, 16, dtype=torch.bfloat16, device="cuda", D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    for k in ("u", "delta", "z"):
        kw[k] = relaid(kw[k], (0, 2, 1))
    _check_public_bf16(kw, relaid(torch.randn(8, dim, 301, device="cuda", dtype=torch.bfloat16), (0, 2, 1)))


@pytest.mark.gpu
def test_gpu_fp32_varlen_and_chunks():
    lengths = [1, 700, 0, 129, 1000, 3]
    seqlen = sum(lengths)
    kw = scan_inputs(1, 96, seqlen, 16, dtype=torch.float32, device="cuda", D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), dtype=torch.int32, device="cuda")
    dy = torch.randn(1, 96, seqlen, device="cuda")
    dlast = torch.randn(len(lengths), 96, 16, device="cuda")
    _check_public_fp32(kw, dy, dlast, cu)


@pytest.mark.gpu
def test_gpu_fp32_many_short_sequences():
    """A packing of many short sequences (1 to 90 tokens) and a long one: short ones share the rows of the picked
    configurations (`varlen_rows`, asserted), whose backward then reads the per-token sequence index."""
    from flashssm.ops.selective_scan.scan import ROW_GROUP, varlen_rows

    lengths = torch.randint(1, 91, (60,), generator=torch.Generator().manual_seed(3)).tolist() + [2000, 0, 7]
    cu_host = [0] + list(itertools.accumulate(lengths))
    assert varlen_rows(tuple(cu_host), 0, 32, torch.device("cpu"), ROW_GROUP)[2]
    kw = scan_inputs(1, 128, cu_host[-1], 16, dtype=torch.float32, device="cuda", D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    cu = torch.tensor(cu_host, dtype=torch.int32, device="cuda")
    dy = torch.randn(1, 128, cu_host[-1], device="cuda")
    dlast = torch.randn(len(lengths), 128, 16, device="cuda")
    _check_public_fp32(kw, dy, dlast, cu)


@pytest.mark.gpu
@pytest.mark.parametrize("varlen", [False, True], ids=["dense", "varlen"])
@pytest.mark.parametrize("dstate", [16, 64])
def test_gpu_segments_through_the_public_path(varlen, dstate):
    """Batch 1, a long sequence, few channels (dstate 16), or dstate 64 (segments at any grid): the picked
    configurations cut the sequence into segments (asserted), the forward too at dstate 16, and the backward;
    fp32 against float64, with last-state gradients and, packed, sequences that start inside segments."""
    from flashssm.ops.selective_scan.scan import backward_config, forward_config

    seqlen, dim = (9000, 256) if dstate == 16 else (1500, 128)
    n_sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert dstate > 16 or forward_config(1, dim, dstate, 1, n_sms, 4, seqlen).segment > 0
    assert backward_config(1, dim, dstate, 1, seqlen, n_sms, 4).segment > 0
    kw = scan_inputs(1, dim, seqlen, dstate, dtype=torch.float32, device="cuda", D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    lengths = ([1, 3000, 0, 2500, 1, 3498] if dstate == 16 else [1, 700, 0, 300, 1, 498]) if varlen else [seqlen]
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), dtype=torch.int32, device="cuda") if varlen else None
    dy = torch.randn(1, dim, seqlen, device="cuda")
    dlast = torch.randn(len(lengths), dim, dstate, device="cuda")
    _check_public_fp32(kw, dy, dlast, cu)


@pytest.mark.gpu
def test_gpu_bf16_error_figures():
    """Prints each output's relative error against float64 at bf16 (the figures in the notes)."""
    kw = scan_inputs(2, 1024, 4096, 16, dtype=torch.bfloat16, device="cuda", D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    dy = torch.randn(2, 1024, 4096, device="cuda", dtype=torch.bfloat16)
    y_ref, _, g_ref = _grads_ref(kw, dy)
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y = flashssm.selective_scan(**leaves)
    names = list(g_ref)
    got = torch.autograd.grad(y, [leaves[k] for k in names], dy)
    figures = {"y": rel_err(y, y_ref), **{f"d{k}": rel_err(g, g_ref[k]) for k, g in zip(names, got)}}
    print("relative error, bf16, 2x4096 dim 1024 n16: " + ", ".join(f"{k} {v:.2e}" for k, v in figures.items()))
    assert all(v < 5e-2 for v in figures.values())


_COMPILE_FOR_HOPPER = """
import sys
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from flashssm.ops.selective_scan.scan import _scan_bwd_kernel, _scan_fwd_kernel, ckpt_layout

which, lanes, varlen, segments = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] in ("1", "late")
align = int(sys.argv[5])
# (half the 2.8B shape's 16: the same code with half the slots unrolled, compiled in half the time; a slot a lane in
# the backwards at 8 lanes (the packed one: 92 s of a core on an empty cache at 4 lanes, 42 at 8; the GPU tests compile
# the 4-lane ones), and at 32, dstate 256's layout of one channel a program)
DSTATE = max(8, lanes)
ck, ck_run = ckpt_layout(DSTATE)
common = dict(BLOCK_D=32 // lanes, NL=lanes, SLOTS=DSTATE // lanes, TILE=8, FAST=True, HAS_D=True, HAS_Z=True,
              HAS_DELTA_BIAS=True, DELTA_SOFTPLUS=True, IS_VARLEN=varlen, SEGMENTS=segments, ACC=tl.float32,
              CK=ck, CK_RUN=ck_run, ALIGN_IN=align, ALIGN_OUT=align)
if which == "forward":
    kernel = _scan_fwd_kernel
    consts = dict(common, CKPT=32, PREFETCH_BC=False, PREFETCH_TILES=2, STORE_LAST=True, STORE_CKPT=True,
                  HAND_LATE=sys.argv[4] == "late", BC_AHEAD=True, TILE_AHEAD=True, ROWS=varlen and segments)
else:
    kernel = _scan_bwd_kernel
    consts = dict(common, CHUNK=32, HAS_DLAST=True, DETERMINISTIC=False, BC_AHEAD=True, TILE_AHEAD=True,
                  ROWS=varlen and segments)
for param in kernel.params:  # a constexpr left out takes its default, as in the JIT
    if param.is_constexpr and param.has_default and param.name not in consts:
        consts[param.name] = param.default
ptrs = {a: "*i32" if a in ("seq_ptr", "counter_ptr", "flag_ptr") else "*i64" if a == "rows_ptr" else ("*bf16" if a[:-4] in ("u", "delta", "z", "y", "dout", "du", "ddelta", "dz")
                                          else "*fp32") for a in kernel.arg_names if a.endswith("_ptr")}
signature = {a: ptrs.get(a, "constexpr" if a in consts else "i32") for a in kernel.arg_names}
compiled = triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=consts),
                          target=GPUTarget("cuda", 90, 32), options={"num_warps": 1})
assert "prefetch.global.L1" in compiled.asm["ptx"], "no prefetch in the PTX"
# the ticket and the flag resets relaxed (the waits acquire, the hand-overs release): Triton's default acq_rel put a
# fence and an invalidation of the SM's whole L1 at every program's start (`triton_common.take_ticket`)
assert "acq_rel" not in compiled.asm["ptx"], "an acq_rel atomic"
assert len(compiled.asm["cubin"]) > 0
print("compiled", len(compiled.asm["cubin"]))
"""


@pytest.mark.parametrize("which,lanes,varlen,segments,align", [
    ("forward", 1, False, False, 1), ("forward", 4, True, True, 8), ("forward", 2, False, "late", 8),
    ("backward", 8, True, True, 8), ("backward", 8, False, True, 1), ("backward", 32, False, True, 4)],
    ids=["forward-lanes1", "forward-lanes4-varlen-segments", "forward-lanes2-late-segments",
         "backward-lanes8-varlen-segments", "backward-lanes8-segments-unaligned", "backward-lanes32-segments"])
def test_kernels_compile_for_hopper(which, lanes, varlen, segments, align):
    """The forward and backward kernels compiled for sm_90 without a GPU (triton.compile down to a cubin, in a
    fresh process without the interpreter; the packed forward and backward in segments with their rows,
    `varlen_rows`): the interpreter does not type-check loop-carried values or lower the inline-asm prefetch of the
    GPU path (FAST). Catches a kernel that runs under the interpreter but does not compile; the rows' alignment
    marks (`row_align`) as the GPU's aligned shapes take them, with one program a channel (dstate 256's layout:
    Triton's coalescing pass once asserted on its marks). No atomic takes Triton's default acq_rel (the tickets')."""
    import os
    import subprocess
    import sys

    if HAS_GPU:
        pytest.skip("the GPU tests compile and run it")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", _COMPILE_FOR_HOPPER, which, str(lanes), str(int(varlen)),
                          segments if segments == "late" else str(int(segments)), str(align)], env=env,
                         capture_output=True, text=True, timeout=600)
    if run.returncode and ("ptxas" in run.stderr.lower() or "ImportError" in run.stderr):
        pytest.skip(f"no offline compile here: {run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "compiled" in run.stdout
