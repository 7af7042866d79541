"""Which path the public functions take: without a GPU or the interpreter, the PyTorch reference."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from flashssm.ops.checks import check_ssd_scan

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


def test_an_old_gpu_is_refused_with_its_name_and_capability(monkeypatch):
    from flashssm import _runtime

    monkeypatch.setattr(_runtime, "cuda_capability", lambda index: (7, 5))
    monkeypatch.setattr(_runtime, "_cuda_name", lambda index: "Tesla T4")
    monkeypatch.setattr(torch.version, "hip", None)
    why = _runtime.gpu_blocker(torch.device("cuda", 0))
    assert why is not None and "Tesla T4" in why and "7.5" in why and "8.0" in why
    monkeypatch.setattr(_runtime, "cuda_capability", lambda index: (9, 0))
    monkeypatch.setattr(_runtime, "_cuda_name", lambda index: "NVIDIA H100")
    assert _runtime.gpu_blocker(torch.device("cuda", 0)) is None
    monkeypatch.setattr(torch.version, "hip", "6.4")  # ROCm: the references, whatever the reported capability
    why = _runtime.gpu_blocker(torch.device("cuda", 0))
    assert why is not None and "AMD" in why and "NVIDIA" in why


@pytest.mark.gpu
def test_an_unsupported_gpu_falls_back_to_the_reference_with_one_warning(monkeypatch):
    """Every public op on a GPU the kernels do not support: the reference's answer and one warning
    per op, not a failure (the capability floor is raised past this GPU's to pretend it is old)."""
    import warnings

    import flashssm
    from flashssm import _runtime
    from flashssm.ops.ssd import reference
    from tests.helpers import rel_err, ssd_inputs, to_float64

    monkeypatch.setattr(_runtime, "MIN_CAPABILITY", (99, 0))
    monkeypatch.setattr(_runtime, "_warned", set())
    kw = ssd_inputs(2, 70, 4, 16, 8, 2, dtype=torch.float32, D="h", z=True, initial_states=True, device="cuda")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(2):
            y, h = flashssm.ssd_scan(**kw, chunk_size=32, return_final_states=True)
            u = torch.randn(2, 8, 40, device="cuda")
            flashssm.selective_scan(u, torch.rand_like(u), -torch.rand(8, 4, device="cuda"),
                                    torch.randn(2, 4, 40, device="cuda"), torch.randn(2, 4, 40, device="cuda"))
            flashssm.causal_conv1d(u, torch.randn(8, 4, device="cuda"), activation="silu")
            flashssm.rmsnorm_gated(torch.randn(3, 16, device="cuda"), torch.ones(16, device="cuda"))
    y_ref, h_ref = reference.ssd_scan_sequential(**to_float64(kw))
    assert rel_err(y, y_ref) < 1e-5 and rel_err(h, h_ref) < 1e-5
    texts = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    for op in ("ssd_scan", "selective_scan", "causal_conv1d", "rmsnorm_gated"):
        mine = [t for t in texts if t.startswith(f"flashssm.{op}:")]
        assert len(mine) == 1 and "compute capability" in mine[0], (op, texts)



def test_training_past_the_gpus_shared_memory_takes_the_reference(monkeypatch):
    """A training call whose kernels would hold a 128 KB fp32 state in shared memory (dstate 256 x headdim 128) on a GPU
    that lets a block have 99 KB (Ada, consumer Blackwell) takes the reference: its output and every gradient are the
    float64 reference's. An inference call takes the kernels (its states are blocks of the headdim); a GPU that allows
    163 KB (A100) and Hopper take them for training too, as do narrower shapes."""
    from flashssm import _runtime
    from flashssm.ops import ssd
    from flashssm.ops.ssd import reference
    from tests.helpers import rel_err, ssd_inputs, to_float64

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if _runtime.device_blocker(torch.empty(0, device=device)) is not None:
        pytest.skip("no GPU and no interpreter")
    kw = ssd_inputs(1, 40, 2, 128, 256, 1, dtype=torch.float32, D="h", z=True, device=device)
    dims = lambda kw: check_ssd_scan(kw["x"], kw["dt"], kw["A"], kw["B"], kw["C"], chunk_size=32)  # noqa: E731
    assert ssd.training_blocker(dims(kw), kw["x"]) is None or device == "cuda"  # (the interpreter: Hopper's)
    for kb, blocked in ((99, True), (163, False), (227, False)):
        monkeypatch.setattr(_runtime, "shared_memory", lambda dev, on_cpu, kb=kb: kb * 1024)
        why = ssd.training_blocker(dims(kw), kw["x"])
        assert (why is not None) == blocked and (not blocked or "128 KB" in why and "99 KB" in why), why
    narrow = ssd_inputs(1, 8, 2, 64, 256, 1, dtype=torch.float32)
    assert ssd.training_blocker(dims(narrow), narrow["x"]) is None  # 64 KB at headdim 64

    monkeypatch.setattr(_runtime, "shared_memory", lambda dev, on_cpu: 99 * 1024)
    taken = []
    chunked = reference.ssd_chunked_checked
    monkeypatch.setattr(reference, "ssd_chunked_checked", lambda *a, **k: taken.append(1) or chunked(*a, **k))
    with torch.no_grad():
        ssd.ssd_scan(**kw, chunk_size=32)
    assert taken == []  # inference: the kernels
    names = ["x", "dt", "A", "B", "C", "D", "z"]
    leaves = {k: kw[k].detach().clone().requires_grad_(True) for k in names}
    y = ssd.ssd_scan(**{**kw, **leaves}, chunk_size=32)
    assert taken == [1]
    dy = torch.randn_like(y)
    grads = torch.autograd.grad(y, list(leaves.values()), dy)
    wide = {k: v.requires_grad_(True) for k, v in to_float64({k: kw[k] for k in names}).items()}
    y64 = reference.ssd_scan_sequential(**{**to_float64(kw), **wide})[0]
    grads64 = torch.autograd.grad(y64, [wide[k] for k in names], dy.double())
    assert rel_err(y, y64) < 1e-4
    for name, g, g64 in zip(names, grads, grads64):
        assert rel_err(g, g64) < 1e-3, name


def test_paths_launch_stages_follow_the_gpus_shared_memory(monkeypatch):
    """The SSD paths launch's stages: three for 16-bit inputs where a block may have 128 KB or more (Hopper, A100), two
    under it (sm_89 compiles three stages to 128 KB: Ada, consumer Blackwell), two for fp32 everywhere; chosen before
    the launch, so that torch.compile's path, which the launch's stage fallback does not reach, takes them too."""
    from flashssm import _runtime
    from flashssm.ops.ssd import backward_tiles as bt

    cuda = torch.device("cuda", 0)
    for kb, want in ((227, 3), (163, 3), (128, 3), (99, 2)):
        monkeypatch.setattr(_runtime, "shared_memory", lambda dev, on_cpu, kb=kb: kb * 1024)
        assert bt.paths_stages(2, cuda) == want and bt.paths_stages(4, cuda) == bt.PATHS_STAGES_FP32 == 2, kb
