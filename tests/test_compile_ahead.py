"""`_runtime.plan_ahead`: a forward that compiles starts its backward's compiles in background threads.

The background compile and the launch that waits for it are driven with stand-ins for a @triton.jit function (as in
test_launch.py). The planners are checked against the real thing: a backward wrapper run on meta tensors must ask for
exactly the launches (kernel, grid, dtypes, scalars, constexprs) that the real backward then makes, or the kernels it
compiles ahead are not the ones used. On the GPU the whole path runs: the forward plans, the backward launches what was
compiled for it."""

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import warnings

import pytest
import torch

from flashssm import _runtime
from tests.helpers import CompiledStandIn

pytestmark = pytest.mark.compile_ahead


class _Jit:
    """A JITFunction stand-in with `warmup`, whose compile can be held back until the test releases it."""

    arg_names = ["x_ptr", "y_ptr", "n", "eps", "BLOCK"]

    def __init__(self, fail=False):
        self.compiles = []  # (how, args)
        self.release = threading.Event()
        self.fail = fail

    def warmup(self, *args, grid, **meta):
        self.release.wait(10)
        self.compiles.append(("warmup", args))
        if self.fail:
            raise RuntimeError("compile error")
        return CompiledStandIn((grid, args))

    def __getitem__(self, grid):
        def run(*args, **meta):
            self.compiles.append(("launch", args))
            return CompiledStandIn((grid, args))
        return run


def _wait_for_background_compiles():
    for job in list(_runtime._pending.values()):
        assert job.done.wait(600), "a background compile did not end"


@pytest.fixture
def fresh(monkeypatch):
    # compiles that earlier tests queued (a model's training step plans kernels its backward may not launch) would
    # count in this test's statistics: let them end first
    _wait_for_background_compiles()
    monkeypatch.setattr(_runtime, "_compiled", {})
    monkeypatch.setattr(_runtime, "_layouts", {})
    monkeypatch.setattr(_runtime, "_pending", {})
    monkeypatch.setattr(_runtime, "ahead_stats", dict.fromkeys(_runtime.ahead_stats, 0))


def _plan(kernel, x, y, n=64, block=32):
    return _runtime._compile_ahead(kernel, (4,), (x, y, n, 1e-5), torch.device("cuda", 0),
                                   {"BLOCK": block, "num_warps": 4})


def _launch(kernel, x, y, n=64, block=32, on_compile=None):
    return _runtime.cached_launch(kernel, (4,), (x, y, n, 1e-5), 0, 7, {"BLOCK": block, "num_warps": 4},
                                  on_compile)


@pytest.mark.parametrize("value, count", [(None, 1), ("", 1), ("3", 3), ("four", 1), ("0", 1), ("-2", 1)])
def test_background_thread_count(value, count, monkeypatch, recwarn):
    """Unset or empty: one thread; a positive integer: that many; anything else: one, with a warning naming it."""
    monkeypatch.setattr(_runtime, "_warned", set())
    if value is None:
        monkeypatch.delenv("FLASHSSM_COMPILE_THREADS", raising=False)
    else:
        monkeypatch.setenv("FLASHSSM_COMPILE_THREADS", value)
    assert _runtime._worker_count() == count
    bad = value not in (None, "", "3")
    said = [str(w.message) for w in recwarn if "FLASHSSM_COMPILE_THREADS" in str(w.message)]
    assert len(said) == bad and (not bad or repr(value) in said[0])


def test_a_launch_on_meta_tensors_outside_a_dry_run_raises():
    """Triton would run the kernel on address 0: only a dry run may launch on meta tensors (and queue compiles)."""
    with pytest.raises(RuntimeError, match="meta tensors"):
        _runtime.launch(_Jit(), (1,), (torch.empty(4, device="meta"), torch.empty(4, device="meta"), 4, 1e-5),
                        torch.device("meta"), BLOCK=4)


