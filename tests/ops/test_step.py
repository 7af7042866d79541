"""The ssd_step and selective_scan_step kernels against the float64 references (interpreter on the CPU, GPU)."""

import itertools

import pytest
import torch

import flashssm
from flashssm.ops.selective_scan import reference as scan_ref
from flashssm.ops.ssd import reference as ssd_ref
from tests.conftest import HAS_GPU
from tests.helpers import assert_close, scan_inputs, ssd_inputs, to_float64

# the fallback-to-reference warning is an error here: these tests must run the kernels
pytestmark = pytest.mark.filterwarnings("error:flashssm:RuntimeWarning")

DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if HAS_GPU else [])
STATE_DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if HAS_GPU else [])
SSD_SHAPES = [(1, 1, 1, 1, 1), (3, 4, 32, 16, 2), (2, 6, 33, 17, 3), (2, 4, 64, 128, 4), (1, 2, 8, 256, 1)]
SSD_STEP_OPTIONS = list(itertools.product([None, "h", "hp"], [False, True], [False, True], [False, True],
                                          [False, True]))


def _ssd_step_inputs(batch, nheads, headdim, dstate, ngroups, *, dtype, device, D=None, z=False, dt_bias=False,
                     dt_softplus=False, dt_limit=False):
    kw = ssd_inputs(batch, 1, nheads, headdim, dstate, ngroups, dtype=dtype, device=device, D=D, z=z,
                    dt_bias=dt_bias, dt_softplus=dt_softplus)
    kw = {k: v[:, 0] if k in ("x", "dt", "B", "C", "z") else v for k, v in kw.items()}
    if dt_limit:
        kw["dt_limit"] = (0.004, 0.05)
    return kw


def _check_step(step, step_reference, x_name, kw, state, dtype, *, indices=None, out=None, what=""):
    """Run `step` (flashssm.ssd_step or selective_scan_step) on `state` in place and compare y and the
    new state with `step_reference` in float64. Returns (the state before, y)."""
    expected = state.double().clone()
    y_ref = step_reference(expected, **to_float64(kw), state_batch_indices=indices)
    before = state.clone()
    y = step(state, **kw, state_batch_indices=indices, out=out)
    if out is not None:
        assert y.data_ptr() == out.data_ptr()
    assert y.dtype == kw[x_name].dtype
    tol_dtype = dtype if state.dtype == torch.float32 else state.dtype
    assert_close(y, y_ref, tol_dtype, f"y {what}")
    assert_close(state, expected, tol_dtype, f"state {what}")
    return before, y


def _check_ssd_step(kw, state, dtype, **options):
    return _check_step(flashssm.ssd_step, ssd_ref.ssd_step_reference, "x", kw, state, dtype, **options)


@pytest.mark.parametrize("shape", SSD_SHAPES, ids=lambda s: "B{}-H{}-P{}-N{}-G{}".format(*s))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ssd_step(shape, dtype, device):
    kw = _ssd_step_inputs(*shape, dtype=dtype, device=device, D="hp", z=True, dt_bias=True, dt_softplus=True)
    batch, nheads, headdim, dstate, _ = shape
    state = torch.randn(batch, nheads, headdim, dstate, device=device)
    _check_ssd_step(kw, state, dtype)


@pytest.mark.parametrize("options", SSD_STEP_OPTIONS,
                         ids=[f"D{d}-z{int(z)}-bias{int(b)}-sp{int(s)}-lim{int(lim)}"
                              for d, z, b, s, lim in SSD_STEP_OPTIONS])
def test_ssd_step_options(options, device):
    D, z, dt_bias, dt_softplus, dt_limit = options
    kw = _ssd_step_inputs(3, 4, 16, 8, 2, dtype=torch.float32, device=device, D=D, z=z, dt_bias=dt_bias,
                          dt_softplus=dt_softplus, dt_limit=dt_limit)
    _check_ssd_step(kw, torch.randn(3, 4, 16, 8, device=device), torch.float32)


@pytest.mark.parametrize("state_dtype", STATE_DTYPES, ids=str)
def test_ssd_step_state_dtype(state_dtype, device):
    kw = _ssd_step_inputs(2, 4, 32, 16, 2, dtype=torch.float32, device=device, D="h", z=True)
    state = torch.randn(2, 4, 32, 16, device=device).to(state_dtype)
    _check_ssd_step(kw, state, torch.float32)
    assert state.dtype == state_dtype


