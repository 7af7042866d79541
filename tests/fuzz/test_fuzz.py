"""The short fuzz budget of CI (tests/fuzz/fuzz.py has the long one, with fresh seeds): a fixed
number of cases per op from a fixed seed (FLASHSSM_FUZZ_SEED picks others), so that CI never turns
red on a case nobody changed; against the float64 references. A failure names the one-line command
that replays its case."""

import os

import pytest
import torch

from tests.conftest import DEVICE
from tests.fuzz import fuzz

CASES_PER_OP = 8


@pytest.mark.parametrize("op", list(fuzz.CASES))
def test_fuzz_short_budget(op):
    seed = int(os.environ.get("FLASHSSM_FUZZ_SEED", "20261122"))
    report = fuzz.fuzz(seed, budget_s=float("inf"), ops=[op], device=torch.device(DEVICE),
                       max_cases=CASES_PER_OP, log=lambda line: None)
    lines = [f"{'; '.join(fails)}  |  replay: {fuzz.reproducer(o, cs, torch.device(DEVICE))}"
             for o, cs, _, fails in report["failed"]]
    assert not lines, f"{len(lines)} of {report['cases']} {op} cases failed:\n" + "\n".join(lines)


def test_case_is_reproducible():
    """The same case seed draws the same case (the reproducer line relies on it)."""
    a, fa = fuzz.run_case("causal_conv1d", 12345, torch.device(DEVICE))
    b, fb = fuzz.run_case("causal_conv1d", 12345, torch.device(DEVICE))
    assert a == b and fa == fb


def test_failures_are_reported_with_a_reproducer(monkeypatch):
    """A wrong kernel is caught and its line replays it (the harness can fail)."""
    import flashssm

    real = flashssm.rmsnorm_gated
    monkeypatch.setattr(fuzz.flashssm, "rmsnorm_gated", lambda *a, **k: real(*a, **k) * 1.2)
    lines = []
    report = fuzz.fuzz(7, float("inf"), ["rmsnorm_gated"], torch.device(DEVICE), max_cases=3, log=lines.append)
    assert len(report["failed"]) == 3 and all("python -m tests.fuzz.fuzz --op rmsnorm_gated --case" in s
                                               for s in lines)
    monkeypatch.setattr(fuzz.flashssm, "rmsnorm_gated", lambda *a, **k: 1 / 0)
    report = fuzz.fuzz(7, float("inf"), ["rmsnorm_gated"], torch.device(DEVICE), max_cases=1, log=lines.append)
    assert "raised ZeroDivisionError" in report["failed"][0][3][0]


def test_model_shapes_reach_the_fast_paths():
    """`--shapes model` (a GPU run) draws what models run: ssd_scan cases on the Gluon kernel's shapes in both of its
    forms (late publish for many chains, early publish in one wave of spans at batch 1), and selective_scan cases in
    each of the forward's plans (early segments, late hand-over segments, dstate past 32). Drawn here without running
    them (the fast paths need a GPU; this checks the profile's reach, which a narrower draw would lose)."""
    import random

    from flashssm.ops.checks import SSDDims
    from flashssm.ops.selective_scan import scan
    from flashssm.ops.ssd import forward

    device, resident = torch.device("cpu"), forward._resident_programs(torch.device("cpu"))
    seen = set()
    for seed in range(400):
        dtype, chunk, ngroups, nheads, headdim, dstate, batch, seqlen, lens, cu = fuzz.ssd_shape(
            random.Random(seed), "model", device)
        assert nheads % ngroups == 0 and seqlen == (sum(lens) if lens else seqlen) and seqlen >= 1
        assert batch * nheads * seqlen ** 2 <= 1.1 * fuzz.PAIRS + nheads * batch * (chunk + 2) ** 2
        dims = SSDDims(batch, seqlen, nheads, headdim, ngroups, dstate, len(lens) if lens else batch, chunk,
                       None if cu is None else tuple(cu.tolist()), (0.0, float("inf")))
        gluon_shape = (dtype == torch.bfloat16 and headdim % 64 == 0 and dstate in (64, 128) and chunk % 64 == 0)
        many = forward._many_chains(dims, resident)
        cfg = forward._config_for(dims, dtype.itemsize, resident, forward._config_switches())
        seen.add(("gluon late" if many else "gluon early") if gluon_shape else "triton")
        if gluon_shape and cfg.gluon_group is not None and cfg.gluon_group > 1:
            seen.add("gluon one wave")
        if many and cfg.group > 1:
            seen.add("late spans")
        if cu is not None and 0 in lens:
            seen.add("packed with an empty sequence")
    assert seen >= {"gluon late", "gluon early", "gluon one wave", "triton", "late spans",
                    "packed with an empty sequence"}, seen

    plans = set()
    for seed in range(200):
        dtype, dim, dstate, ngroups, batch, seqlen, lens, cu, heavy = fuzz.scan_shape(random.Random(seed), "model",
                                                                                      device)
        cfg = scan.forward_config(batch, dim, dstate, ngroups or 1, 132, dtype.itemsize, seqlen)
        plans.add("late segments" if cfg.hand_late else "early segments" if cfg.segment else
                  "wide" if dstate > 32 else "plain")
    assert plans == {"late segments", "early segments", "wide", "plain"}, plans