def test_a_dry_run_in_another_thread_does_not_leak_its_device(monkeypatch):
    monkeypatch.setattr(_runtime, "_can_plan", lambda device: True)
    monkeypatch.setattr(_runtime, "_cuda_sm_count", lambda index: 132)
    inside, other = threading.Event(), []

    def dry_run(x):
        inside.set()
        release.wait(10)

    release = threading.Event()
    thread = threading.Thread(target=_runtime.plan_ahead, args=(torch.device("cpu"), dry_run, torch.zeros(1)))
    thread.start()
    try:
        assert inside.wait(10)
        meta = torch.empty(1, device="meta")
        other.append((_runtime.gpu_code(meta), _runtime.sm_count(meta.device, on_cpu=4)))
    finally:
        release.set()
        thread.join(10)
    assert other == [(False, 4)]


def _job(kernel):
    (job,) = [j for j in _runtime._pending.values() if j.kernel is kernel]
    return job


def _until(condition, what):
    for _ in range(1000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_launch_waits_for_the_compile_under_way_and_uses_it(fresh):
    kernel = _Jit()
    meta_x = torch.empty(64, device="meta")
    _plan(kernel, meta_x, meta_x)
    _plan(kernel, meta_x, meta_x)  # queued once
    assert _runtime.ahead_stats["planned"] == 1 and len(_runtime._pending) == 1
    job = _job(kernel)
    _until(lambda: job.taken, "the background thread to start the compile")
    threading.Timer(0.2, kernel.release.set).start()
    x, y = torch.zeros(64), torch.zeros(64)
    compiled = _launch(kernel, x, y)  # waits for the background compile, then launches it directly
    assert [how for how, _ in kernel.compiles] == ["warmup"]
    assert kernel.compiles[0][1][:2] == (torch.float32, torch.float32)  # tensors passed as dtypes (MockTensor)
    assert compiled.launches and compiled.launches[-1][1][0] is x
    assert _runtime.ahead_stats["waited"] == 1 and _runtime.ahead_stats["compiled"] == 1
    assert _runtime._pending == {}
    _plan(kernel, meta_x, meta_x)  # compiled: nothing queued
    assert _runtime.ahead_stats["planned"] == 1


def test_a_launch_compiles_a_queued_kernel_itself_while_the_thread_is_busy(fresh, monkeypatch):
    monkeypatch.setattr(_runtime, "_worker_count", lambda: 1)
    busy, queued = _Jit(), _Jit()
    meta_x = torch.empty(64, device="meta")
    _plan(busy, meta_x, meta_x)
    job = _job(busy)
    _until(lambda: job.taken, "the background thread to start the first compile")
    _plan(queued, meta_x, meta_x)
    try:
        _launch(queued, torch.zeros(64), torch.zeros(64))  # not started: compiled here, without waiting
        assert [how for how, _ in queued.compiles] == ["launch"] and _runtime.ahead_stats["taken"] == 1
    finally:
        busy.release.set()
        queued.release.set()
    _until(lambda: _runtime._pending == {}, "the queue to drain")
    assert [how for how, _ in queued.compiles] == ["launch"]  # the thread skips what a launch took
    assert _runtime.ahead_stats["compiled"] == 1 and _runtime.ahead_stats["waited"] == 0


def test_a_different_call_compiles_its_own(fresh):
    kernel = _Jit()
    kernel.release.set()
    _plan(kernel, torch.empty(64, device="meta"), torch.empty(64, device="meta"), n=32)
    _until(lambda: _runtime._pending == {}, "the background compile")
    _launch(kernel, torch.zeros(64), torch.zeros(64), n=64)  # another scalar: not the planned kernel
    assert [how for how, _ in kernel.compiles] == ["warmup", "launch"]
    _launch(kernel, torch.zeros(64), torch.zeros(64), n=32)  # the planned one
    assert len(kernel.compiles) == 2


def test_a_failed_background_compile_leaves_the_launch_to_compile(fresh):
    kernel = _Jit(fail=True)
    kernel.release.set()
    _plan(kernel, torch.empty(64, device="meta"), torch.empty(64, device="meta"))
    _until(lambda: _runtime._pending == {}, "the background compile")
    _launch(kernel, torch.zeros(64), torch.zeros(64))
    assert [how for how, _ in kernel.compiles] == ["warmup", "launch"]
    assert _runtime.ahead_stats["failed"] == 1 and _runtime._pending == {}


_EXIT_SCRIPT = """
import sys, threading, time, torch
from flashssm import _runtime
from tests.test_compile_ahead import _Jit, _plan

class Logged(_Jit):
    def __init__(self, name, seconds):
        super().__init__()
        self.name, self.seconds = name, seconds
        self.started = threading.Event()
        self.release.set()

    def warmup(self, *args, grid, **meta):
        print(self.name + " started", flush=True)
        self.started.set()
        time.sleep(self.seconds)  # (Triton's compile, in C++ for most of it)
        print(self.name + " compiled", flush=True)
        return super().warmup(*args, grid=grid, **meta)

_runtime.EXIT_NOTICE_S = float(sys.argv[1])
busy, queued = Logged("busy", 1.0), Logged("queued", 0.0)
x = torch.empty(64, device="meta")
_plan(busy, x, x)
assert busy.started.wait(60)
_plan(queued, x, x)
print("script ends", flush=True)
"""


@pytest.mark.parametrize("notice_after", [0.2, 5.0])
def test_the_exit_waits_for_the_compile_under_way_and_skips_the_queue(notice_after):
    """A script that ends while the background thread compiles: the compile under way finishes before Python
    finalises (a daemon thread torn down inside Triton's C++ aborted the process on the GPU machine), the queued ones
    never start, and a wait longer than `EXIT_NOTICE_S` says what it waits for."""
    proc = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, str(notice_after)], capture_output=True, text=True,
                          timeout=120, cwd=pathlib.Path(__file__).parent.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["busy started", "script ends", "busy compiled"], proc.stdout
    assert "queued" not in proc.stdout
    assert ("finishing a kernel compile" in proc.stderr) == (notice_after < 1.0), proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_compiles_for_itself(fresh):
    """A child forked while a compile is under way has no background thread: its launch of that kernel compiles it
    (without the reset after fork it would wait for a compile that never ends in the child)."""
    kernel = _Jit()
    x = torch.empty(64, device="meta")
    _plan(kernel, x, x)
    _until(lambda: _job(kernel).taken, "the compile to start")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # (fork with threads running)
            pid = os.fork()
        if pid == 0:  # the child: five seconds to launch, or the alarm ends it
            try:
                signal.alarm(5)
                _launch(kernel, torch.zeros(64), torch.zeros(64))
                os._exit(0 if [how for how, _ in kernel.compiles] == ["launch"] else 3)
            finally:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
    finally:
        kernel.release.set()
    assert os.waitstatus_to_exitcode(status) == 0
    _until(lambda: _runtime._pending == {}, "the parent's compile")
    assert [how for how, _ in kernel.compiles] == ["warmup"]