def test_ssd_step_cache_rows_padding_and_strides(device):
    """A strided slice of a larger cache, rows picked by index, a padding row left untouched, y into out=."""
    kw = _ssd_step_inputs(4, 4, 16, 8, 2, dtype=torch.float32, device=device, D="h", z=True, dt_softplus=True)
    storage = torch.randn(7, 2, 4, 16, 8, device=device)
    cache = storage[:, 1]  # (7, 4, 16, 8), not contiguous
    indices = torch.tensor([5, -1, 0, 3], device=device, dtype=torch.int32)
    out = torch.full((4, 4, 16), float("nan"), device=device)
    other = storage[:, 0].clone()
    before, y = _check_ssd_step(kw, cache, torch.float32, indices=indices, out=out)
    assert (y[1] == 0).all(), "a padding row's y is zero"
    untouched = [1, 2, 4, 6]
    assert torch.equal(cache[untouched], before[untouched]), "rows nobody indexed must not change"
    assert torch.equal(storage[:, 0], other), "the cache's other slice must not change"


@pytest.mark.parametrize("ngroups", [1, 2])
def test_ssd_steps_match_scan(ngroups, device):
    """A whole sequence one token at a time equals the scan of that sequence."""
    kw = ssd_inputs(2, 19, 4, 16, 8, ngroups, dtype=torch.float32, device=device, D="hp", z=True, dt_bias=True,
                    dt_softplus=True, initial_states=True)
    kw["dt_limit"] = (0.001, 0.4)
    y_ref, h_ref = ssd_ref.ssd_scan_sequential(**to_float64(kw))
    state = kw.pop("initial_states").clone()
    ys = [flashssm.ssd_step(state, **{k: v[:, t] if k in ("x", "dt", "B", "C", "z") else v for k, v in kw.items()})
          for t in range(19)]
    assert_close(torch.stack(ys, 1), y_ref, torch.float32, "y")
    assert_close(state, h_ref, torch.float32, "state")


def test_ssd_step_nan_input_gives_nan(device):
    kw = _ssd_step_inputs(2, 2, 8, 4, 1, dtype=torch.float32, device=device)
    kw["x"][1, 0, 3] = float("nan")
    state = torch.randn(2, 2, 8, 4, device=device)
    y = flashssm.ssd_step(state, **kw)
    assert torch.isnan(y[1, 0, 3]) and torch.isnan(state[1, 0, 3]).all()
    assert not torch.isnan(y[0]).any() and not torch.isnan(state[0]).any()


# ---- selective_scan_step ----

SCAN_SHAPES = [(1, 1, 1, None), (3, 40, 16, None), (2, 24, 17, 3), (2, 64, 128, 2), (1, 8, 256, None)]


def _scan_step_inputs(batch, dim, dstate, ngroups, *, dtype, device, **options):
    kw = scan_inputs(batch, dim, 1, dstate, ngroups=ngroups, dtype=dtype, device=device, **options)
    return {k: v[..., 0] if k in ("u", "delta", "B", "C", "z") else v for k, v in kw.items()}


def _check_scan_step(kw, state, dtype, **options):
    return _check_step(flashssm.selective_scan_step, scan_ref.selective_scan_step_reference, "u", kw, state, dtype,
                       **options)


@pytest.mark.parametrize("shape", SCAN_SHAPES, ids=lambda s: "B{}-D{}-N{}-G{}".format(*s))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_selective_scan_step(shape, dtype, device):
    batch, dim, dstate, ngroups = shape
    kw = _scan_step_inputs(batch, dim, dstate, ngroups, dtype=dtype, device=device, D=True, z=True,
                           delta_bias=True, delta_softplus=True)
    _check_scan_step(kw, torch.randn(batch, dim, dstate, device=device), dtype)


@pytest.mark.parametrize("options", list(itertools.product([False, True], repeat=4)),
                         ids=lambda o: "D{}-z{}-bias{}-sp{}".format(*map(int, o)))
def test_selective_scan_step_options(options, device):
    D, z, delta_bias, delta_softplus = options
    kw = _scan_step_inputs(3, 12, 8, 2, dtype=torch.float32, device=device, D=D, z=z, delta_bias=delta_bias,
                           delta_softplus=delta_softplus)
    _check_scan_step(kw, torch.randn(3, 12, 8, device=device), torch.float32)


@pytest.mark.parametrize("state_dtype", STATE_DTYPES, ids=str)
def test_selective_scan_step_cache_rows(state_dtype, device):
    kw = _scan_step_inputs(3, 12, 8, None, dtype=torch.float32, device=device, D=True, z=True)
    storage = torch.randn(5, 12, 2, 8, device=device).to(state_dtype)
    cache = storage[:, :, 1]  # (5, 12, 8), strided
    indices = torch.tensor([2, -1, 4], device=device)
    out = torch.full((3, 12), float("nan"), device=device)
    before, y = _check_scan_step(kw, cache, torch.float32, indices=indices, out=out)
    assert (y[1] == 0).all()
    assert torch.equal(cache[[0, 1, 3]], before[[0, 1, 3]])


