"""The kernels on GPUs other than Hopper, compiled for them without one (`benchmarks/other_gpus.py`)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import HAS_GPU

# the 2.7B shape's training call without z or D (the paths launch's form that needed 128 KB on sm_89 at three stages)
# and the widest shape's inference call, compiled for an L4 / RTX 4090 (sm_89, 99 KB a block): every launch fits with
# the stages chosen before it (no refusal for `_runtime.cached_launch` to take back), none fails to compile
_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import torch
import benchmarks.other_gpus as og
gpu = og.GPUS["l4"]
survey = og.Survey(gpu)
cases = [og.ssd_case(1, 2048, 80, 64, 128, 1, torch.bfloat16, extras=False),
         og.ssd_case(1, 2048, 16, 128, 256, 1, torch.bfloat16)]
with og.as_gpu(gpu, survey):
    for label, call in cases:
        survey.where = label
        try:
            call()
        except og.TakesReference:  # dstate 256 x headdim 128 training, after its inference launches
            survey.references.append(label)
names = {lc.kernel for lc in survey.launches}
assert {"_tiles_paths_kernel", "_ssd_fwd_kernel", "_dstates_kernel"} <= names, names
assert survey.references == [cases[1][0]], survey.references
bad = [(lc.kernel, lc.shared, lc.stages, lc.error) for lc in survey.launches if lc.shared > gpu.shared or lc.error]
assert not bad, bad
for cases in (og.ssd_cases, og.scan_cases, og.other_cases):  # every case the tool runs, made (not run)
    for quick in (True, False):
        labels = [label for label, call in cases(quick) if callable(call)]
        assert labels and len(set(labels)) == len(labels), (cases.__name__, quick, labels)
print("fits", len(survey.launches), max(lc.shared for lc in survey.launches))
"""


def test_the_training_launches_fit_a_99_kb_gpu():
    """Compiled for sm_89 by this machine's Triton (ptxas from its wheel), in a process without the interpreter."""
    if HAS_GPU:
        pytest.skip("a CPU-side compile check (the GPU's tests run the kernels)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, "-c", _SCRIPT, root], env=env, capture_output=True, text=True, timeout=900)
    if run.returncode and ("ptxas" in run.stderr.lower() and "not found" in run.stderr.lower()):
        pytest.skip(f"no offline compile here: {run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("fits")