def test_a_planner_runs_once_before_the_first_compile_and_its_errors_stay_inside(fresh):
    kernel = _Jit()
    calls = []

    def planner():
        calls.append(len(kernel.compiles))
        raise ValueError("planner bug")

    _launch(kernel, torch.zeros(64), torch.zeros(64), on_compile=planner)
    _launch(kernel, torch.zeros(64), torch.zeros(64), n=65, on_compile=planner)  # compiles again: planner ran
    _launch(kernel, torch.zeros(64), torch.zeros(64), on_compile=lambda: calls.append("compiled"))  # no compile
    assert calls == [0] and len(kernel.compiles) == 2
    assert _runtime.ahead_stats["planner_failed"] == 1 and isinstance(_runtime.ahead_errors[0], ValueError)


def test_plan_ahead_runs_the_dry_run_on_meta_tensors_of_the_same_layout(fresh, monkeypatch):
    monkeypatch.setattr(_runtime, "_can_plan", lambda device: True)
    monkeypatch.setattr(_runtime, "_cuda_sm_count", lambda index: 132)
    x = torch.zeros(3, 8, 5).transpose(1, 2)
    seen = []

    def dry_run(a, b, c):
        seen.append((a.device.type, a.shape, a.stride(), a.dtype, b, c, _runtime.sm_count(a.device, on_cpu=4),
                     _runtime.gpu_code(a)))

    _runtime.plan_ahead(torch.device("cpu"), dry_run, x, None, 7)
    assert seen == [("meta", x.shape, x.stride(), x.dtype, None, 7, 132, True)]
    assert _runtime._planning_device() is None and not _runtime.gpu_code(torch.empty(1, device="meta"))
    monkeypatch.setattr(_runtime, "compile_ahead", False)
    monkeypatch.undo()
    _runtime.plan_ahead(torch.device("cpu"), dry_run, x, None, 7)  # not on CUDA: nothing to plan
    assert len(seen) == 1


