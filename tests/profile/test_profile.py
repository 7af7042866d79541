"""flashssm profile on the CPU: the classifier, the byte and FLOP formulas against hand counts, the
trace reader on a real profiler trace (of a reference-path training step) with GPU launches added,
the report writer, Nsight Compute's CSV, and the command's argument errors."""

from __future__ import annotations

import json
import os

import pytest
import torch

from flashssm import _runtime
from flashssm.profile import analyze, classify, counts, ncu, report, trace
from flashssm.profile.counts import Shape


@pytest.mark.parametrize("name, ops, expected", [
    ("_ssd_fwd_kernel", [], "SSM scan"),
    ("_ssd_bwd_kernel", [], "SSM scan"),
    ("_scan_fwd_kernel", [], "SSM scan"),
    ("_chunk_scan_chunk_state_bwd_dx_kernel", [], "SSM scan"),
    ("_state_passing_fwd_kernel", [], "SSM scan"),
    ("_bmm_chunk_fwd_kernel", [], "SSM scan"),
    ("_conv_fwd_kernel", [], "conv1d"),
    ("_rmsnorm_bwd_kernel", [], "norm"),
    ("_layer_norm_fwd_1pass_kernel", [], "norm"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", ["aten::linear", "aten::addmm"], "GEMM"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas", [], "GEMM"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)", ["aten::add"],
     "element-wise"),
    ("void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)", ["aten::sum"], "other"),
    # an operator with a class claims every kernel it launches, innermost first
    ("void at::native::vectorized_elementwise_kernel<4>(int)", ["MambaChunkScanCombinedFnBackward", "aten::add"],
     "SSM scan"),
    ("void at::native::vectorized_elementwise_kernel<4>(int)", ["RMSNormGatedFnBackward", "aten::sum"], "norm"),
    ("void cudnn::engines_precompiled::convolve_kernel(int)", ["aten::convolution_backward"], "conv1d"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>(Flash_fwd_params)",
     ["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention"], "attention"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>(int)",
     ["Optimizer.step#AdamW.step", "aten::_fused_adamw_"], "element-wise"),
    ("some_unknown_kernel", [], "other"),
])
def test_classify(name, ops, expected):
    assert classify.classify(name, ops) == expected


def test_copies_and_memsets_are_other_unless_an_operator_claims_them():
    assert classify.classify("Memcpy DtoD (Device -> Device)", [], kind="memcpy") == "other"
    assert classify.classify("Memset (Device)", ["flashssm::ssd_scan_bwd"], kind="memset") == "SSM scan"
    assert classify.classify("Memset (Device)", ["SSDScanFunctionBackward"], kind="memset") == "SSM scan"


def test_short_kernel_names():
    assert trace.short_kernel_name("void at::native::foo<4, bar<int> >(int, float)") == "at::native::foo"
    assert trace.short_kernel_name("_ssd_fwd_kernel") == "_ssd_fwd_kernel"


# ---- hand counts ----

MIXER = {"kind": "mamba2", "nheads": 4, "headdim": 8, "ngroups": 1, "d_state": 16, "chunk_size": 32,
         "d_inner": 32, "conv_dim": 64, "conv_width": 4}
SHAPE = Shape(batch=2, seqlen=64, elem=2)   # 128 tokens, 4 chunks


