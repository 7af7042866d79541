"""Prepared calls (`_runtime.Prepared`): an ssd_scan call without gradients whose signature an earlier call recorded
replays that call's allocations and launches, skipping the validation, dispatch and configuration. Its outputs must
be the whole path's, bit for bit, on new inputs; anything the signature does not hold must not replay."""

import contextlib
import math
import threading
import weakref

import pytest
import torch

import flashssm
import flashssm.ops.ssd as ssd_module
from flashssm import _runtime
from flashssm.ops.ssd import forward
from flashssm.ops.ssd import reference as ref
from tests.conftest import HAS_GPU
from tests.helpers import (CompiledStandIn, assert_close, assert_workspace_clean, record_calls, scan_inputs, spread,
                           ssd_inputs, to_float64)

pytestmark = pytest.mark.filterwarnings("error:flashssm:RuntimeWarning")
# The deterministic mode's values a replay test takes: a GPU's whole path gives the same bits run to run only under it
DETERMINISTIC_MODES = [True, False] if not HAS_GPU else [True]

OPTIONS = {
    "plain": {},
    "D-h,final": dict(D="h", final=True),
    "D-hp,z,bias,softplus,limit": dict(D="hp", z=True, dt_bias=True, dt_softplus=True, limit=(0.01, 0.3)),
    "init,final,fp16-states": dict(initial_states=True, final=True, state_dtype=torch.float16),
}


def _inputs(device, dtype=torch.float32, shape=(2, 45, 4, 32, 16, 2), **opts):
    kw = ssd_inputs(*shape, dtype=dtype, device=device, D=opts.get("D"), z=opts.get("z", False),
                    dt_bias=opts.get("dt_bias", False), dt_softplus=opts.get("dt_softplus", False),
                    initial_states=opts.get("initial_states", False))
    if "limit" in opts:
        kw["dt_limit"] = opts["limit"]
    call = dict(chunk_size=16 if shape[1] < 100 else 64, return_final_states=opts.get("final", False),
                state_dtype=opts.get("state_dtype"))
    return kw, call


@contextlib.contextmanager
def _no_replays():
    """Inside the block every call takes its whole path: no replay, no recording."""
    prepared = _runtime.PREPARED
    _runtime.PREPARED = False
    try:
        yield
    finally:
        _runtime.PREPARED = prepared


def _whole_path(kw, call):
    with _no_replays():
        return flashssm.ssd_scan(**kw, **call)


def _outputs(out):
    return out if isinstance(out, tuple) else (out,)


def _launches(plan) -> int:
    return sum(step[0] == _runtime._LAUNCH for step, _ in plan.steps)


def _equal(a, b) -> bool:
    return all(torch.equal(u, v) for u, v in zip(_outputs(a), _outputs(b)))


CASES = [(name, torch.float32, None) for name in OPTIONS]
if HAS_GPU:  # bf16 on the Hopper kernel's shapes (headdim 64, dstate 128): the Gluon kernel where there is one
    CASES += [(name, torch.bfloat16, (1, 300, 4, 64, 128, 1)) for name in ("plain", "D-hp,z,bias,softplus,limit")]


@pytest.mark.parametrize("name,dtype,shape", CASES, ids=[f"{n}-{str(d)[6:]}" for n, d, _ in CASES])
def test_a_repeated_signature_replays_the_whole_paths_result(name, dtype, shape, device, monkeypatch):
    """Later calls of a signature skip the validation (a spy on it sees none of them) and return, on new inputs, the
    whole path's outputs bit for bit, close to the float64 reference; the workspace is left clean."""
    opts = OPTIONS[name]
    checks = record_calls(monkeypatch, ssd_module, "check_ssd_scan")
    kw, call = _inputs(device, dtype, shape or (2, 45, 4, 32, 16, 2), **opts)
    flashssm.ssd_scan(**kw, **call)
    assert len(_runtime._prepared) == 1 and len(checks) == 1
    for _ in range(2):
        new, _ = _inputs(device, dtype, shape or (2, 45, 4, 32, 16, 2), **opts)
        before = len(checks)
        replayed = flashssm.ssd_scan(**new, **call)
        assert len(checks) == before, "a recorded signature ran the validation again"
        assert _equal(replayed, _whole_path(new, call))
        y_ref, h_ref = ref.ssd_scan_sequential(**to_float64(new))
        out = _outputs(replayed)
        assert_close(out[0], y_ref, dtype, "y")
        if call["return_final_states"]:
            assert_close(out[1], h_ref, call["state_dtype"] or dtype, "final_states")
    assert len(_runtime._prepared) == 1
    assert_workspace_clean()


def test_each_call_gets_new_outputs(device):
    kw, call = _inputs(device, **OPTIONS["D-h,final"])
    y1, h1 = flashssm.ssd_scan(**kw, **call)
    kept = y1.clone(), h1.clone()
    new, _ = _inputs(device, **OPTIONS["D-h,final"])
    y2, h2 = flashssm.ssd_scan(**new, **call)
    assert y2.data_ptr() != y1.data_ptr() and h2.data_ptr() != h1.data_ptr()
    assert torch.equal(y1, kept[0]) and torch.equal(h1, kept[1])


def _variants(kw, device):
    """Calls that differ from kw's in one thing the signature holds, each with its own recording."""
    x = kw["x"]
    strided = torch.empty(x.shape[0], x.shape[1], x.shape[3], x.shape[2], device=device).transpose(2, 3)
    strided.copy_(x)  # (the same values, other strides)
    offset = torch.empty(x.numel() + 1, device=device)[1:].view(x.shape)  # 4 bytes past a 16-byte boundary
    offset.copy_(x)
    return {
        "strides": (dict(kw, x=strided), {}),
        "alignment": (dict(kw, x=offset), {}),
        "fp16": ({k: v.half() if k in ("x", "B", "C") else v for k, v in kw.items()}, {}),
        "chunk": (kw, dict(chunk_size=32)),
        "final": (kw, dict(return_final_states=True)),
        "limit": (kw, dict(dt_limit=(0.001, 0.05))),
        "D": (dict(kw, D=torch.randn(x.shape[2], device=device)), {}),
        "state dtype": (kw, dict(return_final_states=True, state_dtype=torch.bfloat16)),
    }


def test_what_the_signature_holds_makes_a_new_recording(device):
    """Strides, alignment, dtypes, chunk size and every option are the signature's: a call that differs in one of
    them records its own call (and gives the whole path's result), never replays another's."""
    kw, call = _inputs(device)
    flashssm.ssd_scan(**kw, chunk_size=16)
    for n, (name, (vkw, vcall)) in enumerate(_variants(kw, device).items(), start=2):
        full = dict(dict(chunk_size=16), **vcall)
        first = flashssm.ssd_scan(**vkw, **full)
        assert len(_runtime._prepared) == n, name
        again = flashssm.ssd_scan(**vkw, **full)
        assert _equal(first, again) and _equal(again, _whole_path(vkw, full)), name