# --- the planners against the real launches ------------------------------------------------------------------------

def _record(kernel, grid, args, meta, on_cpu):
    n = _runtime._pointer_prefix(kernel, args)
    meta = dict(meta)
    if on_cpu:  # the GPU-only choices (the dry run plans for a GPU)
        for name in ("FAST", "PREFETCH", "maxnreg"):
            meta.pop(name, None)
    return (getattr(kernel, "__name__", repr(kernel)), tuple(grid), tuple(t.dtype for t in args[:n]), args[n:],
            tuple(sorted(meta.items())))


def _planned_and_launched(monkeypatch, device, run_backward, planner):
    """(what the planner asks to compile, what the backward launches)."""
    on_cpu = device.type != "cuda"
    if on_cpu:
        monkeypatch.setattr(_runtime, "_can_plan", lambda device: True)
        monkeypatch.setattr(_runtime, "_cuda_sm_count", lambda index: 4)  # the selective scan's on_cpu count
        monkeypatch.setattr(_runtime, "_cuda_shared_memory", lambda index: 227 * 1024)  # (a Hopper's)
    planned, launched = [], []
    monkeypatch.setattr(_runtime, "_compile_ahead",
                        lambda kernel, grid, args, dev, meta: planned.append(_record(kernel, grid, args, meta, on_cpu)))
    planner()
    real = _runtime.launch

    def recording(kernel, grid, args, dev, **meta):
        launched.append(_record(kernel, grid, args, meta, on_cpu))
        return real(kernel, grid, args, dev, **meta)

    monkeypatch.setattr(_runtime, "launch", recording)
    run_backward()
    return planned, launched


def _keep_planners(monkeypatch) -> list:
    """The planners the forwards' `compiling_ahead` blocks are given, kept (not run) in a list."""
    planners = []

    @contextlib.contextmanager
    def keep(planner):
        planners.append(planner)
        yield

    monkeypatch.setattr(_runtime, "compiling_ahead", keep)
    return planners


SCAN_CASES = {
    "dense": dict(shape=(2, 10, 37, 6, None)),
    "groups-channels-last": dict(shape=(2, 8, 40, 4, 2), channels_last=True),
    "no-options-last-state": dict(shape=(1, 6, 33, 5, None), opts=(False, False, False, False), last=True),
    "packed": dict(shape=(1, 8, 45, 5, None), lengths=[5, 0, 19, 21], last=True),
    "deterministic": dict(shape=(2, 6, 30, 4, None), deterministic=True),
}


@pytest.mark.parametrize("case", list(SCAN_CASES))
def test_selective_scan_backward_planner_plans_the_backward_launches(case, device, monkeypatch):
    from flashssm.ops.selective_scan import scan
    from tests.ops.test_selective_scan import _inputs

    c = SCAN_CASES[case]
    kw = _inputs(c["shape"], torch.float32, device, c.get("opts", (True, True, True, True)))
    if c.get("channels_last"):
        for k in ("u", "delta", "z"):
            if kw.get(k) is not None:
                kw[k] = kw[k].transpose(1, 2).contiguous().transpose(1, 2)
    args = [kw["u"], kw["delta"], kw["A"], kw["B"], kw["C"], kw.get("D"), kw.get("z"), kw.get("delta_bias"),
            kw.get("delta_softplus", False)]
    offsets = seq_index = num_seqs = None
    if "lengths" in c:
        lengths = c["lengths"]
        offsets = tuple(sum(lengths[:i]) for i in range(len(lengths) + 1))
        seq_index = scan.sequence_index(torch.tensor(offsets, dtype=torch.int32, device=device), kw["u"].shape[2])
        num_seqs = len(lengths)
    last = c.get("last", False)
    det = c.get("deterministic", False)
    ckpt_tile = 16
    y, last_state, ckpt = scan.scan_forward(*args, seq_index=seq_index, num_seqs=num_seqs, return_last_state=last,
                                            ckpt_tile=ckpt_tile, offsets=offsets)
    dy = torch.randn_like(y)
    dlast = torch.randn_like(last_state) if last else None
    planner = lambda: scan.plan_backward(*args, ckpt_tile=ckpt_tile, seq_index=seq_index,  # noqa: E731
                                         num_seqs=num_seqs, return_last_state=last, offsets=offsets,
                                         deterministic=det)
    planned, launched = _planned_and_launched(
        monkeypatch, torch.device(device),
        lambda: scan.scan_backward(dy, dlast, *args, ckpt=ckpt, ckpt_tile=ckpt_tile, seq_index=seq_index,
                                   deterministic=det, offsets=offsets),
        planner)
    assert launched and any(r[0] == "_scan_bwd_kernel" for r in launched), launched
    assert planned == launched


