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