def test_ssd_formulas_against_hand_counts():
    # x: 128 tokens x 4 heads x 8 x 2 B = 8192 B; dt: 128 x 4 x 2 = 1024; B and C: 128 x 16 x 2 = 4096 each
    # C·Bᵀ: 4 chunks x 32 x 32 x 16 x 2 = 131072; (L∘CBᵀ)·X: 4 x 4 heads x 32 x 32 x 8 x 2 = 262144;
    # chunk states and output C·S: 128 x 4 x 16 x 8 x 2 = 131072 each
    fwd = counts.formula_cost("_ssd_fwd_kernel", MIXER, SHAPE, "forward")
    assert fwd.bytes == 8192 + 1024 + 4096 + 4096 + 8192
    assert fwd.tensor_flops == 131072 + 262144 + 2 * 131072
    # decay matrix 3 x 128 x 32 x 4 = 49152; per token 8 x 128 x 4 + 3 x 128 x 4 x 8 = 16384;
    # state update 2 x 4 chunks x 4 x 8 x 16 = 4096
    assert fwd.vector_flops == 49152 + 16384 + 4096
    # in the backward the same kernel only recomputes chunk states: x, dt, B in; 4 x 4 x 8 x 16 fp32 states out
    rec = counts.formula_cost("_ssd_fwd_kernel", MIXER, SHAPE, "backward")
    assert rec.bytes == 8192 + 1024 + 4096 + 4 * 4 * 8 * 16 * 4
    assert rec.tensor_flops == 131072
    bmm = counts.formula_cost("_bmm_chunk_fwd_kernel", MIXER, SHAPE, "forward")
    assert (bmm.bytes, bmm.tensor_flops, bmm.vector_flops) == (4096 * 2 + 4 * 32 * 32 * 4, 131072, 0)
    cumsum = counts.formula_cost("_chunk_cumsum_fwd_kernel", MIXER, SHAPE, "forward")
    assert cumsum.bytes == 1024 + 128 * 4 * 4 + 128 * 4 * 4
    # gradients: dC·Bᵀ recompute + 2 intra products + dC, dB within chunks (2 x 4 x 4 x 32 x 32 x 16 x 2) + 4 state products
    bwd = counts.formula_cost("_ssd_bwd_kernel", MIXER, SHAPE, "backward")
    assert bwd.tensor_flops == 131072 + 2 * 262144 + 2 * 524288 + 4 * 131072
    # reads x, dt, B, C, dy, fp32 chunk states (4 x 4 x 8 x 16 x 4 B); writes dx, ddt (fp32), dB and dC
    # (fp32: 128 x 16 x 4 B each)
    assert bwd.bytes == (8192 + 1024 + 4096 + 4096 + 8192 + 8192) + (8192 + 2048 + 2 * 8192)


def test_ragged_sequences_pad_to_whole_chunks():
    odd = Shape(batch=1, seqlen=40, elem=2)   # 2 chunks of 32, 64 padded positions
    bmm = counts.formula_cost("_bmm_chunk_fwd_kernel", MIXER, odd, None)
    assert bmm.tensor_flops == 2 * 64 * 32 * 16
    assert bmm.bytes == 2 * 40 * 16 * 2 + 2 * 32 * 32 * 4


def test_norm_conv_scan_formulas():
    gated = counts.formula_cost("_rmsnorm_fwd_kernel", {"width": 32, "gated": True}, SHAPE, "forward")
    assert gated.bytes == 128 * 32 * 2 * 3 and gated.vector_flops == 128 * 32 * 9
    block = counts.formula_cost("_layer_norm_bwd_kernel", {"width": 32, "residual": True}, SHAPE, "backward")
    assert block.bytes == 128 * 32 * (3 * 2 + 8)
    conv = counts.formula_cost("_conv_fwd_kernel", MIXER, SHAPE, "forward")
    assert conv.bytes == 2 * 128 * 64 * 2 + 64 * 4 * 4 and conv.vector_flops == 128 * 64 * 12
    scan = counts.formula_cost("_scan_fwd_kernel", {"d_inner": 32, "d_state": 8}, SHAPE, "forward")
    # u, delta, z, y (128 x 32 x 2 each), B and C (128 x 8 x 2 each), 2 x 2 checkpoints of 32 x 8 fp32
    assert scan.bytes == 4 * 8192 + 2 * 2048 + 4 * 32 * 8 * 4
    assert counts.formula_cost("_ssd_fwd_kernel", None, SHAPE, "forward") is None
    assert counts.formula_cost("_ssd_fwd_kernel", {"width": 3}, SHAPE, "forward") is None
    assert counts.formula_cost("unknown", MIXER, SHAPE, "forward") is None