SSD_CASES = {
    "options": dict(shape=(2, 70, 4, 16, 16, 2), opts=dict(D="hp", z=True, dt_bias=True, dt_softplus=True)),
    "init-final": dict(shape=(1, 50, 2, 16, 16, 1), opts=dict(D="h", initial_states=True), final=True),
    "packed": dict(shape=(1, 90, 2, 16, 16, 1), opts=dict(z=True), lengths=[30, 0, 1, 59], final=True),
    "deterministic": dict(shape=(2, 40, 2, 16, 16, 1), opts=dict(D="h"), deterministic=True),
    "few-grads": dict(shape=(1, 40, 2, 16, 16, 1), opts=dict(D="h", z=True), frozen=("x", "B", "z")),
}


@pytest.mark.parametrize("case, sm_count", [("options", 4), ("options", 132), ("init-final", 132), ("packed", 4),
                                            ("deterministic", 4), ("few-grads", 4)])
def test_ssd_backward_planner_plans_the_backward_launches(case, sm_count, device, monkeypatch):
    """The SSD training forward's planner (`backward.plan_backward`, made in `SSDScanFunction.forward`) against
    the launches its backward makes: the chain form with its tiles (many chunks a GPU's SMs: sm_count 4, with the
    options' dt launches and the recompute: ten kernels) and without (132), packed sequences, deterministic mode (the
    parallel form), gradients not wanted."""
    import flashssm
    from tests.helpers import ssd_inputs

    c = SSD_CASES[case]
    batch, seqlen, nheads, headdim, dstate, ngroups = c["shape"]
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=torch.float32, device=device,
                    num_seqs=len(c["lengths"]) if "lengths" in c else None, **c["opts"])
    if "lengths" in c:
        offsets = [sum(c["lengths"][:i]) for i in range(len(c["lengths"]) + 1)]
        kw["cu_seqlens"] = torch.tensor(offsets, dtype=torch.int32, device=device)
    on_cpu = torch.device(device).type != "cuda"
    if on_cpu:  # the dry run plans for a GPU: give the real run the same SM count and an Ampere's capability
        monkeypatch.setattr(_runtime, "sm_count", lambda device, *, on_cpu: sm_count)
        monkeypatch.setattr(_runtime, "cuda_capability", lambda index: (8, 0))
    if c.get("deterministic"):
        monkeypatch.setattr(torch, "are_deterministic_algorithms_enabled", lambda: True)
    for name, t in kw.items():
        if isinstance(t, torch.Tensor) and t.is_floating_point() and name not in c.get("frozen", ()):
            t.requires_grad_()
    planners = _keep_planners(monkeypatch)
    out = flashssm.ssd_scan(**kw, chunk_size=16, return_final_states=c.get("final", False))
    y = out[0] if c.get("final") else out
    assert len(planners) == 1
    leaves = [t for t in kw.values() if isinstance(t, torch.Tensor) and t.requires_grad]
    planned, launched = _planned_and_launched(
        monkeypatch, torch.device(device),
        lambda: torch.autograd.grad((y * torch.randn_like(y)).sum(), leaves), planners[0])
    assert launched, "the backward launched nothing"
    assert planned == launched


def _loss(t):
    """A loss whose gradient is random and in t's layout (a plain sum's would be an expanded tensor of ones)."""
    return (t * torch.randn_like(t)).sum()