def test_bad_input_after_a_recording_still_gets_its_error(device):
    """An argument equal to a valid one by value but of another type (1 for True, 64.0 for 64), or not a tensor,
    gets the validation's error whatever was recorded; a list for dt_limit is accepted as the whole path accepts it."""
    kw, _ = _inputs(device)
    flashssm.ssd_scan(**kw, chunk_size=16, dt_softplus=False, return_final_states=False)
    with pytest.raises(TypeError, match="chunk_size"):
        flashssm.ssd_scan(**kw, chunk_size=16.0)
    with pytest.raises(TypeError, match="dt_softplus"):
        flashssm.ssd_scan(**kw, chunk_size=16, dt_softplus=0)
    with pytest.raises(TypeError, match="return_final_states"):
        flashssm.ssd_scan(**kw, chunk_size=16, return_final_states=0)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        flashssm.ssd_scan(**dict(kw, x=kw["x"].tolist()), chunk_size=16)
    with pytest.raises(ValueError, match="dt must have shape"):
        flashssm.ssd_scan(**dict(kw, dt=kw["dt"][:, :-1]), chunk_size=16)
    listed = flashssm.ssd_scan(**kw, chunk_size=16, dt_limit=[0.0, math.inf])
    assert torch.equal(listed, flashssm.ssd_scan(**kw, chunk_size=16))


def _grads(kw, call, dy, dfinal=None, op=flashssm.ssd_scan):
    """op(**kw, **call) with every tensor of kw a new leaf, backpropagated from dy (and dfinal into its second
    output): (its outputs, each leaf's gradient)."""
    leaves = {k: v.detach().clone().requires_grad_() for k, v in kw.items() if isinstance(v, torch.Tensor)}
    out = _outputs(op(**leaves, **{k: v for k, v in kw.items() if k not in leaves}, **call))
    assert out[0].grad_fn is not None
    seeds = [(out[0], dy)] + ([(out[1], dfinal)] if dfinal is not None else [])
    torch.autograd.backward([o for o, _ in seeds], [g for _, g in seeds])
    return out, {k: v.grad for k, v in leaves.items()}


@pytest.mark.parametrize("name", ["plain", "D-hp,z,bias,softplus,limit", "init,final,fp16-states"])
def test_a_training_call_replays_its_forward(name, device, monkeypatch):
    """A call with gradients records its forward's launches under its own key (the states stored for the backward
    among its outputs) and replays them inside the autograd function: the validation runs once, the outputs are the
    whole path's bit for bit, the gradients its own (bit for bit under the deterministic mode)."""
    opts = OPTIONS[name]
    checks = record_calls(monkeypatch, ssd_module, "check_ssd_scan")
    kw, call = _inputs(device, **opts)
    torch.use_deterministic_algorithms(True)
    try:
        dy = torch.randn_like(kw["x"])
        dfinal = torch.randn(2, 4, 32, 16, device=device) if call["return_final_states"] else None
        _grads(kw, call, dy, dfinal)
        (plan,) = [p for key, p in _runtime._prepared.items() if key[1] == "training"]
        assert len(checks) == 1 and plan.extra.chunk_size == call["chunk_size"]
        new, _ = _inputs(device, **opts)
        out, grads = _grads(new, call, dy, dfinal)
        assert len(checks) == 1, "a recorded training signature ran the validation again"
        with _no_replays():
            whole, whole_grads = _grads(new, call, dy, dfinal)
        assert _equal(out, whole)
        assert all(torch.equal(grads[k], whole_grads[k]) for k in grads), "the replayed forward's gradients differ"
    finally:
        torch.use_deterministic_algorithms(False)
    y_ref, _ = ref.ssd_scan_sequential(**to_float64(new))
    assert_close(out[0], y_ref, torch.float32, "y")