def test_op_costs_from_recorded_shapes():
    mm = counts.op_cost("aten::mm", [[64, 32], [32, 16]], ["c10::BFloat16", "c10::BFloat16"])
    assert (mm.tensor_flops, mm.bytes) == (2 * 64 * 16 * 32, (64 * 32 + 32 * 16 + 64 * 16) * 2)
    addmm = counts.op_cost("aten::addmm", [[16], [64, 32], [32, 16], [], []],
                           ["float", "float", "float", "Scalar", "Scalar"])
    assert addmm.bytes == (16 + 64 * 32 + 32 * 16 + 64 * 16) * 4
    bmm = counts.op_cost("aten::bmm", [[3, 64, 32], [3, 32, 16]], ["float", "float"])
    assert bmm.tensor_flops == 3 * 2 * 64 * 16 * 32
    sdpa = counts.op_cost("aten::_scaled_dot_product_flash_attention", [[2, 4, 128, 16]] * 3 + [[], []],
                          ["c10::BFloat16"] * 3 + ["double", "bool"])
    assert sdpa.tensor_flops == 4 * 2 * 4 * 128 * 128 * 16 * 0.5       # causal: half the score matrix
    add = counts.op_cost("aten::add", [[1000], [1000], []], ["float", "float", "Scalar"])
    assert (add.bytes, add.vector_flops) == (12000, 1000)
    assert counts.op_cost("aten::fill_", [[1000], []], ["float", "Scalar"]).bytes == 4000
    assert counts.op_cost("aten::copy_", [[1000], [1000], []], ["c10::BFloat16", "float", "bool"]).bytes == 6000
    assert counts.op_cost("aten::mm", [], []) is None


# ---- a real trace with GPU launches added ----

@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """Profile a tiny model's training step (reference path: CPU, fast), then add to its trace a GPU
    launch per leaf aten op (a GEMM kernel for matrix products, an element-wise kernel otherwise) and
    an SSD kernel in each mixer's forward and backward, as the profiler would record them on a GPU."""
    from flashssm.profile import run as prun
    import argparse

    out = tmp_path_factory.mktemp("profile")
    args = argparse.Namespace(model="tiny", mode="train", batch=2, seqlen=64, layers=None, dtype="fp32",
                              decode_steps=2, warmup=1, repeat=1, checkpoint=None, device="cpu",
                              kernels=["reference"])
    meta = prun.run(args, str(out))
    path = out / meta["runs"]["reference"]["trace"]
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    cpu = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    # leaves: ops with no op inside them on the same thread
    cpu.sort(key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    leaves = [e for i, e in enumerate(cpu)
              if not (i + 1 < len(cpu) and cpu[i + 1]["tid"] == e["tid"] and cpu[i + 1]["ts"] < e["ts"] + e["dur"])]
    gpu_t, corr, added = 1e9, 1, []

    pid = cpu[0]["pid"]

    def launch(tid, ts, name):
        nonlocal gpu_t, corr
        added.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": ts,
                      "dur": 0.1, "args": {"correlation": corr}})
        added.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": gpu_t, "dur": 10.0,
                      "args": {"correlation": corr, "grid": [1, 1, 1], "block": [128, 1, 1]}})
        gpu_t += 20
        corr += 1

    def free_point(r):
        """The middle of the widest stretch of range r with no op or inner module running (a Triton
        launch from Python, outside every aten op, as the SSD kernel's is)."""
        inside = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation") and e is not r
                        and e["tid"] == r["tid"] and r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"])
        best, t = (0.0, r["ts"]), r["ts"]
        for start, end in inside + [(r["ts"] + r["dur"], r["ts"] + r["dur"])]:
            if start - t > best[0]:
                best = (start - t, (t + start) / 2)
            t = max(t, end)
        return best[1]

    for e in cpu:   # a matrix product launches outside any helper op inside it
        if e["name"] in ("aten::mm", "aten::addmm", "aten::bmm"):
            launch(e["tid"], free_point(e), "nvjet_tst_128x256_fake_gemm")
    for e in leaves:
        if e["name"] in ("aten::add", "aten::mul", "aten::copy_", "aten::fill_"):
            launch(e["tid"], e["ts"] + e["dur"] / 2, "void at::native::vectorized_elementwise_kernel<4>(int)")
    ranges = [e for e in events if e.get("ph") == "X" and e.get("name", "").endswith(".mixer")]
    for r in ranges:
        launch(r["tid"], free_point(r), "_ssd_fwd_kernel")
    for e in events:   # an SSD gradient kernel inside the backward node of each mixer's dt softplus
        if e.get("name") == "SoftplusBackward0":
            launch(e["tid"], free_point(e), "_ssd_bwd_kernel")
    for e in events:
        if e.get("name", "").startswith("Optimizer.step"):
            launch(e["tid"], e["ts"] + e["dur"] / 2, "void multi_tensor_apply_kernel<FusedAdamMathFunctor>(int)")
    data["traceEvents"] = events + added
    path.write_text(json.dumps(data))
    return out, meta