@pytest.mark.parametrize("case", ["tokens", "channels-silu-final", "packed-init"])
def test_conv1d_backward_planner_plans_the_backward_launches(case, device, monkeypatch):
    """causal_conv1d's training forward's planner (`conv.plan_backward`) against its backward's launches: both
    layouts, the SiLU, the final states' gradient, packed sequences with initial states."""
    import flashssm

    batch, dim, seqlen = (2, 24, 40) if case != "packed-init" else (1, 24, 50)
    x = torch.randn(batch, dim, seqlen, device=device)
    if case == "channels-silu-final":
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
    weight, bias = torch.randn(dim, 4, device=device), torch.randn(dim, device=device)
    kw = {}
    if case == "packed-init":
        kw["cu_seqlens"] = torch.tensor([0, 20, 20, 50], dtype=torch.int32, device=device)
        kw["initial_states"] = torch.randn(3, dim, 3, device=device).requires_grad_()
    for t in (x, weight, bias):
        t.requires_grad_()
    planners = _keep_planners(monkeypatch)
    final = case == "channels-silu-final"
    out = flashssm.causal_conv1d(x, weight, bias, activation="silu" if final else None, return_final_states=final,
                                 **kw)
    y = out[0] if final else out
    assert len(planners) == 1
    leaves = [x, weight, bias] + ([kw["initial_states"]] if "initial_states" in kw else [])
    planned, launched = _planned_and_launched(
        monkeypatch, torch.device(device),
        lambda: torch.autograd.grad(_loss(y) + (_loss(out[1]) if final else 0), leaves),
        planners[0])
    assert launched and planned == launched


@pytest.mark.parametrize("case", ["gated-groups", "plain", "wide-group"])
def test_rmsnorm_backward_planner_plans_the_backward_launches(case, device, monkeypatch):
    """rmsnorm_gated's training forward's planner (`rmsnorm.plan_backward`) against its backward's launch: a gate and
    groups, no gate, a group wide enough for the two-sweep kernel."""
    import flashssm
    from flashssm.ops.norm import rmsnorm

    dim = 64
    lead = (3, 5)
    if case == "wide-group":
        monkeypatch.setattr(rmsnorm, "WIDE_GROUP", 32)
        # (its grid: min(row blocks, programs a SM x SMs); one row a block, so at most 4 rows here, where the CPU's
        # launch counts one SM and the dry run the GPU's 132)
        lead = (2, 2)
    x = torch.randn(*lead, dim, device=device, requires_grad=True)
    weight = torch.randn(dim, device=device, requires_grad=True)
    z = torch.randn(*lead, dim, device=device, requires_grad=True) if case == "gated-groups" else None
    planners = _keep_planners(monkeypatch)
    y = flashssm.rmsnorm_gated(x, weight, z, group_size=16 if case == "gated-groups" else dim)
    assert len(planners) == 1
    leaves = [x, weight] + ([z] if z is not None else [])
    planned, launched = _planned_and_launched(
        monkeypatch, torch.device(device), lambda: torch.autograd.grad((y * torch.randn_like(y)).sum(), leaves),
        planners[0])
    assert launched and planned == launched

@pytest.mark.parametrize("with_ds", [True, False], ids=["ds", "no-ds"])
def test_add_rmsnorm_planner_plans_the_backward_launch(with_ds, device, monkeypatch):
    """add_rmsnorm's training forward's planner (`rmsnorm.plan_add_backward`) against its backward's launch: a 16-bit
    hidden into an fp32 stream, the norm written in the hidden's dtype, with and without a gradient reaching the sum."""
    from flashssm.ops.norm import add_rmsnorm

    hidden = torch.randn(2, 2, 64, device=device, dtype=torch.float16, requires_grad=True)
    residual = torch.randn(2, 2, 64, device=device, requires_grad=True)
    weight = torch.randn(64, device=device, requires_grad=True)
    planners = _keep_planners(monkeypatch)
    y, s = add_rmsnorm(hidden, residual, weight, out_dtype=torch.float16)
    assert len(planners) == 1
    loss = lambda: (y.float() * torch.randn_like(y, dtype=torch.float32)).sum() + (  # noqa: E731
        (s * torch.randn_like(s)).sum() if with_ds else 0)
    planned, launched = _planned_and_launched(
        monkeypatch, torch.device(device), lambda: torch.autograd.grad(loss(), [hidden, residual, weight]),
        planners[0])
    assert launched and planned == launched