def test_selective_scan_steps_match_scan(device):
    kw = scan_inputs(2, 10, 21, 6, ngroups=2, dtype=torch.float32, device=device, D=True, z=True, delta_bias=True,
                     delta_softplus=True)
    y_ref, last_ref = scan_ref.selective_scan_reference(**to_float64(kw), return_last_state=True)
    state = torch.zeros(2, 10, 6, device=device)
    ys = [flashssm.selective_scan_step(state, **{k: v[..., t] if k in ("u", "delta", "B", "C", "z") else v
                                                 for k, v in kw.items()}) for t in range(21)]
    assert_close(torch.stack(ys, -1), y_ref, torch.float32, "y")
    assert_close(state, last_ref, torch.float32, "state")


# ---- CUDA graphs ----

@pytest.mark.gpu
def test_steps_capture_in_cuda_graph():
    """Both steps replay from a CUDA graph with padding rows and out=, matching eager calls."""
    device = "cuda"
    kw = _ssd_step_inputs(4, 8, 64, 128, 2, dtype=torch.bfloat16, device=device, D="h", z=True, dt_bias=True,
                          dt_softplus=True)
    cache = torch.randn(6, 8, 64, 128, device=device)
    indices = torch.tensor([3, 0, -1, 5], device=device)
    out = torch.empty(4, 8, 64, device=device, dtype=torch.bfloat16)
    skw = _scan_step_inputs(4, 96, 16, None, dtype=torch.bfloat16, device=device, D=True, z=True)
    scache = torch.randn(6, 96, 16, device=device)
    sout = torch.empty(4, 96, device=device, dtype=torch.bfloat16)
    eager, seager = cache.clone(), scache.clone()
    flashssm.ssd_step(eager, **kw, state_batch_indices=indices)  # compile outside the capture
    flashssm.selective_scan_step(seager, **skw, state_batch_indices=indices)
    eager, seager = cache.clone(), scache.clone()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        flashssm.ssd_step(cache, **kw, state_batch_indices=indices, out=out)
        flashssm.selective_scan_step(scache, **skw, state_batch_indices=indices, out=sout)
    torch.cuda.current_stream().wait_stream(stream)
    for _ in range(3):
        graph.replay()
        y = flashssm.ssd_step(eager, **kw, state_batch_indices=indices)
        sy = flashssm.selective_scan_step(seager, **skw, state_batch_indices=indices)
    torch.cuda.synchronize()
    assert torch.equal(out, y) and torch.equal(cache, eager)
    assert torch.equal(sout, sy) and torch.equal(scache, seager)



# ---- torch.compile ----

def _decode_inputs(device, dtype):
    """One decoding step's inputs as a Mamba-2 and a Mamba-1 layer hand them over: x, z, B, C, dt column slices of one
    projection (computed inside the compiled function from `proj_in` and `w_proj`), the states strided slices of a
    cache, a padding row in the cache-row indices."""
    batch, nheads, headdim, dstate, dim = 3, 4, 8, 16, 24
    width = 2 * nheads * headdim + 2 * dstate + nheads + 2 * dim
    g = torch.Generator().manual_seed(5)
    rnd = lambda *s, scale=1.0: (torch.randn(*s, generator=g) * scale).to(device)  # noqa: E731
    return dict(
        proj_in=rnd(batch, 32).to(dtype), w_proj=rnd(32, width, scale=0.2).to(dtype),
        ssd_cache=rnd(5, nheads, headdim, dstate + 3)[..., :dstate], scan_cache=rnd(5, dim + 2, dstate)[:, 1:dim + 1],
        conv_cache=rnd(5, dim, 6)[..., 2:], A=-rnd(nheads).abs() - 0.1, A1=-rnd(dim, dstate).abs() - 0.1,
        D=rnd(nheads), dt_bias=rnd(nheads, scale=0.5), conv_w=rnd(dim, 4), conv_b=rnd(dim),
        indices=torch.tensor([4, -1, 0], device=device))


def _decode(proj_in, w_proj, ssd_cache, scan_cache, conv_cache, A, A1, D, dt_bias, conv_w, conv_b, indices):
    nheads, headdim, dstate = ssd_cache.shape[1:]
    dim = scan_cache.shape[1]
    proj = proj_in @ w_proj
    sizes = [nheads * headdim, nheads * headdim, dstate, dstate, nheads, dim, dim]
    x, z, B, C, dt, u, delta = proj.split(sizes, dim=-1)
    batch = x.shape[0]
    y = flashssm.ssd_step(ssd_cache, x.unflatten(-1, (nheads, headdim)), dt, A, B[:, None], C[:, None], D=D,
                          z=z.unflatten(-1, (nheads, headdim)), dt_bias=dt_bias, dt_softplus=True,
                          state_batch_indices=indices)
    uc = flashssm.causal_conv1d_update(u, conv_cache, conv_w, conv_b, "silu", conv_state_indices=indices)
    out = torch.empty(batch, dim, dtype=u.dtype, device=u.device)
    sy = flashssm.selective_scan_step(scan_cache, uc, delta, A1, B, C, D=conv_b, delta_softplus=True,
                                      state_batch_indices=indices, out=out)
    return y, sy