@pytest.mark.gpu
def test_gpu_a_tma_training_call_replays_its_descriptors(monkeypatch):
    """A bf16 training call whose forward takes the Gluon kernel's TMA form (late publish: 640 chains; its x, B, C and
    stored states through tensor descriptors): recorded, then replayed on new inputs with the descriptors rebuilt over
    them (no Python path: `tma_descriptors` not called), the outputs the whole path's bit for bit and the gradients
    too but for the order of the backward's atomic sums, and y against float64."""
    from flashssm.ops.ssd import forward_gluon

    monkeypatch.setattr(_runtime, "_prepared", {})
    monkeypatch.setattr(forward_gluon, "TMA", "always")
    seen = []
    real = forward_gluon.tma_descriptors
    monkeypatch.setattr(forward_gluon, "tma_descriptors", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    call = dict(chunk_size=256, return_final_states=False, state_dtype=None)
    kw = ssd_inputs(8, 1024, 80, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h")
    dy = torch.randn_like(kw["x"])
    _grads(kw, call, dy)
    assert any(d is not None for d in seen), f"the training forward did not take the TMA form: {seen}"
    assert [p for key, p in _runtime._prepared.items() if key[1] == "training" and type(p) is _runtime.Prepared], \
        _runtime._prepared
    new = ssd_inputs(8, 1024, 80, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h")
    seen.clear()
    out, grads = _grads(new, call, dy)
    assert not seen, "the second call took the whole path"
    with _no_replays():
        whole, whole_grads = _grads(new, call, dy)
    assert seen and _equal(out, whole)
    for k in grads:  # (float atomics in the backward's sums: equal but for their order, a bf16 rounding flip apart)
        assert (grads[k].float() - whole_grads[k].float()).abs().max() <= 1e-2 * whole_grads[k].float().abs().max(), k
    y_ref, _ = ref.ssd_scan_chunked(**to_float64(new), chunk_size=256)
    assert_close(out[0], y_ref, torch.bfloat16, "y")


def test_an_fp16_training_call_replays_its_scaled_states(device, monkeypatch):
    """fp16 inputs whose forward stores the tiles' scaled states (`forward.new_states`: the units at the buffer's
    tail, a view the launches take): the training forward and backward are recorded (the view a step of its own,
    `_runtime.derive`, not a tensor the forward's recording does not know) and replayed, with the whole path's
    outputs bit for bit on new inputs, and its gradients too but for dB and dC: float atomics sum those over a
    group's heads and launches, in an order that differs between runs on a GPU (seventy-first session: 2 replays of 20
    differed from the whole path, and from a second replay, by ~1e-7 to 2e-6 of the largest value), so those are
    held within a few fp16 roundings of it."""
    from flashssm.ops.ssd import backward, backward_chain, forward

    monkeypatch.setattr(backward, "DEFAULT_FORM", "chain")
    monkeypatch.setattr(backward_chain, "use_tiles", lambda dims, device, *_: True)
    stored = record_calls(monkeypatch, forward, "launch", lambda *a, **k: forward.is_scaled(k.get("states")))
    shape = (2, 48, 4, 32, 16, 2)  # (whole chunks: the stored states take no more bytes than x)
    kw, call = _inputs(device, dtype=torch.float16, shape=shape, D="h", dt_softplus=True)
    _grads(kw, call, *_incoming(kw, call, device))
    assert stored == [True], stored
    kinds = {key[1]: type(plan).__name__ for key, plan in _runtime._prepared.items()}
    assert kinds.get("training") == "Prepared", kinds
    new, _ = _inputs(device, dtype=torch.float16, shape=shape, D="h", dt_softplus=True)
    incoming = _incoming(new, call, device)
    out, grads = _grads(new, call, *incoming)
    assert stored == [True], "the replayed forward took its whole path"
    with _no_replays():
        whole, whole_grads = _grads(new, call, *incoming)
    assert _equal(out, whole)
    for k in grads:
        if k in ("B", "C") and device == "cuda":  # (the atomics' order; a mis-replayed buffer is off by far more)
            top = whole_grads[k].float().abs().max()
            assert (grads[k].float() - whole_grads[k].float()).abs().max() <= 1e-3 * top, f"d{k} of the replay differs"
        else:
            assert torch.equal(grads[k], whole_grads[k]), f"d{k} of the replayed call differs"


def _incoming(kw, call, device, dtype=None):
    dy = torch.randn(kw["x"].shape, device=device, dtype=dtype or kw["x"].dtype)
    dfinal = torch.randn(2, 4, 32, 16, device=device) if call["return_final_states"] else None
    return dy, dfinal


@pytest.mark.parametrize("deterministic", DETERMINISTIC_MODES)
@pytest.mark.parametrize("name", ["plain", "D-hp,z,bias,softplus,limit", "init,final,fp16-states"])
def test_a_training_backward_replays_its_steps(name, deterministic, device, monkeypatch):
    """The backward of a recorded training signature replays its recorded steps (allocations, launches and torch
    calls: casts, sums, fills, views): the backward's Python does not run again, and on new inputs and incoming
    gradients the gradients are the whole path's bit for bit (on the GPU under the deterministic mode, where the whole
    path gives the same bits every run; the interpreter always does)."""
    from flashssm.ops.ssd import backward

    opts = OPTIONS[name]
    calls = record_calls(monkeypatch, backward, "ssd_backward")
    kw, call = _inputs(device, **opts)
    torch.use_deterministic_algorithms(deterministic)
    try:
        _grads(kw, call, *_incoming(kw, call, device))
        assert len(calls) == 1 and len(_runtime._prepared) == 2  # the training forward's, the backward's
        new, _ = _inputs(device, **opts)
        incoming = _incoming(new, call, device)
        out, grads = _grads(new, call, *incoming)
        assert len(calls) == 1, "a recorded backward ran its Python again"
        with _no_replays():
            whole, whole_grads = _grads(new, call, *incoming)
        assert len(calls) == 2
    finally:
        torch.use_deterministic_algorithms(False)
    assert _equal(out, whole)
    for k in grads:
        assert grads[k] is not None and torch.equal(grads[k], whole_grads[k]), f"d{k} of the replayed backward differs"


def test_what_the_backward_key_holds(device, monkeypatch):
    """The gradients asked for, the incoming gradient's layout and the backward's module switches are the backward
    key's or its check's: each change runs the backward's Python again (recorded anew), with the whole path's
    gradients; what is not asked for stays None."""
    from flashssm.ops.ssd import backward, backward_chain

    calls = record_calls(monkeypatch, backward, "ssd_backward")
    kw, call = _inputs(device, **OPTIONS["D-h,final"])
    dy, dfinal = _incoming(kw, call, device)
    _grads(kw, call, dy, dfinal)

    def only(names):  # a call whose other inputs want no gradient
        leaves = {k: v.detach().clone().requires_grad_(k in names) for k, v in kw.items()}
        y, final = flashssm.ssd_scan(**leaves, **call)
        torch.autograd.backward([y, final], [dy, dfinal])
        return {k: v.grad for k, v in leaves.items()}

    with _no_replays():
        want = only(("x", "A"))
    first, again = only(("x", "A")), only(("x", "A"))
    assert len(calls) == 3  # (the first call, the whole path's, the new key's recording; its replay ran none)
    for k in kw:
        assert (want[k] is None) == (k not in ("x", "A"))
        assert want[k] is None or (torch.equal(first[k], want[k]) and torch.equal(again[k], want[k]))
    strided = torch.empty(dy.shape[:2] + dy.shape[3:] + dy.shape[2:3], device=device).transpose(2, 3)
    strided.copy_(dy)
    before = len(calls)
    got = _grads(kw, call, strided, dfinal)[1]
    assert len(calls) == before + 1
    with _no_replays():
        whole = _grads(kw, call, dy, dfinal)[1]
    assert all(torch.equal(got[k], whole[k]) for k in got)
    _grads(kw, call, dy, dfinal)
    before = len(calls)
    monkeypatch.setattr(backward_chain, "STAGES", backward_chain.STAGES + 1)  # (any switch of the backward's modules)
    _grads(kw, call, dy, dfinal)
    assert len(calls) == before + 1
    _grads(kw, call, dy, dfinal)
    assert len(calls) == before + 1


@pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU (peak memory by the caching allocator's statistics)")
@pytest.mark.parametrize("shape", [(1, 2048, 8, 64, 128, 1), (4, 4096, 8, 64, 128, 1)], ids=["sweeps", "tiles"])
def test_gpu_a_recorded_or_replayed_backward_holds_no_more_memory(shape, device):
    """The backward's recording holds no tensor (weak references) and its replay lets each made tensor go after its
    last use: the peak memory of either is at most the whole path's (the backward in sweeps, and in tiles)."""
    kw, call = _inputs(device, dtype=torch.bfloat16, shape=shape)
    dy = torch.randn_like(kw["x"])

    def peak():
        leaves = {k: v.clone().requires_grad_() for k, v in kw.items()}
        y = flashssm.ssd_scan(**leaves, **call)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        y.backward(dy)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base

    with _no_replays():
        peak()  # (compiled and warm)
        whole = peak()
    recorded = peak()
    replayed = peak()
    assert any(key[1] == "backward" for key in _runtime._prepared if isinstance(key[0], tuple))
    assert recorded <= whole and replayed <= whole, (whole, recorded, replayed)


def test_module_switches_reads_every_upper_case_global_of_a_plain_type():
    """What the training replays check (`_runtime.module_switches`): every upper-case global of a plain type, so that
    a switch added to a backward module later is checked without being listed anywhere."""
    import types

    m = types.ModuleType("tests_module_switches_probe")
    m.ALPHA, m.BETA, m._GAMMA, m.SPANS, m.lower, m.TABLE, m.KERNEL = True, 3, 0.5, (1, 2), 5, {"a": 1}, len
    first = _runtime.module_switches(m)
    assert first == ((True, 3, 0.5, (1, 2)),)
    for name, value in (("ALPHA", False), ("BETA", 4), ("_GAMMA", 0.25), ("SPANS", (1,))):
        before = _runtime.module_switches(m)
        setattr(m, name, value)
        assert _runtime.module_switches(m) != before, name
    before = _runtime.module_switches(m)
    m.lower, m.TABLE = 6, {"a": 2}  # (lower-case, and not of a plain type: not switches)
    assert _runtime.module_switches(m) == before
    one = types.ModuleType("tests_module_switches_one")
    one.ONLY = 7
    assert _runtime.module_switches(types.ModuleType("tests_module_switches_empty"), one) == ((), (7,))


def test_training_and_inference_keep_their_own_recordings(device):
    kw, _ = _inputs(device)
    leaves = {k: v.clone().requires_grad_() for k, v in kw.items()}
    y = flashssm.ssd_scan(**leaves, chunk_size=16)
    assert y.grad_fn is not None and len(_runtime._prepared) == 1
    flashssm.ssd_scan(**kw, chunk_size=16)  # recorded without gradients, under another key
    assert len(_runtime._prepared) == 2
    y = flashssm.ssd_scan(**leaves, chunk_size=16)  # the same signature, gradients asked: autograd's replay
    assert y.grad_fn is not None
    y.sum().backward()  # (the backward recorded under a key of its own)
    assert leaves["x"].grad is not None and len(_runtime._prepared) == 3
    with torch.no_grad():  # the leaves under no_grad: a plain call, which replays the inference recording
        assert flashssm.ssd_scan(**leaves, chunk_size=16).grad_fn is None
    assert len(_runtime._prepared) == 3


def test_the_deterministic_mode_records_the_training_forward_again(device):
    """Whether the training forward stores the states for the backward depends on the deterministic mode: a change
    of it makes the training call take its whole path, recorded again; the inference replay does not read it."""
    kw, _ = _inputs(device, shape=(1, 300, 4, 64, 128, 1))
    leaves = {k: v.clone().requires_grad_() for k, v in kw.items()}
    flashssm.ssd_scan(**leaves, chunk_size=64)
    (first,) = _runtime._prepared.values()
    torch.use_deterministic_algorithms(True)
    try:
        y = flashssm.ssd_scan(**leaves, chunk_size=64)
        (second,) = _runtime._prepared.values()
        assert second is not first and second.switches != first.switches
        y.sum().backward()
    finally:
        torch.use_deterministic_algorithms(False)


def test_one_tensor_as_two_inputs(device):
    """A call with B and C one tensor records nothing (its launches could not say which input an argument is); a
    recording from distinct tensors replays such a call correctly."""
    kw, _ = _inputs(device)
    flashssm.ssd_scan(**dict(kw, C=kw["B"]), chunk_size=16)
    assert not _runtime._prepared
    flashssm.ssd_scan(**kw, chunk_size=16)
    assert len(_runtime._prepared) == 1
    same = dict(kw, C=kw["B"])
    assert torch.equal(flashssm.ssd_scan(**same, chunk_size=16), _whole_path(same, dict(chunk_size=16)))


def test_a_switch_change_records_the_call_again(device, monkeypatch):
    """A module switch the forward's Python reads (here the preparation launch's) is part of what a replay checks:
    changed, the call takes the whole path and its new launches are recorded."""
    kw, _ = _inputs(device)
    flashssm.ssd_scan(**kw, chunk_size=16)
    (plan,) = _runtime._prepared.values()
    assert _launches(plan) == 2  # the preparation launch and the scan's
    monkeypatch.setattr(forward, "PRE_DECAYS", False)
    y = flashssm.ssd_scan(**kw, chunk_size=16)
    (plan,) = _runtime._prepared.values()
    assert _launches(plan) == 1
    assert torch.equal(flashssm.ssd_scan(**kw, chunk_size=16), y)


def test_off_and_under_use_reference(device, monkeypatch):
    kw, _ = _inputs(device)
    monkeypatch.setattr(_runtime, "PREPARED", False)
    flashssm.ssd_scan(**kw, chunk_size=16)
    assert not _runtime._prepared
    monkeypatch.setattr(_runtime, "PREPARED", True)
    flashssm.ssd_scan(**kw, chunk_size=16)
    launches = record_calls(monkeypatch, _runtime, "launch")
    monkeypatch.setattr(_runtime, "_warned", set())  # (the fallback warns once a process: here, whatever ran before)
    with _runtime.use_reference(), pytest.warns(RuntimeWarning) if HAS_GPU else contextlib.nullcontext():
        y = flashssm.ssd_scan(**kw, chunk_size=16)
    assert not launches
    y_ref, _ = ref.ssd_scan_sequential(**to_float64(kw))
    assert_close(y, y_ref, torch.float32, "y")


# --- the recording and the replay on stand-ins (the direct launch is a GPU's) ---------------------------------------

class _Jit:
    arg_names = ["x_ptr", "y_ptr", "n", "BLOCK"]

    def __init__(self):
        self.own = []  # Triton's own launches: (grid, args, meta)

    def __getitem__(self, grid):
        return lambda *args, **meta: self.own.append((grid, args, meta))


def _record(key, x, alloc=None, kernel=None):
    """A recording of one call of `key`: y = an allocation (`alloc()` where given), one direct launch on cuda:0 of
    (x, y, n=8, BLOCK=4)."""
    compiled = CompiledStandIn()
    with _runtime.Recording(key, (x, None), lambda: ("switch",)) as rec:
        if alloc is None:
            y = _runtime.buffer((8,), torch.float32, "cpu")
        else:
            y = rec.make(alloc, (), alloc)
        rec.launched(kernel or _Jit(), (2,), (x, y, 8), torch.device("cuda", 0), {"BLOCK": 4}, compiled)
        rec.outputs = (y, None)
    return compiled


@pytest.fixture
def cuda_looking(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(_runtime, "raw_stream", lambda index: 7)


def test_replay_launches_the_launcher_with_the_new_tensors(cuda_looking, monkeypatch):
    x = torch.zeros(8)
    compiled = _record("k", x)
    plan = _runtime.prepared("k")
    assert plan is not None
    x2 = torch.ones(8)
    y2, none = plan.run((x2, None))
    assert none is None and y2.shape == (8,)
    assert compiled.launches == [((2, 1, 1), (x2.data_ptr(), y2.data_ptr(), 8, 4), 7)]
    # a launch hook set (a profiler's): through the compiled kernel's runner, which calls it
    chain = type("Chain", (), {"calls": [print]})()
    monkeypatch.setattr(_runtime, "_knobs", type("Knobs", (), {"launch_enter_hook": chain,
                                                               "launch_exit_hook": None})())
    y3, _ = plan.run((x2, None))
    assert compiled.runner == [((2, 1, 1), (x2.data_ptr(), y3.data_ptr(), 8, 4), 7)] and len(compiled.launches) == 1


def test_replay_declines_what_it_cannot_stand_for(cuda_looking, monkeypatch):
    """A changed switch: no step, None (the caller then takes the whole path). An allocation that comes out less than
    16-byte aligned (the compiled kernel assumes 16): that launch through Triton's own, which specialises for it."""
    x = torch.zeros(8)
    kernel = _Jit()
    compiled = _record("k", x, alloc=lambda: torch.zeros(9)[1:], kernel=kernel)
    y, _ = _runtime.prepared("k").run((x, None))
    assert compiled.launches == [] and compiled.runner == []
    assert len(kernel.own) == 1 and kernel.own[0][1][:2] == (x, y) and kernel.own[0][1][2:] == (8,)
    assert kernel.own[0][2] == {"BLOCK": 4}
    _record("k", x)
    plan = _runtime.prepared("k")
    monkeypatch.setattr(_runtime, "POINTER_ADDRESSES", False)
    assert plan.run((x, None)) is None


def test_a_recording_keeps_only_its_own_threads_work():
    x = torch.zeros(8)
    with _runtime.Recording("k", (x,), tuple) as rec:
        mine = _runtime.buffer((4,), torch.float32, "cpu")
        other = []
        thread = threading.Thread(target=lambda: other.append(_runtime.buffer((4,), torch.float32, "cpu")))
        thread.start()
        thread.join()
        assert [step[0] for step in rec.steps] == [_runtime._ALLOC]
        assert rec._place(mine) == 1 and rec._place(other[0]) == -1
        with _runtime.Recording("k2", (x,), tuple) as inner:  # (one recording at a time)
            assert not inner.ok
        rec.outputs = (mine,)
    assert _runtime.prepared("k2") is None


def test_a_recording_that_cannot_be_replayed_keeps_nothing():
    """A launch tensor that is neither an input nor a recorded allocation (made by a torch op outside `ops`), an output
    that is not a recorded allocation, a call that raised: nothing kept. An allocation by layout (empty_like) is kept:
    a replay makes it like its own tensor."""
    x = torch.zeros(8)
    device = torch.device("cuda", 0)
    with _runtime.Recording("op", (x,), tuple) as rec:
        rec.launched(_Jit(), (1,), (x, x + 1, 8), device, {"BLOCK": 4}, CompiledStandIn())
        rec.outputs = (x,)
    with _runtime.Recording("out", (x,), tuple) as rec:
        y = _runtime.buffer((8,), torch.float32, "cpu")
        rec.launched(_Jit(), (1,), (x, y, 8), device, {"BLOCK": 4}, CompiledStandIn())
        rec.outputs = (y[:4],)
    with _runtime.Recording("like", (x,), tuple) as rec:
        y = _runtime.empty_like(x)
        rec.launched(_Jit(), (1,), (x, y, 8), device, {"BLOCK": 4}, CompiledStandIn())
        rec.outputs = (y,)
    with pytest.raises(RuntimeError):
        with _runtime.Recording("raised", (x,), tuple) as rec:
            y = _runtime.buffer((8,), torch.float32, "cpu")
            rec.launched(_Jit(), (1,), (x, y, 8), device, {"BLOCK": 4}, CompiledStandIn())
            rec.outputs = (y,)
            raise RuntimeError("a launch failed")
    assert all(_runtime.prepared(key) is None for key in ("op", "out", "raised"))
    assert set(_runtime._prepared) == {"op", "out", "like"}  # (refusals, `_Refused`; a call that raised: nothing)
    assert _runtime.prepared("like") is not None


def test_a_refused_key_is_not_recorded_again():
    """A key whose recording could not be replayed is kept as refused with its switches: later calls take the whole
    path without recording (no torch-function mode, no steps), until one of those switches changes."""
    x = torch.zeros(8)
    switch = ["a"]

    def call():
        with _runtime.Recording("item", (x,), lambda: tuple(switch), ops=True) as rec:
            y = x + 1
            float(y.sum().item())  # (a value read: not replayable)
            rec.outputs = (y,)
        return rec

    assert call().ok is False and _runtime.prepared("item") is None
    assert call()._mode is None and not call().ok  # (refused at once: never recorded)
    switch[0] = "b"
    first = []
    with _runtime.Recording("item", (x,), lambda: tuple(switch), ops=True) as rec:
        first.append(rec.ok)
        rec.outputs = (x + 1,)
    assert first == [True] and _runtime.prepared("item") is None


class _Kernel(_Jit):
    """A kernel Triton's own launch takes (the interpreter's way, a CPU device): each call runs `body` on its tensors
    and keeps a weak reference to each."""

    def __init__(self, body):
        super().__init__()
        self.body, self.seen = body, []

    def __getitem__(self, grid):
        def run(*args, **meta):
            self.seen.append([weakref.ref(a) for a in args if isinstance(a, torch.Tensor)])
            self.body(*args)
        return run


def _ops_call(x, scale):
    """A call with a launch and torch calls after it: (a cast of y, an element set, a sum, a view of a split)."""
    y = _runtime.buffer((8,), torch.float32, "cpu")
    _runtime.launch(scale, (1,), (x, y, 8), torch.device("cpu"), BLOCK=4)
    z = y.to(torch.float64)
    z[0] = -1.0
    return z.sum(), z.unbind(0)[3], z[2:4]


def test_torch_calls_are_replayed_in_order(monkeypatch):
    """With `ops`, a recording keeps the torch calls that make tensors as steps, in order with the launches: a replay
    computes them anew from the new inputs, and what the call's Python decided (shapes, dtypes) does not run again."""
    monkeypatch.setattr(_runtime, "direct_launch", True)
    scale = _Kernel(lambda x, y, n: y.copy_(2 * x))
    x = torch.arange(8.0)
    with _runtime.Recording("ops", (x,), tuple, ops=True) as rec:
        rec.outputs = _ops_call(x, scale)
    plan = _runtime.prepared("ops")
    assert [step[0] for step, _ in plan.steps] == [_runtime._ALLOC, _runtime._LAUNCH] + [_runtime._OP] * 5
    x2 = torch.randn(8)
    total, three, pair = plan.run((x2,))
    want = (2 * x2).double()
    want[0] = -1.0
    assert torch.equal(total, want.sum()) and torch.equal(three, want[3]) and torch.equal(pair, want[2:4])
    assert total.dtype == torch.float64 and len(scale.seen) == 2


def test_a_replay_lets_go_of_what_it_made_after_its_last_use(monkeypatch):
    """A made tensor is let go right after the last step that uses it (an output never): a replay holds no more
    memory than its call."""
    first = _Kernel(lambda x, a, n: a.copy_(x))
    second = _Kernel(lambda x, b, n: b.copy_(x + 1))
    checked = []

    def check(x, b, n):  # (first's buffer is gone by the second launch)
        checked.append(first.seen[-1][1]() is None)
        b.copy_(x)

    third = _Kernel(check)
    x = torch.zeros(8)
    with _runtime.Recording("frees", (x,), tuple, ops=True) as rec:
        a = _runtime.buffer((8,), torch.float32, "cpu")
        _runtime.launch(first, (1,), (x, a, 8), torch.device("cpu"))
        b = _runtime.buffer((8,), torch.float32, "cpu")
        _runtime.launch(second, (1,), (a, b, 8), torch.device("cpu"))
        c = _runtime.buffer((8,), torch.float32, "cpu")
        _runtime.launch(third, (1,), (b, c, 8), torch.device("cpu"))
        rec.outputs = (c,)
    (c2,) = _runtime.prepared("frees").run((torch.ones(8),))
    assert checked == [False, True] and torch.equal(c2, torch.full((8,), 2.0))


def test_a_tensor_a_launch_used_last_is_let_go_before_the_next_step(monkeypatch):
    """A made tensor whose last use is a launch is gone before the step after that launch, whatever its kind (the
    replay keeps no reference to a launch's tensors past it: the backward's last launches are followed by casts)."""
    first = _Kernel(lambda x, a, n: a.copy_(x))
    second = _Kernel(lambda a, b, n: b.copy_(a + 1))
    alive = []
    allocate = _runtime._unfilled

    def watched(*args, **kwargs):  # (each allocation asks whether first's buffer still lives)
        alive.append(first.seen[-1][1]() is not None)
        return allocate(*args, **kwargs)

    x = torch.zeros(8)
    with _runtime.Recording("launch-frees", (x,), tuple, ops=True) as rec:
        a = _runtime.buffer((8,), torch.float32, "cpu")
        _runtime.launch(first, (1,), (x, a, 8), torch.device("cpu"))
        b = _runtime.buffer((8,), torch.float32, "cpu")
        _runtime.launch(second, (1,), (a, b, 8), torch.device("cpu"))
        c = _runtime.buffer((8,), torch.float32, "cpu")
        c.copy_(b.double())
        rec.outputs = (c,)
    del a, b, c
    monkeypatch.setattr(_runtime, "_unfilled", watched)
    (c2,) = _runtime.prepared("launch-frees").run((torch.ones(8),))
    assert alive[1:] == [True, False] and torch.equal(c2, torch.full((8,), 2.0))


def test_a_recording_without_a_key_traces_under_torch_compile():
    """Under torch.compile the ops give no key, and their `Recording` must trace as a no-op without a graph break
    (it once read the thread's identity first, which Dynamo cannot trace: conv1d and the norm inside a compiled
    model broke the graph)."""
    def body(x):
        with _runtime.Recording(None, (x,), tuple, ops=True) as rec:
            y = x * 2
            rec.outputs = (y,)
        return y + 1

    torch._dynamo.reset()
    x = torch.randn(5)
    assert torch.equal(torch.compile(body, fullgraph=True, backend="eager")(x), x * 2 + 1)


def test_torch_calls_a_replay_cannot_stand_for(monkeypatch):
    """A recording with a value read from a tensor (.item()), or a torch call on a tensor that is neither an input nor
    made by a step, keeps nothing."""
    scale = _Kernel(lambda x, y, n: y.copy_(2 * x))
    x, other = torch.arange(8.0), torch.ones(8)
    with _runtime.Recording("item", (x,), tuple, ops=True) as rec:
        out = _ops_call(x, scale)
        float(out[0].item())
        rec.outputs = out
    with _runtime.Recording("other", (x,), tuple, ops=True) as rec:
        total, three, pair = _ops_call(x, scale)
        rec.outputs = (total, three, torch.cat([pair, other]))
    assert _runtime.prepared("item") is None and _runtime.prepared("other") is None
    with _runtime.Recording("fine", (x, other), tuple, ops=True) as rec:
        total, three, pair = _ops_call(x, scale)
        rec.outputs = (torch.cat([pair, other]),)
    (joined,) = _runtime.prepared("fine").run((x + 1, other - 1))
    assert torch.equal(joined, torch.tensor([6.0, 8.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]))


def test_a_replay_launches_on_the_recorded_gpu(cuda_looking, monkeypatch):
    """Inputs on another GPU than the current one: a replay makes the recorded GPU current around its launches, as the
    whole path does (Triton launches on the current device), for direct launches and for Triton's own alike."""
    entered, seen = [], []

    class _Device:
        def __init__(self, device):
            self.index = device.index if isinstance(device, torch.device) else device

        def __enter__(self):
            entered.append(self.index)

        def __exit__(self, *exc):
            entered.append(None)

    class _Own(_Jit):  # (a kernel Triton's own launch takes: its call records where the current GPU was)
        def __getitem__(self, grid):
            return lambda *args, **meta: seen.append(list(entered))

    monkeypatch.setattr(torch.cuda, "device", _Device)
    x = torch.zeros(8)
    with _runtime.Recording("own", (x,), tuple) as rec:
        y = _runtime.buffer((8,), torch.float32, "cpu")
        rec.launched(_Own(), (1,), (x, y, 8), torch.device("cuda", 1), {"BLOCK": 4}, None)
        rec.outputs = (y,)
    _runtime.prepared("own").run((x,))
    assert seen == [[1]] and entered == [1, None]
    compiled = CompiledStandIn()
    with _runtime.Recording("direct", (x,), tuple) as rec:
        y = _runtime.buffer((8,), torch.float32, "cpu")
        rec.launched(_Jit(), (1,), (x, y, 8), torch.device("cuda", 1), {"BLOCK": 4}, compiled)
        rec.outputs = (y,)
    entered.clear()
    _runtime.prepared("direct").run((x,))
    assert entered == [1, None] and len(compiled.launches) == 1


# --- selective_scan ---------------------------------------------------------------------------------------------------

SCAN_OPTIONS = {
    "plain": {},
    "D,z,bias,softplus,last": dict(D=True, z=True, delta_bias=True, delta_softplus=True, last=True),
    "groups,last": dict(ngroups=2, last=True, dim=16),  # (8 channels a group: 6 gives blocks of 2, 3x the programs)
    "channels-contiguous,D": dict(channels=True, D=True),
}


def _scan_inputs(device, dtype=torch.float32, **opts):
    kw = scan_inputs(2, opts.get("dim", 12), 70, 8, ngroups=opts.get("ngroups"), dtype=dtype, device=device,
                     D=opts.get("D", False), z=opts.get("z", False), delta_bias=opts.get("delta_bias", False),
                     delta_softplus=opts.get("delta_softplus", False))
    if opts.get("channels"):  # (the Mamba-1 mixer's layout: channels contiguous)
        for k in ("u", "delta", "z"):
            if k in kw:
                kw[k] = kw[k].transpose(1, 2).contiguous().transpose(1, 2)
    return kw, dict(return_last_state=opts.get("last", False))


@pytest.mark.parametrize("name", list(SCAN_OPTIONS))
def test_a_repeated_selective_scan_replays_the_whole_paths_result(name, device, monkeypatch):
    """selective_scan without gradients records its first call of a signature (allocations, launches, torch calls:
    the zeroed or allocated last state, B and C's views) and replays it: no validation, and on new inputs the whole
    path's outputs bit for bit, in the whole path's layout."""
    import flashssm.ops.selective_scan as scan_module
    from flashssm.ops.selective_scan import reference as scan_ref

    checks = record_calls(monkeypatch, scan_module, "check_selective_scan")
    kw, call = _scan_inputs(device, **SCAN_OPTIONS[name])
    flashssm.selective_scan(**kw, **call)
    assert len(checks) == 1 and len(_runtime._prepared) == 1
    new, _ = _scan_inputs(device, **SCAN_OPTIONS[name])
    out = flashssm.selective_scan(**new, **call)
    assert len(checks) == 1, "a recorded signature ran the validation again"
    with _no_replays():
        whole = flashssm.selective_scan(**new, **call)
    assert _equal(out, whole) and all(a.stride() == b.stride() for a, b in zip(_outputs(out), _outputs(whole)))
    want = scan_ref.selective_scan_reference(**to_float64(new), **call)
    assert_close(_outputs(out)[0], _outputs(want)[0], torch.float32, "y")


def test_selective_scan_replays_only_what_it_recorded(device, monkeypatch):
    """Another layout, dtype or flag records its own call, and so does a call with gradients (its training key);
    packed sequences and a switch change take the whole path."""
    from flashssm.ops.selective_scan import scan

    kw, call = _scan_inputs(device, D=True)
    flashssm.selective_scan(**kw)
    strided, _ = _scan_inputs(device, channels=True, D=True)
    variants = [(dict(kw, u=strided["u"]), {}), (kw, dict(return_last_state=True)), (kw, dict(delta_softplus=True)),
                ({k: v.half() if k in ("u", "B", "C") else v for k, v in kw.items()}, {})]
    for n, (vkw, vcall) in enumerate(variants, start=2):
        first = flashssm.selective_scan(**vkw, **vcall)
        assert len(_runtime._prepared) == n
        assert _equal(first, flashssm.selective_scan(**vkw, **vcall))
    leaves = {k: v.clone().requires_grad_() if k == "u" else v for k, v in kw.items()}
    y = flashssm.selective_scan(**leaves)
    assert y.grad_fn is not None and len(_runtime._prepared) == len(variants) + 2
    assert sum(key[1:] == ("training",) for key in _runtime._prepared) == 1
    cu = torch.tensor([0, 30, 70], device=device)
    packed = {k: v[:1] if v.dim() == 3 else v for k, v in kw.items()}
    flashssm.selective_scan(**packed, cu_seqlens=cu)
    flashssm.selective_scan(**{k: v.requires_grad_() if k == "u" else v for k, v in packed.items()}, cu_seqlens=cu)
    assert len(_runtime._prepared) == len(variants) + 2
    launches = record_calls(monkeypatch, _runtime, "launch")
    monkeypatch.setattr(scan, "FWD_SEGMENT", scan.FWD_SEGMENT * 2)  # (any switch of the scan's module)
    again = flashssm.selective_scan(**kw)
    assert launches, "a switch change replayed the old recording"
    with _no_replays():
        assert torch.equal(again, flashssm.selective_scan(**kw))


@pytest.mark.parametrize("name,deterministic", spread([(n,) for n in SCAN_OPTIONS], DETERMINISTIC_MODES,
                                                       list(SCAN_OPTIONS)))
def test_a_selective_scan_training_call_replays_forward_and_backward(name, deterministic, device, monkeypatch):
    """A selective_scan call with gradients records its forward (the states kept for the backward among its outputs)
    under its training key, and its backward under the backward key: later calls of the signature run neither the
    validation nor the backward's Python, and on new inputs and incoming gradients give the whole path's outputs and
    gradients bit for bit (on the GPU under the deterministic mode, where the whole path gives the same bits every
    run; the interpreter always does)."""
    import flashssm.ops.selective_scan as scan_module
    from flashssm.ops.selective_scan import reference as scan_ref
    from flashssm.ops.selective_scan import scan

    checks = record_calls(monkeypatch, scan_module, "check_selective_scan")
    backwards = record_calls(monkeypatch, scan, "scan_backward")
    kw, call = _scan_inputs(device, **SCAN_OPTIONS[name])

    def incoming(kw):
        dy = torch.randn_like(kw["u"])
        dlast = torch.randn(kw["u"].shape[0], kw["u"].shape[1], kw["A"].shape[1], device=device)
        return dy, dlast if call["return_last_state"] else None

    torch.use_deterministic_algorithms(deterministic)
    try:
        _grads(kw, call, *incoming(kw), op=flashssm.selective_scan)
        kinds = sorted(str(key[1]) for key in _runtime._prepared)
        assert len(checks) == 1 and len(backwards) == 1 and kinds == ["backward", "training"]
        new, _ = _scan_inputs(device, **SCAN_OPTIONS[name])
        seeds = incoming(new)
        out, grads = _grads(new, call, *seeds, op=flashssm.selective_scan)
        assert len(checks) == 1, "a recorded training signature ran the validation again"
        assert len(backwards) == 1, "a recorded backward ran its Python again"
        with _no_replays():
            whole, whole_grads = _grads(new, call, *seeds, op=flashssm.selective_scan)
        assert len(backwards) == 2
    finally:
        torch.use_deterministic_algorithms(False)
    assert _equal(out, whole) and all(a.stride() == b.stride() for a, b in zip(_outputs(out), _outputs(whole)))
    for k in grads:
        assert grads[k] is not None and torch.equal(grads[k], whole_grads[k]), f"d{k} of the replay differs"
    want = scan_ref.selective_scan_reference(**to_float64(new), **call)
    assert_close(_outputs(out)[0], _outputs(want)[0], torch.float32, "y")


def test_what_the_selective_scan_backward_key_holds(device, monkeypatch):
    """The gradients asked for, the incoming gradient's layout and a switch of the scan's module decide the backward's
    replay: each change runs its Python again with the whole path's gradients; what is not asked for stays None."""
    from flashssm.ops.selective_scan import scan

    backwards = record_calls(monkeypatch, scan, "scan_backward")
    kw, call = _scan_inputs(device, D=True, delta_bias=True, delta_softplus=True)
    dy = torch.randn_like(kw["u"])

    def only(names, dy=dy):  # a call whose other inputs want no gradient
        leaves = {k: v.detach().clone().requires_grad_(k in names) if isinstance(v, torch.Tensor) else v
                  for k, v in kw.items()}
        flashssm.selective_scan(**leaves).backward(dy)
        return {k: v.grad for k, v in leaves.items() if isinstance(v, torch.Tensor)}

    with _no_replays():
        want = only(("u", "A"))
    first, again = only(("u", "A")), only(("u", "A"))
    assert len(backwards) == 2  # (the whole path's, the recording's; the replay ran none)
    for k in want:
        assert (want[k] is None) == (k not in ("u", "A"))
        assert want[k] is None or (torch.equal(first[k], want[k]) and torch.equal(again[k], want[k]))
    more = only(("u", "A", "B"))
    assert len(backwards) == 3 and more["B"] is not None
    strided = torch.empty(dy.shape[0], dy.shape[2], dy.shape[1], device=device).transpose(1, 2)
    strided.copy_(dy)
    got = only(("u", "A"), dy=strided)
    assert len(backwards) == 4 and torch.equal(got["u"], want["u"])
    monkeypatch.setattr(scan, "FWD_SEGMENT", scan.FWD_SEGMENT * 2)  # (any switch of the scan's module)
    got = only(("u", "A"))
    assert len(backwards) == 5 and torch.equal(got["A"], want["A"])


def _other_layout(t):
    """A saved-tensor pack hook that keeps the values and not the layout: tensors of two or more dimensions come back
    with their last two dimensions' order in memory swapped (as an offloading hook's copy of a strided view comes back
    contiguous: `save_on_cpu` on a GPU)."""
    if t.dim() < 2:
        return t.clone()
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


def _inputs_other_layout(t):
    """`_other_layout` for the call's inputs (the leaves, which want gradients) only: the states the forward stores
    keep theirs, as a strided view's copy changes and a contiguous buffer's does not under save_on_cpu."""
    return _other_layout(t) if t.requires_grad else t


HOOK_CASES = [(op, hook) for op in ("ssd_scan", "selective_scan") for hook in ("inputs", "every-tensor")]


@pytest.mark.parametrize("op,hook,deterministic", spread(HOOK_CASES, DETERMINISTIC_MODES,
                                                          ["-".join(case) for case in HOOK_CASES]))
def test_a_backward_under_saved_tensor_hooks_that_change_layouts(op, hook, deterministic, device, monkeypatch):
    """A training call recorded without hooks, then made under a caller's saved-tensor hooks that hand saved tensors
    back in another layout (the inputs; or every one, the states the forward stores for the backward too: ssd_scan's
    in sweeps, selective_scan's checkpoints): the backward's replay must not launch with the recorded strides (its key
    holds every saved tensor's layout), and the backward reads the stored states as the forward made them (ssd_scan's
    not recomputed), so the gradients are those of the call without hooks (within 1e-5 of the largest: on the hooks'
    layouts the whole path may take another configuration) and a replay gives the whole path's bits on the hooks'
    layouts (where that path is deterministic: the interpreter, or a GPU under the deterministic mode). Before the
    fix: NaN and wrong gradients (save_on_cpu on a GPU)."""
    from flashssm.ops.ssd import backward_chain

    stored = []
    real = backward_chain.forward_states
    monkeypatch.setattr(backward_chain, "forward_states", lambda *a, **k: stored.append(real(*a, **k)) or stored[-1])
    remade = record_calls(monkeypatch, backward_chain, "entering_states")
    pack = _other_layout if hook == "every-tensor" else _inputs_other_layout
    torch.use_deterministic_algorithms(deterministic)
    try:
        if op == "ssd_scan":  # (chunks of 64 over 200 tokens: the forward stores the states on the CPU and the GPU)
            kw, call = _inputs(device, shape=(1, 200, 4, 32, 16, 1), **OPTIONS["plain"])
            dy = torch.randn_like(kw["x"])
            run = lambda: _grads(kw, call, dy)  # noqa: E731
        else:
            kw, call = _scan_inputs(device, **SCAN_OPTIONS["D,z,bias,softplus,last"])
            dy = torch.randn_like(kw["u"])
            run = lambda: _grads(kw, call, dy, op=flashssm.selective_scan)  # noqa: E731
        run()
        run()  # (recorded, then replayed without hooks)
        with _no_replays():
            _, plain = run()
        remade_plain = len(remade)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            _, got = run()
            _, again = run()  # (the hooks' layouts recorded under their own key, then replayed)
            with _no_replays():
                _, whole = run()
    finally:
        torch.use_deterministic_algorithms(False)
    if op == "ssd_scan" and not deterministic:
        assert stored and stored[0] is not None, "the forward stored no states: the test would not cover them"
        assert len(remade) == remade_plain, "the backward recomputed the states the forward had stored"
    for k in plain:
        assert torch.equal(got[k], whole[k]) and torch.equal(again[k], whole[k]), f"d{k}: the replay differs"
        assert (whole[k] - plain[k]).abs().max() <= 1e-5 * plain[k].abs().max(), f"d{k} under the hooks differs"


# --- causal_conv1d and rmsnorm_gated ----------------------------------------------------------------------------------

def _conv_call(device, channels=False, bias=True, initial=False, final=False, activation="silu"):
    x = torch.randn(2, 24, 37, device=device)
    if channels:  # (Mamba-2's xBC.transpose(1, 2): channels contiguous)
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
    kw = dict(x=x, weight=torch.randn(24, 4, device=device), bias=torch.randn(24, device=device) if bias else None,
              initial_states=torch.randn(2, 24, 3, device=device) if initial else None)
    return kw, dict(activation=activation, return_final_states=final)


def _norm_call(device, z=True, group_size=None, norm_before_gate=False):
    kw = dict(x=torch.randn(3, 5, 48, device=device), weight=torch.randn(48, device=device),
              z=torch.randn(3, 5, 48, device=device) if z else None)
    return kw, dict(eps=1e-5, group_size=group_size, norm_before_gate=norm_before_gate)


SMALL_OPS = {
    "conv1d-plain": ("causal_conv1d", lambda d: _conv_call(d)),
    "conv1d-channels,init,final": ("causal_conv1d", lambda d: _conv_call(d, channels=True, initial=True, final=True)),
    "conv1d-no-bias,no-act": ("causal_conv1d", lambda d: _conv_call(d, bias=False, activation=None)),
    "norm-gated": ("rmsnorm_gated", lambda d: _norm_call(d)),
    "norm-groups,before-gate": ("rmsnorm_gated", lambda d: _norm_call(d, group_size=16, norm_before_gate=True)),
    "norm-no-gate": ("rmsnorm_gated", lambda d: _norm_call(d, z=False)),
}


@pytest.mark.parametrize("name", list(SMALL_OPS))
def test_conv1d_and_norm_replay_their_calls(name, device, monkeypatch):
    """causal_conv1d and rmsnorm_gated without gradients record their first call of a signature and replay it: no
    validation, the whole path's outputs bit for bit on new inputs; a call with gradients takes the whole path."""
    import flashssm.ops.conv1d as conv_module
    import flashssm.ops.norm as norm_module

    op, make = SMALL_OPS[name]
    module, check = (conv_module, "check_causal_conv1d") if op == "causal_conv1d" else (norm_module,
                                                                                           "check_rmsnorm_gated")
    checks = record_calls(monkeypatch, module, check)
    fn = getattr(flashssm, op)
    kw, call = make(device)
    fn(**kw, **call)
    assert len(checks) == 1 and _runtime.prepared(next(iter(_runtime._prepared))) is not None
    new, _ = make(device)
    out = fn(**new, **call)
    assert len(checks) == 1, "a recorded signature ran the validation again"
    with _no_replays():
        whole = fn(**new, **call)
    assert _equal(out, whole) and all(a.stride() == b.stride() for a, b in zip(_outputs(out), _outputs(whole)))
    leaves = {k: v.clone().requires_grad_() if k == "x" else v for k, v in new.items()}
    y = _outputs(fn(**leaves, **call))[0]
    assert y.grad_fn is not None and len(checks) == 3
    assert torch.equal(y.detach(), _outputs(whole)[0])
