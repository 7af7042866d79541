"""The benchmark harness: floors, accuracy rule, report, and the CLI on this machine."""

import json
import math

import pytest
import torch

from flashssm.bench.floors import Ceilings, floor_s
from flashssm.bench.measure import accuracy
from flashssm.bench.report import format_table
from flashssm.bench.run import BenchRun, Result, WorkloadRun
from flashssm.bench.workloads import CPU_DEFAULT, WORKLOADS
from flashssm.cli import main

ANCHOR_CEILINGS = Ceilings(copy_bytes_per_s=4.24e12, gemm_flops_per_s=686e12)


def test_bytes_and_flops_by_hand():
    w = WORKLOADS["2.7b-1x2K"]
    # x and y: 80 heads x 64 x 2 bytes each; B and C: 128 x 2 bytes each; dt: 80 x 4 bytes
    assert w.bytes() == 2048 * (2 * 80 * 64 * 2 + 2 * 128 * 2 + 80 * 4)
    # C·Bᵀ: 2·256·128 per token (one group); per head 2·256·64 + 4·128·64
    assert w.flops() == 2048 * (2 * 256 * 128 + 80 * (2 * 256 * 64 + 4 * 128 * 64))


@pytest.mark.parametrize("name,floor_ms", [("2.7b-1x2K", 0.016), ("2.7b-1x8K", 0.063), ("2.7b-1x32K", 0.253),
                                           ("2.7b-1x128K", 1.014), ("2.7b-8x4K", 0.253), ("2.7b-32x2K", 0.507)])
def test_floors_match_anchors(name, floor_ms):
    seconds, kind = floor_s(WORKLOADS[name], ANCHOR_CEILINGS)
    assert seconds * 1e3 == pytest.approx(floor_ms, abs=0.0015)
    assert kind == "compute"  # at chunk 256 the intra-chunk products outweigh the bytes


def test_fp16_workloads():
    """The fp16 workloads: their bf16 twins' shapes, bytes and FLOPs (both 16-bit), fp16 x, B, C (and dy), fp32 dt."""
    from flashssm.bench.workloads import SSDTrainWorkload

    for name, twin in (("2.7b-1x32K-fp16", "2.7b-1x32K"), ("2.7b-8x4K-fp16", "2.7b-8x4K"),
                       ("train-2.7b-8x4K-fp16", "train-2.7b-8x4K")):
        w, t = WORKLOADS[name], WORKLOADS[twin]
        assert w.dtype == "float16" and t.dtype == "bfloat16" and w.op == t.op and w.needs_gpu
        assert (w.batch, w.seqlen, w.nheads, w.headdim, w.dstate) == (t.batch, t.seqlen, t.nheads, t.headdim, t.dstate)
        assert w.bytes() == t.bytes() and w.flops() == t.flops() and "float16" in w.shape
    small = SSDTrainWorkload("s", 1, 8, nheads=2, headdim=4, dstate=4, dtype="float16").make_inputs("cpu")
    assert all(small[k].dtype == torch.float16 for k in ("x", "B", "C", "dy")) and small["dt"].dtype == torch.float32


