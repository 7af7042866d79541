"""Which path the public functions take: without a GPU or the interpreter, the PyTorch reference."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import warnings
    import torch
    import flashssm
    from flashssm.ops.ssd import kernel_available, reference
    from tests.helpers import ssd_inputs, to_float64, rel_err
    warnings.simplefilter("error")  # no fallback warning on the CPU: the reference is the CPU path
    kw = ssd_inputs(2, 70, 4, 16, 8, 2, dtype=torch.float32, D="h", z=True, initial_states=True)
    assert not kernel_available(kw["x"], 8)
    y, h = flashssm.ssd_scan(**kw, chunk_size=32, return_final_states=True)
    y_ref, h_ref = reference.ssd_scan_sequential(**to_float64(kw))
    assert rel_err(y, y_ref) < 1e-5 and rel_err(h, h_ref) < 1e-5
    import sys
    assert "flashssm.ops.ssd.forward" not in sys.modules, "the kernel module was imported"
    print("reference path ok")
""")


def test_cpu_without_interpreter_runs_the_reference():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=root, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "reference path ok" in out.stdout