# The traced launches got the SSD step's cache wrong on the H200 (torch 2.11, triton 3.6; y and the other caches right;
# seventy-second session, call 7): why the custom ops are the default. Strict: a torch that fixes it is news.
_TRACED_WRONG = pytest.mark.xfail(strict=True, reason="traced launches keep the trace's strides (seventy-second session)")


@pytest.mark.parametrize("form", ["custom_op", pytest.param("kernel", marks=_TRACED_WRONG)])
def test_steps_under_torch_compile(form, device, monkeypatch):
    """The three decoding steps traced by torch.compile (fullgraph) in each form (`step_ops.COMPILE_FORM`): y and
    every cache (strided slices, a padding row) as eager's, bit for bit (the same kernels), with the inputs column slices
    of a projection computed inside the compiled function. The custom ops (the default) run under the interpreter too;
    the traced launches only on the GPU (Dynamo cannot trace the interpreter), where they get a cache wrong."""
    from flashssm.ops import step_ops

    if form == "kernel" and not HAS_GPU:
        pytest.skip("Dynamo does not trace the interpreter's kernels")
    monkeypatch.setattr(step_ops, "COMPILE_FORM", form)
    torch._dynamo.reset()
    dtype = torch.bfloat16 if HAS_GPU else torch.float32
    kw = _decode_inputs(device, dtype)
    eager_kw = {k: v.clone() if "cache" in k else v for k, v in kw.items()}
    ran = []
    real = step_ops.ssd_step_op
    monkeypatch.setattr(step_ops, "ssd_step_op", lambda *a: ran.append(1) or real(*a))
    compiled = torch.compile(_decode, fullgraph=True, backend="inductor" if HAS_GPU else "aot_eager")
    for _ in range(2):  # (the second call: the caches already updated once)
        want = _decode(**eager_kw)
        got = compiled(**kw)
        for name, a, b in [("y", got[0], want[0]), ("scan y", got[1], want[1])] + [
                (k, kw[k], eager_kw[k]) for k in ("ssd_cache", "scan_cache", "conv_cache")]:
            assert torch.equal(a, b), name
    assert bool(ran) == (form == "custom_op")


def test_steps_compiled_check_the_cache_rows_when_they_run(device):
    """Traced, the cache-row indices have no values: the custom ops check them when they run, and a row past the cache
    raises the eager call's ValueError."""
    torch._dynamo.reset()
    kw = _decode_inputs(device, torch.float32)
    kw["indices"] = torch.tensor([4, -1, 5], device=device)
    compiled = torch.compile(_decode, fullgraph=True, backend="inductor" if HAS_GPU else "aot_eager")
    with pytest.raises(ValueError, match="state_batch_indices must be < cache_batch=5"):
        compiled(**kw)


def test_step_ops_fakes(device):
    """`torch.library.opcheck` of the decoding steps' custom ops (schema, fake, mutated arguments) with strided states."""
    from flashssm.ops import step_ops

    kw = _decode_inputs(device, torch.float32)
    sk = _ssd_step_inputs(3, 4, 8, 16, 2, dtype=torch.float32, device=device, D="hp", z=True, dt_bias=True)
    y = torch.empty(3, 4, 8, device=device)
    torch.library.opcheck(step_ops.ssd_step_op, (kw["ssd_cache"], sk["x"], sk["dt"], sk["A"], sk["B"], sk["C"],
                                                 sk["D"], sk["z"], sk["dt_bias"], True, 0.0, float("inf"),
                                                 kw["indices"], y))
    ck = _scan_step_inputs(3, 24, 16, 2, dtype=torch.float32, device=device, D=True, z=True)
    torch.library.opcheck(step_ops.selective_scan_step_op, (kw["scan_cache"], ck["u"], ck["delta"], ck["A"], ck["B"],
                                                            ck["C"], ck["D"], ck["z"], None, False, kw["indices"],
                                                            torch.empty(3, 24, device=device)))
    torch.library.opcheck(step_ops.causal_conv1d_update_op, (ck["u"], kw["conv_cache"], kw["conv_w"], kw["conv_b"],
                                                             True, kw["indices"], torch.empty(3, 24, device=device)))