def test_layer_workloads(device):
    """The layer workloads (the call as a Mamba-2 layer makes it): their plain twins' shapes and x, A, B, C draws, dt in
    the input dtype with dt_bias a head and softplus, D a value a head; their floor's bytes with a 16-bit dt; fla
    declines them; flashssm's forward + backward on the CPU workload gives y and all seven gradients (dD and ddt_bias
    included) within the bench's accuracy rule of float64, and D and the options change y."""
    from flashssm.bench.impls import IMPLS, Unavailable
    from flashssm.bench.workloads import SSDTrainWorkload

    for name, twin in (("2.7b-8x4K-layer", "2.7b-8x4K"), ("train-2.7b-8x4K-layer", "train-2.7b-8x4K"),
                       ("train-2.7b-1x32K-layer", "train-2.7b-1x32K")):
        w, t = WORKLOADS[name], WORKLOADS[twin]
        assert w.layer and not t.layer and w.op == t.op and "D dt_bias softplus" in w.shape
        assert (w.batch, w.seqlen, w.nheads, w.headdim, w.dstate, w.dtype) == (t.batch, t.seqlen, t.nheads, t.headdim,
                                                                              t.dstate, t.dtype)
        # (dt 2 bytes a value instead of 4: read by the forward; read again and its gradient written by the backward)
        assert w.flops() == t.flops() and t.bytes() - w.bytes() == w.tokens * w.nheads * 2 * (3 if "train" in name
                                                                                                  else 1)
        assert w.extra_inputs == ("D", "dt_bias") and t.extra_inputs == () and t.options() == {}
    sizes = dict(nheads=4, headdim=8, dstate=4, ngroups=2, chunk_size=16)
    layer = SSDTrainWorkload("l", 1, 40, dtype="bfloat16", layer=True, **sizes).make_inputs("cpu")
    plain = SSDTrainWorkload("p", 1, 40, dtype="bfloat16", **sizes).make_inputs("cpu")
    assert all(torch.equal(layer[k], plain[k]) for k in ("x", "A", "B", "C"))
    assert layer["dt"].dtype == torch.bfloat16 and layer["D"].shape == layer["dt_bias"].shape == (4,)
    dt = torch.nn.functional.softplus(layer["dt"].float() + layer["dt_bias"])
    assert 5e-4 < float(dt.median()) < 0.2  # (Mamba-2's initial steps)
    w = WORKLOADS["cpu-train-layer"]
    inp = w.make_inputs(device)
    for impl in ("fla",):
        with pytest.raises(Unavailable, match="D, dt_bias or dt_softplus"):
            IMPLS[w.op][impl].setup(w, inp)
    got = IMPLS[w.op]["flashssm"].setup(w, inp)()
    want = w.reference(inp)
    assert len(got) == len(want) == 8
    for g, r in zip(got, want):
        assert accuracy(g, r, torch.float32).passed
    bare = dict(inp, D=torch.zeros_like(inp["D"]))
    assert not torch.allclose(IMPLS[w.op]["flashssm"].setup(w, bare)()[0], got[0])


def test_packed_workloads():
    """The packed workloads: ragged lengths summing to the tokens of their dense twin, ending inside chunks; their
    cu_seqlens, and each peer's form of them (mamba_ssm's per-token seq_idx, fla's int64 offsets with a host copy);
    Mamba-1's too."""
    from flashssm.bench.impls import _fla_packed, _seq_idx
    from flashssm.bench.workloads import SSDWorkload, ragged_lengths

    for name in ("2.7b-packed-8x4K", "train-2.7b-packed-8x4K", "train-2.7b-packed-64x512"):
        w = WORKLOADS[name]
        assert w.batch == 1 and sum(w.lengths) == w.seqlen == 32768 and "packed" in w.shape
        assert sum(v % 256 == 0 for v in w.lengths[:-1]) == 0 and min(w.lengths) > 0
    packed, dense = WORKLOADS["2.7b-packed-8x4K"], WORKLOADS["2.7b-8x4K"]  # the floor of the same tokens
    assert packed.bytes() == dense.bytes() and packed.flops() == dense.flops()
    assert ragged_lengths(5, 1000, seed=3) == ragged_lengths(5, 1000, seed=3) != ragged_lengths(5, 1000, seed=4)
    with pytest.raises(ValueError, match="packed lengths"):
        SSDWorkload("bad", 2, 10, lengths=(5, 5))
    inp = SSDWorkload("p", 1, 6, nheads=2, headdim=4, dstate=4, dtype="float32", lengths=(3, 0, 2, 1)).make_inputs("cpu")
    assert inp["cu_seqlens"].tolist() == [0, 3, 3, 5, 6] and inp["cu_seqlens"].dtype == torch.int32
    assert _seq_idx(inp)["seq_idx"].tolist() == [[0, 0, 0, 2, 2, 3]]
    fla = _fla_packed(inp)
    assert fla["cu_seqlens"].dtype == torch.int64 and fla["cu_seqlens_cpu"].device.type == "cpu"
    assert _seq_idx({}) == {} and _fla_packed({}) == {}
    # Mamba-1's: the tokens of 8x2K, lengths ending inside the backward's 32-token chunks, the floor of the same tokens
    from flashssm.bench.workloads import ScanWorkload

    for name in ("m1-2.8b-packed-8x2K", "m1train-2.8b-packed-8x2K", "m1train-2.8b-packed-64x256",
                 "m1train-2.8b-packed-mix"):
        w = WORKLOADS[name]
        assert w.batch == 1 and sum(w.lengths) == w.seqlen == 16384 and "packed" in w.shape
        assert sum(v % 32 == 0 for v in w.lengths[:-1]) == 0 and min(w.lengths) > 0
    assert WORKLOADS["m1-2.8b-packed-8x2K"].bytes() == WORKLOADS["m1-2.8b-8x2K"].bytes()
    with pytest.raises(ValueError, match="packed lengths"):
        ScanWorkload("bad", 2, 10, lengths=(5, 5))
    inp = ScanWorkload("p", 1, 6, dim=4, dstate=2, dtype="float32", lengths=(3, 0, 3)).make_inputs("cpu")
    assert inp["cu_seqlens"].tolist() == [0, 3, 3, 6] and inp["u"].shape == (1, 4, 6)