def _after_forward() -> set:
    """Wait for the background compiles a training forward queued; the keys compiled then."""
    stats = _runtime.ahead_stats
    assert stats["planned"] >= 1 and stats["planner_failed"] == 0, _runtime.ahead_errors
    _wait_for_background_compiles()
    assert stats["failed"] == 0 and stats["compiled"] == stats["planned"], (stats, _runtime.ahead_errors)
    return set(_runtime._compiled)


def _entries(kernel) -> int:
    return sum(key[0] == id(kernel) for key in _runtime._compiled)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["dense", "channels-last-packed"])
def test_gpu_selective_scan_backward_compiled_ahead(case, fresh):
    """The public path on the GPU: the training forward (direct-launch table emptied, so its launches compile and its
    planner runs) queues the backward's kernel; the backward then launches that very entry (no second one for its
    kernel) and its gradients match the float64 reference."""
    from flashssm import selective_scan
    from flashssm.ops.selective_scan import scan
    from tests.ops.test_selective_scan import _check_grads, _grads_ref, _inputs

    cu = None
    kw = _inputs((2, 64, 300, 16, None) if case == "dense" else (1, 64, 300, 16, None), torch.bfloat16, "cuda")
    if case != "dense":
        for k in ("u", "delta", "z"):
            kw[k] = kw[k].transpose(1, 2).contiguous().transpose(1, 2)
        cu = torch.tensor([0, 100, 101, 300], dtype=torch.int32, device="cuda")
    leaves = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    y, last = selective_scan(**leaves, return_last_state=True, cu_seqlens=cu)
    before = _after_forward()
    assert _entries(scan._scan_bwd_kernel) == 1
    dy = torch.randn_like(y)
    names = [k for k, v in leaves.items() if isinstance(v, torch.Tensor) and v.requires_grad]
    grads = torch.autograd.grad((y * dy).sum(), [leaves[k] for k in names])
    assert set(_runtime._compiled) == before  # every launch of the backward was compiled ahead
    _, _, g_ref = _grads_ref(kw, dy, torch.zeros_like(last), cu_seqlens=cu)
    _check_grads(dict(zip(names, grads)), g_ref, torch.bfloat16, f"{case}: ")


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["tiles", "small", "packed"])
def test_gpu_ssd_backward_compiled_ahead(case, fresh, monkeypatch):
    """The SSD training forward (direct-launch table emptied) queues every kernel of its backward: the chain form with
    its tiles (many chunks a SM), without them, and packed sequences; the backward then compiles nothing new, and its
    gradients equal (within the atomics' reordering) those of a call with compile-ahead off."""
    import flashssm
    from tests.helpers import rel_err, ssd_inputs

    shape = {"tiles": (4, 4096, 24, 64, 128, 1), "small": (1, 2048, 8, 64, 128, 1), "packed": (1, 4096, 8, 64, 64, 2)}
    batch, seqlen, nheads, headdim, dstate, ngroups = shape[case]
    cu = None
    if case == "packed":
        cu = torch.tensor([0, 1000, 1001, 2500, 4096], dtype=torch.int32, device="cuda")
    kw = ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, dtype=torch.bfloat16, device="cuda", D="h",
                    z=True, dt_bias=True, dt_softplus=True)
    dy = torch.randn_like(kw["x"])

    def grads():
        leaves = {k: v.detach().clone().requires_grad_() if torch.is_tensor(v) and v.is_floating_point() else v
                  for k, v in kw.items()}
        y = flashssm.ssd_scan(**leaves, chunk_size=256, cu_seqlens=cu)
        return y, [k for k, v in leaves.items() if torch.is_tensor(v) and v.requires_grad], leaves

    y, names, leaves = grads()
    before = _after_forward()
    got = torch.autograd.grad((y.float() * dy).sum(), [leaves[k] for k in names])
    assert set(_runtime._compiled) == before  # every launch of the backward was compiled ahead
    monkeypatch.setattr(_runtime, "compile_ahead", False)
    y2, _, leaves2 = grads()
    want = torch.autograd.grad((y2.float() * dy).sum(), [leaves2[k] for k in names])
    for name, g, w in zip(names, got, want):
        assert rel_err(g, w) <= 1e-2, f"d{name}: {rel_err(g, w):.2e}"