def test_trace_joins_launches_to_modules_ops_and_phases(profiled):
    out, meta = profiled
    launches = trace.launches(trace.load(str(out / "trace-reference.json")))
    assert launches and all(l.kind == "kernel" for l in launches)
    gemms = [l for l in launches if "gemm" in l.name]
    fwd = [l for l in gemms if l.phase == "forward"]
    bwd = [l for l in gemms if l.phase == "backward"]
    assert fwd and bwd
    assert any(l.module == "backbone.layers.0.mixer.in_proj" for l in fwd)
    # backward launches run outside the module ranges: they get the module of the forward op
    assert any(l.module == "backbone.layers.0.mixer.in_proj" for l in bwd)
    assert any(l.module == "lm_head" for l in bwd)
    assert all(l.op in ("aten::mm", "aten::addmm", "aten::bmm") and l.op_dims for l in gemms)
    ssd = [l for l in launches if l.name == "_ssd_fwd_kernel"]
    assert [l.module for l in ssd] == ["backbone.layers.0.mixer", "backbone.layers.1.mixer"]
    adam = [l for l in launches if "Adam" in l.name]
    assert adam and all(l.phase == "optimizer" for l in adam)
    ssd_bwd = [l for l in launches if l.name == "_ssd_bwd_kernel"]
    assert sorted(l.module for l in ssd_bwd) == ["backbone.layers.0.mixer", "backbone.layers.1.mixer"]
    assert all(l.phase == "backward" for l in ssd_bwd)


def test_analysis_and_report(profiled):
    out, meta = profiled
    run = meta["runs"]["reference"]
    launches = trace.launches(trace.load(str(out / run["trace"])))
    a = analyze.analyze(launches, run["modules"], Shape(2, 64, 4), "reference")
    assert a.total_us == pytest.approx(10.0 * len(launches))
    assert sum(a.class_us.values()) == pytest.approx(a.total_us)
    gemm = a.rows_of("GEMM")
    assert gemm and all(r.costed_launches == r.launches and r.tensor_flops > 0 for r in gemm)
    ssd = [r for r in a.rows_of("SSM scan") if r.name == "_ssd_fwd_kernel"]
    assert ssd and ssd[0].launches == 2
    want = 2 * counts.formula_cost("_ssd_fwd_kernel", run["modules"]["backbone.layers.0.mixer"], Shape(2, 64, 4),
                                   "forward").bytes
    assert ssd[0].bytes == pytest.approx(want)
    meta["ceilings"] = {"copy_bytes_per_s": 3.0e12, "gemm_flops_per_s": 8.0e14}
    frac = ssd[0].ceiling_fraction(3.0e12, 8.0e14)
    assert 0 < frac
    path = report.write_report(str(out), meta, [a, a], {"columns": ["L2 hit %"], "rows": [
        {"kernels": "reference", "kernel": "_ssd_fwd_kernel", "launches": 2, "values": {"L2 hit %": 55.0}}]})
    text = open(path).read()
    assert "## Operator breakdown" in text and "| GEMM |" in text and "`_ssd_fwd_kernel`" in text
    assert "| reference | `_ssd_fwd_kernel` | 2 | 55.0 |" in text
    assert os.path.exists(out / "kernels-reference.csv") and os.path.exists(out / "summary.json")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"][0]["class_share"]["GEMM"] == pytest.approx(a.share("GEMM"))