def test_mixer_layout_workloads(device):
    """Mamba-1's workloads in the mixer's layout: the same values as their contiguous twins, u, delta, z (and dy)
    with stride 1 along dim, B and C as views of one x_proj output; the same floor; flashssm's scan on one agrees
    with the float64 reference through the bench's own accuracy rule."""
    from flashssm.bench.impls import IMPLS
    from flashssm.bench.workloads import ScanTrainWorkload, ScanWorkload

    for cls in (ScanWorkload, ScanTrainWorkload):
        sizes = dict(dim=40, dstate=4, dtype="float32", needs_gpu=False)
        plain = cls("p", 2, 9, **sizes).make_inputs("cpu")
        mixer = cls("m", 2, 9, mixer_layout=True, **sizes).make_inputs("cpu")
        assert plain.keys() == mixer.keys()
        assert all(torch.equal(v, mixer[k]) for k, v in plain.items())
        assert all(v.is_contiguous() for v in plain.values())
        for k in ("u", "delta", "z", "dy"):
            if k in mixer:
                assert mixer[k].stride() == (9 * 40, 1, 40), k
        rank = 2  # ceil(d_model / 16), d_model = dim / 2
        assert mixer["B"].stride() == mixer["C"].stride() == (9 * (rank + 8), 1, rank + 8)
        assert mixer["C"].data_ptr() == mixer["B"].data_ptr() + 4 * 4
    for name in ("m1-2.8b-8x2K", "m1train-2.8b-8x2K"):
        w, twin = WORKLOADS[name + "-mixer"], WORKLOADS[name]
        assert w.mixer_layout and "mixer layout" in w.shape and w.bytes() == twin.bytes()
    w = ScanWorkload("m", 1, 9, dim=8, dstate=4, dtype="float32", needs_gpu=False, mixer_layout=True)
    inp = w.make_inputs(device)  # (the kernel's device: on a GPU machine, CPU tensors have no kernel to run)
    y = IMPLS["selective_scan"]["flashssm"].setup(w, inp)()
    assert y.stride(1) == 1  # (the output keeps u's layout)
    assert accuracy(y, w.reference(inp), torch.float32).passed


def test_long_scan_reference_runs_in_pieces(monkeypatch):
    """A selective_scan forward workload longer than SCAN_REFERENCE_PIECE takes its float64 reference in pieces, each
    from the state the one before left (1 x 256K of the 2.8B shape did not fit a GPU whole): the whole sequence's
    result to float64's rounding (elementwise kernels take other vector paths on other shapes: 6e-17 seen), for
    pieces that divide the length and one that does not; a piece that started from zeros instead would differ."""
    from flashssm.bench import workloads
    from flashssm.bench.workloads import ScanWorkload

    w = ScanWorkload("long", 2, 23, dim=6, dstate=4, dtype="float32", needs_gpu=False)
    inp = w.make_inputs("cpu")
    whole = w.reference(inp)

    def close(y):
        return (y - whole).abs().max().item() <= 1e-14 * whole.abs().max().item()

    for piece in (5, 8, 23):
        assert close(ScanWorkload._reference_in_pieces(inp, piece)), piece
    monkeypatch.setattr(workloads, "SCAN_REFERENCE_PIECE", 8)
    assert close(w.reference(inp))  # (the pieces' path: 23 tokens > 8)
    from flashssm.ops.selective_scan import reference

    real = reference.selective_scan_checked
    monkeypatch.setattr(reference, "selective_scan_checked", lambda *a, initial_state=None, **k: real(*a, **k))
    assert not close(w.reference(inp))  # (the state dropped between pieces: the check can fail)
    assert "m1-2.8b-1x256K" in WORKLOADS and WORKLOADS["m1-2.8b-1x256K"].seqlen > workloads.SCAN_REFERENCE_PIECE