def test_model_shapes_reach_the_other_ops_launch_plans():
    """The decoding steps, the convolution and the gated norm at models' shapes (`--shapes model`) take the launch
    plans the small shapes never reach on a GPU of 132 SMs: the steps' rows of headdim (channels) shrunk for small
    batches and left whole for large ones, dstate 256; the convolution in several 128-channel blocks (the mixers'
    channel-contiguous layout) with its backward split over tokens and packed batches; the norm's groups past
    WIDE_GROUP (the two-sweep backward) and past 8192 (two rows a program) as well as narrower ones."""
    import random

    from flashssm.ops.conv1d import conv
    from flashssm.ops.norm import rmsnorm
    from flashssm.ops.selective_scan import step as scan_step
    from flashssm.ops.ssd import step as ssd_step

    sms, device, seen = 132, torch.device("cpu"), set()
    for seed in range(300):
        rng = random.Random(seed)
        dtype, state_dtype, ngroups, nheads, headdim, dstate, batch = fuzz.step_shape(rng, "model", device)
        assert nheads % ngroups == 0 and batch * nheads * headdim * dstate <= fuzz.STEP_STATE
        block_p = ssd_step.pick_block_p(batch, nheads, headdim, dstate, sms)
        whole = ssd_step.pick_block_p(4096, nheads, headdim, dstate, sms)  # (a batch that fills the GPU)
        seen.add("ssd step rows shrunk" if block_p < whole else "ssd step rows whole")
        seen.add(f"ssd step dstate {dstate}")

        dtype, state_dtype, dim, dstate, batch, ngroups = fuzz.scan_step_shape(random.Random(seed), "model", device)
        assert batch * dim * dstate <= fuzz.STEP_STATE and (ngroups is None or dim % ngroups == 0)
        block_d = scan_step.pick_block_d(batch, dim, dstate, sms)
        seen.add("scan step channels shrunk" if block_d < scan_step.pick_block_d(4096, dim, dstate, sms)
                 else "scan step channels whole")

        dtype, dim, width, batch, seqlen, lens, cu = fuzz.conv_shape(random.Random(seed), "model", device)
        assert seqlen == (sum(lens) if lens else seqlen) >= 1
        block_l, block_d, _ = conv.pick_blocks(dim, seqlen, True)
        if -(-dim // block_d) > 1 and block_d == 128:
            seen.add("conv channel blocks")
        bwd_l, bwd_d, _, _ = conv.pick_bwd_blocks(dim, dtype.itemsize)
        if conv.backward_splits(-(-seqlen // bwd_l) * batch, -(-dim // bwd_d), sms) > 1:
            seen.add("conv backward splits")
        if cu is not None and 0 in lens:
            seen.add("conv packed with an empty sequence")

        dtype, groups, dim, rows = fuzz.norm_shape(random.Random(seed), "model", device)
        group = dim // groups
        seen.add("norm wide backward" if group > rmsnorm.WIDE_GROUP else "norm one-tile backward")
        if rmsnorm.pick_blocks(group)[1] >= 8192:
            seen.add("norm two rows a program")
    assert seen >= {"ssd step rows shrunk", "ssd step rows whole", "ssd step dstate 256", "scan step channels shrunk",
                    "scan step channels whole", "conv channel blocks", "conv backward splits",
                    "conv packed with an empty sequence", "norm wide backward", "norm one-tile backward",
                    "norm two rows a program"}, seen


def test_model_shapes_need_a_gpu():
    with pytest.raises(SystemExit):
        fuzz.main(["--shapes", "model", "--device", "cpu", "--budget", "1"])


def test_a_run_stopped_from_outside_still_prints_its_summary(monkeypatch, capsys):
    """SIGTERM (what `timeout` sends) inside an op of the second case: the case finished is summed up, the run exits
    124 rather than 0, the case under way is neither counted nor taken for a failure of its op (`run_case` takes an
    op's exceptions for findings), and the caller's SIGTERM handler is back afterwards."""
    import signal
    import time

    import flashssm

    real_op, real_case = flashssm.rmsnorm_gated, fuzz.run_case
    started = []

    def run_case(*args, **kwargs):
        started.append(args[1])
        return real_case(*args, **kwargs)

    def op(*args, **kwargs):
        if len(started) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # (the handler raises before this ends)
        return real_op(*args, **kwargs)

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(fuzz, "run_case", run_case)
    monkeypatch.setattr(fuzz.flashssm, "rmsnorm_gated", op)
    rc = fuzz.main(["--seed", "1", "--budget", "600", "--max-cases", "4", "--ops", "rmsnorm_gated", "--device", "cpu"])
    out = capsys.readouterr().out
    assert rc == fuzz.STOPPED_RC, out
    assert "stopped by SIGTERM during case 2" in out, out
    assert "1 cases (rmsnorm_gated 1), 0 failed" in out, out
    assert signal.getsignal(signal.SIGTERM) is before