def test_report_from_a_profile_directory(profiled):
    from flashssm.profile.cli import report_from

    out, _ = profiled
    path = report_from(str(out))
    assert "tiny train 2×64" in open(path).read()
    with pytest.raises(SystemExit, match="profile.json not found"):
        report_from(str(out / "missing"))


def test_ncu_csv():
    text = "\n".join([
        '==PROF== Disconnected',
        '"ID","Kernel Name","gpu__time_duration.sum","lts__t_sector_hit_rate.pct","dram__bytes.sum.per_second"',
        '"","","nsecond","%","Tbyte/second"',
        '"0","_ssd_fwd_kernel","1,000","50.5","2.5"',
        '"1","_ssd_fwd_kernel","3,000","60.5","3.5"',
        '"2","_conv_fwd_kernel","500","10","1"',
    ])
    cols = [("duration µs", "gpu__time_duration.sum"), ("L2 hit %", "lts__t_sector_hit_rate.pct"),
            ("DRAM GB/s", "dram__bytes.sum.per_second")]
    rows = {r["kernel"]: r for r in ncu.parse_csv(text, cols)}
    assert rows["_ssd_fwd_kernel"]["launches"] == 2
    assert rows["_ssd_fwd_kernel"]["values"] == pytest.approx({"duration µs": 2.0, "L2 hit %": 55.5, "DRAM GB/s": 3000})
    assert ncu.choose_metrics({"lts__t_sector_hit_rate", "dram__throughput"})[:2] == [
        ("L2 hit %", "lts__t_sector_hit_rate.pct"), ("DRAM % peak", "dram__throughput.avg.pct_of_peak_sustained_elapsed")]


def test_use_reference_blocks_the_kernels():
    x = torch.zeros(1)
    with _runtime.use_reference():
        assert "use_reference" in _runtime.device_blocker(x)
    assert _runtime._force_reference == 0


def test_command_errors():
    from flashssm.cli import main
    from flashssm.profile.run import model_config

    with pytest.raises(ValueError, match="--model"):
        model_config("mamba3-1b")
    with pytest.raises(ValueError, match="--layers"):
        model_config("tiny", 0)
    assert model_config("mamba2-hybrid", 5).attn_layer_idx == [3]
    with pytest.raises(SystemExit, match="--batch must be positive"):
        main(["profile", "--batch", "0", "--from", "nowhere"])
    with pytest.raises(SystemExit):
        main(["profile", "--kernels", "cuDNN"])
    # checked before the run measures or builds anything
    with pytest.raises(SystemExit, match="--model: expected one of"):
        main(["profile", "--model", "mamba3-1b"])
    with pytest.raises(SystemExit, match="--layers"):
        main(["profile", "--model", "tiny", "--layers", "-1"])
    with pytest.raises(SystemExit, match="--checkpoint: '/nonexistent' is not a directory"):
        main(["profile", "--model", "tiny", "--checkpoint", "/nonexistent"])


def test_a_kernel_set_that_cannot_run_is_reported_and_the_others_kept(tmp_path):
    import argparse

    from flashssm.profile import run as prun
    from flashssm.profile.cli import report_from

    args = argparse.Namespace(model="tiny-mamba1", mode="prefill", batch=1, seqlen=16, layers=None, dtype="fp32",
                              decode_steps=1, warmup=0, repeat=1, checkpoint=None, device="cpu",
                              kernels=["reference", "mamba_ssm"])
    meta = prun.run(args, str(tmp_path))
    assert list(meta["runs"]) == ["reference"]
    assert "selective_scan" in meta["errors"]["mamba_ssm"]
    assert "- mamba_ssm: not run:" in open(report_from(str(tmp_path))).read()