def test_accuracy_rule():
    ref = torch.randn(1000, dtype=torch.float64)
    good = accuracy((ref * (1 + 1e-3)).float(), ref, torch.float32)
    assert good.passed and good.rel_err == pytest.approx(1e-3, rel=1e-3) and good.nan == 0
    assert good.within_1e3 == 1.0 and good.within_1pct == 1.0
    bad = accuracy((ref * 1.01).float(), ref, torch.float32)
    assert not bad.passed and bad.within_1e3 < 1.0
    poisoned = ref.clone()
    poisoned[3] = float("nan")
    nan = accuracy(poisoned, ref, torch.bfloat16)
    assert not nan.passed and nan.nan == 1
    assert not accuracy(ref[:10], ref, torch.float32).passed


def test_accuracy_in_pieces(monkeypatch):
    """An output of more than ACCURACY_PIECE elements is compared in pieces (a whole float64 temporary of 1 x 256K's
    Mamba-1 output is 10.7 GB): the same figures as at once, for pieces that do not divide the size, NaNs counted,
    the rule the same."""
    from flashssm.bench import measure

    gen = torch.Generator().manual_seed(5)
    ref = torch.randn(3, 333, dtype=torch.float64, generator=gen)
    for scale in (1e-4, 3e-3, 2e-2):
        y = (ref * (1 + scale * torch.randn(ref.shape, dtype=torch.float64, generator=gen))).float()
        for poison in (False, True):
            if poison:
                y[1, 7] = float("nan")
            whole = accuracy(y, ref, torch.float32)
            monkeypatch.setattr(measure, "ACCURACY_PIECE", 64)
            parts = accuracy(y, ref, torch.float32)
            monkeypatch.setattr(measure, "ACCURACY_PIECE", 1 << 26)
            assert parts.nan == whole.nan and parts.passed == whole.passed, (scale, poison)
            assert parts.within_1e3 == whole.within_1e3 and parts.within_1pct == whole.within_1pct
            if poison:
                assert math.isnan(parts.rel_err) and math.isnan(whole.rel_err)
            else:
                assert parts.rel_err == pytest.approx(whole.rel_err, rel=1e-12)


def test_no_speedup_for_a_result_that_failed_accuracy():
    w = WORKLOADS["2.7b-1x2K"]
    ok = accuracy(torch.ones(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64), torch.bfloat16)
    bad = accuracy(torch.full((4,), 2.0, dtype=torch.float64), torch.ones(4, dtype=torch.float64), torch.bfloat16)
    wr = WorkloadRun(w, 0.016, "compute", [
        Result("flashssm", "inaccurate", "failed", 0.1, bad),
        Result("reference", "ok", "", 0.4, ok),
        Result("mamba_ssm", "ok", "", 0.8, ok),
        Result("fla", "unavailable", "not installed"),
    ])
    run = BenchRun("test device", {}, ANCHOR_CEILINGS, ["flashssm", "reference", "mamba_ssm", "fla"], [wr])
    table = format_table(run)
    rows = {line.split()[0]: line for line in table.splitlines() if line.split()
            and line.split()[0] in ("flashssm", "reference", "mamba_ssm", "fla")}
    assert "2.00" in rows["reference"]  # 0.8 / 0.4 against mamba_ssm
    assert "25.0" in rows["reference"]  # 0.4 ms over a 0.016 ms floor
    assert "[inaccurate]" in rows["flashssm"] and "8.00" not in rows["flashssm"] and "6.2" not in rows["flashssm"]
    assert "[unavailable] not installed" in rows["fla"]


