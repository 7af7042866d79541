"""The benchmark harness: floors, accuracy rule, report, and the CLI on this machine."""

import json

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
    else:  # the interpreter's timings mean nothing: one timed call each, no warm-up
        args += ["--rep", "0", "--warmup", "0"]
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
                assert r["status"] == "ok" and r["accuracy"]["rel_err"] < 2e-4, (wr["op"], r)  # fp16 states: 1e-4
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