def test_cli_runs_on_this_machine(tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = ["bench", "--json", str(out)]
    if torch.cuda.is_available():  # the full registry takes minutes: one small workload
        args += ["--rep", "20", "--warmup", "5", "-w", "accuracy-2x1K", "-i", "flashssm", "-i", "reference"]
    else:  # the interpreter's timings mean nothing: one timed call each, no warm-up; flashssm's variants (fp16
        # states, deterministic) left out: their kernels' tests cover them, and they took 40 % of this test's time
        args += ["--rep", "0", "--warmup", "0", "-i", "flashssm", "-i", "reference", "-i", "torch"]
    assert main(args) == 0
    data = json.loads(out.read_text())
    names = [w["workload"]["name"] for w in data["workloads"]]
    results = {r["impl"]: r for r in data["workloads"][0]["results"]}
    if torch.cuda.is_available():
        assert names == ["accuracy-2x1K"]
    else:
        assert names == CPU_DEFAULT
        assert "timings need a GPU" in capsys.readouterr().out
        for wr in data["workloads"]:  # every CPU workload: the kernel and the references agree with float64
            for r in wr["results"]:
                assert r["status"] == "ok" and r["accuracy"]["rel_err"] < 1e-5, (wr["op"], r)
            assert {r["impl"] for r in wr["results"]} <= {"flashssm", "reference", "torch"}
    assert results["reference"]["status"] == "ok"
    assert results["reference"]["accuracy"]["passed"]
    assert results["reference"]["accuracy"]["rel_err"] < (1e-5 if names == CPU_DEFAULT else 3e-3)
    assert results["flashssm"]["status"] in ("ok", "unavailable")


def test_cli_refuses_bad_requests(capsys):
    assert main(["bench", "--list"]) == 0
    assert "2.7b-1x128K" in capsys.readouterr().out
    assert main(["bench", "-w", "no-such-workload"]) == 2
    assert main(["bench", "-i", "no-such-impl", "-w", "cpu-small"]) == 2
    if not torch.cuda.is_available():
        assert main(["bench", "-w", "2.7b-1x2K"]) == 2


def test_model_bench_on_this_machine(tmp_path, capsys):
    """`flashssm bench model`: a CPU scenario (a GPU one where there is one) for flashssm, its recompute, its activation
    checkpointing, its CUDA-graph form (training scenarios on a GPU only: unavailable otherwise, said so) and a peer,
    JSON rows for each."""
    out = tmp_path / "model.json"
    gpu = torch.cuda.is_available()
    scenario = "train-130m-1x512" if gpu else "cpu-train"
    assert main(["bench", "model", "-s", scenario, "-i", "flashssm", "-i", "flashssm-graphs", "-i", "flashssm-recompute",
                 "-i", "flashssm-checkpointing", "-i", "mamba_ssm", "--repeat", "1", "--json", str(out)]) == 0
    rows = {r["impl"]: r for r in json.loads(out.read_text())}
    assert set(rows) == {"flashssm", "flashssm-graphs", "flashssm-recompute", "flashssm-checkpointing", "mamba_ssm"}
    for impl in ("flashssm", "flashssm-recompute", "flashssm-checkpointing"):
        assert rows[impl]["seconds"] > 0 and rows[impl]["tokens_per_second"] > 0, rows[impl]["note"]
    if gpu:
        assert rows["flashssm-graphs"]["seconds"] > 0, rows["flashssm-graphs"]["note"]
    else:
        assert rows["flashssm-graphs"]["note"] == "unavailable: CUDA graphs need a CUDA GPU"
        assert "unavailable" in capsys.readouterr().out


def test_model_bench_ratios():
    """Each of flashssm's forms against the peers, and the graphs against plain flashssm; rows without a rate skipped."""
    from flashssm.bench.model import Result as ModelResult, ratios

    results = [ModelResult("s", "flashssm", 1.0, 100.0), ModelResult("s", "flashssm-graphs", 0.5, 400.0),
               ModelResult("s", "mamba_ssm", 2.0, 50.0), ModelResult("s", "transformers", note="unavailable: x")]
    assert ratios(results) == ["s                  flashssm / mamba_ssm: 2.00x",
                               "s                  flashssm-graphs / flashssm: 4.00x",
                               "s                  flashssm-graphs / mamba_ssm: 8.00x"]
