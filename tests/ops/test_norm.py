"""rmsnorm_gated forward and backward against the float64 reference."""

import itertools

import pytest
import torch

import flashssm
from flashssm.ops.norm import reference as ref
from tests.conftest import HAS_GPU
from tests.helpers import assert_close

pytestmark = pytest.mark.filterwarnings("error:flashssm:RuntimeWarning")

DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if HAS_GPU else [])
# (leading shape, dim, group_size): one row, odd rows, many groups, non-power-of-two groups. (Groups of one
# channel are left out: h / |h| has a zero gradient that fp32 can only resolve to its rounding noise.)
SHAPES = [((1,), 8, None), ((3, 5), 48, None), ((7,), 48, 16), ((2, 3), 96, 48), ((33,), 100, 20), ((4,), 320, 4)]


def check(shape, dim, group_size, dtype, device, *, z=True, norm_before_gate=False, eps=1e-6, strided=False):
    lead = shape
    if strided:  # rows with a gap between them, channels contiguous
        x = torch.randn(*lead, 2 * dim, device=device, dtype=dtype)[..., :dim]
    else:
        x = torch.randn(*lead, dim, device=device, dtype=dtype)
    kw = dict(x=x, weight=1 + 0.3 * torch.randn(dim, device=device))
    if z:
        kw["z"] = torch.randn(*lead, dim, device=device, dtype=dtype)
    leaves = {k: v.detach().clone().requires_grad_() for k, v in kw.items()}
    leaves64 = {k: v.detach().double().requires_grad_() for k, v in kw.items()}
    opts = dict(eps=eps, group_size=group_size, norm_before_gate=norm_before_gate)
    y = flashssm.rmsnorm_gated(**leaves, **opts)
    y64 = ref.rmsnorm_gated_reference(**leaves64, **opts)
    assert y.dtype == dtype and y.shape == x.shape
    assert_close(y, y64, dtype, "y")
    dy = torch.randn_like(y64)
    (y.double() * dy).sum().backward()
    (y64 * dy).sum().backward()
    for name in kw:
        assert_close(leaves[name].grad, leaves64[name].grad, dtype, f"d{name}")


@pytest.mark.parametrize("norm_before_gate", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{'x'.join(map(str, s[0]))}-D{s[1]}-G{s[2]}")
def test_rmsnorm_gated(shape, norm_before_gate, device):
    check(*shape, torch.float32, device, norm_before_gate=norm_before_gate)


@pytest.mark.parametrize("z, norm_before_gate, strided", list(itertools.product([False, True], repeat=3)))
def test_rmsnorm_options(z, norm_before_gate, strided, device):
    check((5, 3), 64, 32, torch.float32, device, z=z, norm_before_gate=norm_before_gate, strided=strided, eps=1e-3)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rmsnorm_dtypes(dtype, device):
    check((6,), 160, 80, dtype, device)


@pytest.mark.parametrize("split, vector", [(True, 4), (True, 0), (False, 4), (False, 0)])
@pytest.mark.parametrize("z, norm_before_gate", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("shape", [((7,), 48, 16), ((33,), 100, 20), ((4,), 320, None), ((3,), 3, None)],
                         ids=lambda s: f"{'x'.join(map(str, s[0]))}-D{s[1]}-G{s[2]}")
def test_rmsnorm_tile_switches(shape, z, norm_before_gate, split, vector, device, monkeypatch):
    """Every value of the one-tile kernels' layout switches, forced (their rules pick per call): the group in two
    power-of-two tiles (16 + 4, 256 + 64 and 2 + 1 columns here) or one, and each load 4 elements a thread or
    Triton's choice."""
    from flashssm.ops.norm import rmsnorm

    monkeypatch.setattr(rmsnorm, "SPLIT_TILE", split)
    monkeypatch.setattr(rmsnorm, "LOAD_VECTOR", vector)
    check(*shape, torch.float32, device, z=z, norm_before_gate=norm_before_gate)


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("wide", [False, True], ids=["tile", "two-sweep"])
@pytest.mark.parametrize("z", [False, True])
def test_rmsnorm_pipelined_backward(stages, wide, z, device, monkeypatch):
    """The backward kernels with their loads pipelined (TILE_STAGES, WIDE_STAGES: Triton's cp.async stages on the GPU;
    the interpreter runs the same loops in order), over several rows a program and split tiles."""
    from flashssm.ops.norm import rmsnorm

    monkeypatch.setattr(rmsnorm, "TILE_STAGES", stages)
    monkeypatch.setattr(rmsnorm, "WIDE_STAGES", stages)
    monkeypatch.setattr(rmsnorm, "SPLIT_TILE", True)
    monkeypatch.setattr(rmsnorm, "SPLITS_PER_SM", 1)  # (more rows a program than programs)
    if wide:
        monkeypatch.setattr(rmsnorm, "WIDE_GROUP", 8)
        monkeypatch.setattr(rmsnorm, "WIDE_BLOCKS", (1, 16, 4))
    check((400 if device == "cuda" else 37,), 96, 48, torch.float32, device, z=z)  # (3-4 rows a program on 132 SMs)


def test_tile_rules():
    """What the rules pick: two tiles only where the group is not a power of two and its rest is narrower, and only
    for the add's backward by default; VEC 0 only for an ungated forward whose tensors share one element size."""
    from flashssm.ops.norm import rmsnorm

    assert [rmsnorm.split_tile(g) for g in (2560, 5120, 3000, 100, 3, 4096, 48)] == [
        (2048, 512), (4096, 1024), (2048, 1024), (128, 0), (2, 1), (4096, 0), (32, 16)]
    assert rmsnorm.split_tile(2560, False) == (4096, 0)
    f32, bf16 = torch.empty(1), torch.empty(1, dtype=torch.bfloat16)
    assert rmsnorm.load_vector(4096, True, False, bf16, bf16) == 0
    assert rmsnorm.load_vector(4096, True, False, f32, bf16) == 4
    assert rmsnorm.load_vector(4096, True, True, bf16, bf16) == 4
    assert rmsnorm.load_vector(2, False, False) == 2


def test_rmsnorm_zero_rows_stay_finite(device):
    """A row of zeros normalises to zeros (eps keeps it finite), in the output and the gradients."""
    x = torch.zeros(2, 32, device=device, requires_grad=True)
    y = flashssm.rmsnorm_gated(x, torch.ones(32, device=device))
    y.sum().backward()
    assert torch.equal(y, torch.zeros_like(y)) and torch.isfinite(x.grad).all()


def test_rmsnorm_nan_stays_in_its_group(device):
    x = torch.randn(3, 64, device=device)
    x[1, 5] = float("nan")
    y = flashssm.rmsnorm_gated(x, torch.ones(64, device=device), group_size=32)
    nan = torch.isnan(y)
    assert nan[1, :32].all() and nan.sum() == 32


# (bf16 out on the GPU only: the interpreter's fp32 -> bf16 conversion truncates where the GPU's rounds to nearest)
OUT_DTYPES = [(torch.float32, torch.float16), (torch.float16, torch.float32), (torch.float32, torch.float32)] + (
    [(torch.float32, torch.bfloat16), (torch.bfloat16, torch.float32)] if HAS_GPU else [])


@pytest.mark.parametrize("x_dtype, out_dtype", OUT_DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("z", [False, True])
def test_rmsnorm_out_dtype(x_dtype, out_dtype, z, device):
    """out_dtype: y written in another dtype is the fp32 result rounded once to it, what the norm of the inputs in
    fp32 cast to out_dtype gives, and the gradients reaching x, z and the weight are those through that cast (the
    backward reads dy in y's dtype and writes dx, dz in the inputs'): bit for bit under the interpreter; on the GPU
    within a rounding, since a kernel compiled for other dtypes may sum its rows in another order. What a model under
    autocast relies on (`modules.norm.norm_for_linear`)."""
    x = torch.randn(7, 96, device=device, dtype=x_dtype)
    kw = dict(x=x, weight=1 + 0.3 * torch.randn(96, device=device), z=torch.randn_like(x) if z else None)
    opts = dict(eps=1e-5, group_size=48)
    dy = torch.randn(7, 96, device=device).to(out_dtype)
    runs = []
    for direct in (True, False):
        leaves = {k: v.detach().clone().requires_grad_() for k, v in kw.items() if v is not None}
        if direct:
            y = flashssm.rmsnorm_gated(**leaves, **opts, out_dtype=out_dtype)
        else:  # the inputs in fp32 (exact), the default fp32 y, then the cast
            wide = {k: v.float() if k != "weight" else v for k, v in leaves.items()}
            y = flashssm.rmsnorm_gated(**wide, **opts).to(out_dtype)
        assert y.dtype == out_dtype
        y.backward(dy)
        runs.append((y.detach(), *(leaves[k].grad for k in sorted(leaves))))
    for a, b in zip(*runs):
        assert a.dtype == b.dtype
        if device == "cpu":
            assert torch.equal(a, b)
        else:  # (one rounding of a's dtype, or fp32's for the sums)
            step = max(torch.finfo(a.dtype).eps, 1e-6)
            assert ((a.float() - b.float()).abs() <= 2 * step * b.float().abs().amax()).all()
    y_ref = ref.rmsnorm_gated_reference(**{k: v for k, v in kw.items() if v is not None}, **opts, out_dtype=out_dtype)
    assert y_ref.dtype == out_dtype
    y64 = ref.rmsnorm_gated_reference(**{k: v.double() for k, v in kw.items() if v is not None}, **opts)
    assert_close(runs[0][0], y64, out_dtype, "y")


ADD_DTYPES = [  # hidden, residual (the stream: the sum's promoted dtype), weight; (bf16 on the GPU only, as above)
    (torch.float16, torch.float32, torch.float32), (torch.float32, torch.float32, torch.float32),
    (torch.float16, torch.float16, torch.float16), (torch.float16, torch.float16, torch.float32)] + (
    [(torch.bfloat16, torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16, torch.bfloat16)]
    if HAS_GPU else [])


@pytest.mark.parametrize("with_ds", [True, False], ids=["ds", "no-ds"])
@pytest.mark.parametrize("wide", [False, "split", True], ids=["tile", "two-tiles", "two-sweep"])
@pytest.mark.parametrize("dtypes", ADD_DTYPES, ids=lambda d: "-".join(str(t).removeprefix("torch.") for t in d))
def test_add_rmsnorm(dtypes, wide, with_ds, device, monkeypatch):
    """add_rmsnorm against the composition it fuses, `s = hidden + residual; y = rmsnorm_gated(s.to(weight's dtype),
    weight, out_dtype=...)`: y, s and the gradients of hidden, residual and weight for incoming gradients of y and of s
    (or of y alone: s unused later). With an fp32 stream bit for bit under the interpreter (within a rounding on the
    GPU: kernels compiled for other dtypes sum in another order); with a 16-bit stream the fused backward rounds the
    two gradients' sum once where the composition rounds the norm's first: within one 16-bit rounding. Both backward
    kernels (the one-tile, in one tile or two (forced for both sides: the rule splits the add's alone), and, forced,
    the two-sweep)."""
    from flashssm.ops.norm import add_rmsnorm, rmsnorm

    monkeypatch.setattr(rmsnorm, "SPLIT_TILE", wide == "split")
    if wide is True:
        monkeypatch.setattr(rmsnorm, "WIDE_GROUP", 8)
        monkeypatch.setattr(rmsnorm, "WIDE_BLOCKS", (1, 16, 4))
    hd, rd, wd = dtypes
    hidden = torch.randn(3, 7, 48, device=device, dtype=hd)
    residual = torch.randn(3, 7, 48, device=device, dtype=rd)
    weight = (1 + 0.3 * torch.randn(48, device=device)).to(wd)
    out_dtype = torch.float16 if wd == torch.float32 and hd == torch.float16 else None
    runs = []
    for fused in (True, False):
        h, r, w = (t.detach().clone().requires_grad_() for t in (hidden, residual, weight))
        if fused:
            y, s = add_rmsnorm(h, r, w, eps=1e-5, out_dtype=out_dtype)
        else:
            s = h + r
            y = flashssm.rmsnorm_gated(s.to(w.dtype), w, eps=1e-5, out_dtype=out_dtype)
        gen = torch.Generator(device=device).manual_seed(3)
        dy = torch.randn(y.shape, device=device, generator=gen).to(y.dtype)
        ds = torch.randn(s.shape, device=device, generator=gen).to(s.dtype)
        torch.autograd.backward([y, s] if with_ds else [y], [dy, ds] if with_ds else [dy])
        runs.append((y.detach(), s.detach(), h.grad, r.grad, w.grad))
    assert all(a.dtype == b.dtype for a, b in zip(*runs))
    exact = device == "cpu" and rd == torch.float32
    for name, a, b in zip(("y", "s", "dh", "dr", "dw"), *runs):
        if exact:
            assert torch.equal(a, b), name
        else:  # (one rounding of a's dtype, or fp32's sums: relative to the largest value)
            step = max(torch.finfo(a.dtype).eps, 1e-6)
            assert ((a.float() - b.float()).abs() <= 2 * step * b.float().abs().amax()).all(), name


def test_add_rmsnorm_rejects(device):
    from flashssm.ops.norm import add_rmsnorm

    h, w = torch.randn(2, 16, device=device), torch.ones(16, device=device)
    with pytest.raises(ValueError, match="residual must be a tensor of hidden's shape"):
        add_rmsnorm(h, torch.randn(2, 15, device=device), w)
    with pytest.raises(ValueError, match="residual must be a tensor"):
        add_rmsnorm(h, None, w)
    with pytest.raises(ValueError, match="residual must be on hidden's device"):
        add_rmsnorm(h, torch.empty(2, 16, device="meta"), w)
    with pytest.raises(TypeError, match="residual_dtype"):
        add_rmsnorm(h, torch.randn(2, 16, device=device), w, residual_dtype=torch.int32)
    with pytest.raises(TypeError, match="out_dtype"):
        add_rmsnorm(h, torch.randn(2, 16, device=device), w, out_dtype="bf16")
    with pytest.raises(ValueError, match="weight"):
        add_rmsnorm(h, torch.randn(2, 16, device=device), torch.ones(8, device=device))


@pytest.mark.parametrize("mutate, exc, match", [
    (lambda kw: kw.update(weight=torch.ones(63)), ValueError, "weight must have shape"),
    (lambda kw: kw.update(z=torch.randn(3, 63)), ValueError, "z must have shape"),
    (lambda kw: kw.update(z=torch.randn(3, 64, dtype=torch.float16)), TypeError, "z must have dtype"),
    (lambda kw: kw.update(group_size=48), ValueError, "group_size must divide"),
    (lambda kw: kw.update(group_size=2.0), TypeError, "group_size must be an int"),
    (lambda kw: kw.update(eps=-1.0), ValueError, "eps"),
    (lambda kw: kw.update(norm_before_gate=1), TypeError, "norm_before_gate"),
    (lambda kw: kw.update(out_dtype="bf16"), TypeError, "out_dtype"),
    (lambda kw: kw.update(out_dtype=torch.int32), TypeError, "out_dtype"),
    (lambda kw: kw.update(x=torch.randn(3, 64).long()), TypeError, "x must have dtype"),
])
def test_rmsnorm_rejects(mutate, exc, match):
    kw = dict(x=torch.randn(3, 64), weight=torch.ones(64), z=torch.randn(3, 64))
    mutate(kw)
    with pytest.raises(exc, match=match):
        flashssm.rmsnorm_gated(**kw)


@pytest.mark.gpu
@pytest.mark.parametrize("group_size", [5120, 640])
def test_rmsnorm_mamba2_shape_gpu(group_size):
    check((2, 1000), 5120, group_size, torch.bfloat16, "cuda")


@pytest.mark.parametrize("blocks", [(2, 16, 4), (1, 16, 4)], ids=["2rows", "1row"])
@pytest.mark.parametrize("z, norm_before_gate", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("shape", [((5,), 48, None), ((3, 3), 60, 20), ((9,), 96, 48)],
                         ids=lambda s: f"{'x'.join(map(str, s[0]))}-D{s[1]}-G{s[2]}")
def test_rmsnorm_wide_group_backward(shape, z, norm_before_gate, blocks, device, monkeypatch):
    """The two-sweep backward for groups wider than one tile (5120-wide on the 2.7B shape), forced at
    small widths: chunks of 16 columns, the last one partial, several row blocks per split (two rows a block, and one
    as the table now takes)."""
    from flashssm.ops.norm import rmsnorm

    monkeypatch.setattr(rmsnorm, "WIDE_GROUP", 8)
    monkeypatch.setattr(rmsnorm, "WIDE_BLOCKS", blocks)
    check(*shape, torch.float32, device, z=z, norm_before_gate=norm_before_gate)


@pytest.mark.parametrize("smem, want", [(227 * 1024, [3, 3, 3]), (99 * 1024, [1, 3, 2])], ids=["hopper", "ada"])
def test_backward_stages_fit_the_gpu(smem, want, monkeypatch):
    """The one-tile backward's pipeline stages stay within the GPU's shared memory (a block's opt-in, less headroom):
    a 4096-wide fp32 gated group (48 KB a row of x, z, dy), the 2560-wide fused add (25.6 KB: s, dy, its gradient) and
    a 2560-wide fp32 norm (20 KB: x, dy), on Hopper's 227 KB and Ada's 99 KB."""
    from flashssm.ops.norm import rmsnorm

    monkeypatch.setattr(rmsnorm._runtime, "shared_memory", lambda device, on_cpu: smem)
    stages = []
    monkeypatch.setattr(rmsnorm._runtime, "launch", lambda kernel, grid, args, device, **meta: stages.append(
        meta.get("STAGES")))
    meta = torch.device("meta")
    x, z = torch.empty(2, 4096, device=meta), torch.empty(2, 4096, device=meta)
    rmsnorm.rmsnorm_backward(x, torch.empty(4096, device=meta), z, torch.empty_like(x), 1e-5, 4096, False)
    s, dy = torch.empty(2, 2560, device=meta), torch.empty(2, 2560, device=meta, dtype=torch.bfloat16)
    rmsnorm.rmsnorm_backward(s, torch.empty(2560, device=meta), None, dy, 1e-5, 2560, False, dres=torch.empty_like(s),
                             dh_dtype=torch.bfloat16)
    rmsnorm.rmsnorm_backward(s, torch.empty(2560, device=meta), None, torch.empty_like(s), 1e-5, 2560, False)
    assert stages == want


@pytest.mark.parametrize("form", ["kernel", "custom_op", "reference"])
@pytest.mark.parametrize("op", ["rmsnorm_gated", "add_rmsnorm"])
def test_norms_under_torch_compile(op, form, device, monkeypatch):
    """Each form a call takes while torch.compile traces it (`rmsnorm.COMPILE_FORM`) gives eager's output and gradients
    (the kernels): z a column slice of a wider projection, as the Mamba-2 mixer hands it. The custom ops are opaque to
    Dynamo (their kernels run under the interpreter too); the traced kernels run on the GPU only (Dynamo cannot trace
    the interpreter); the reference launches nothing."""
    from flashssm import _runtime
    from flashssm.ops.norm import add_rmsnorm, rmsnorm
    from tests.helpers import record_calls

    if form == "kernel" and not HAS_GPU:
        pytest.skip("Dynamo does not trace the interpreter's kernels")
    monkeypatch.setattr(rmsnorm, "COMPILE_FORM", form)
    torch._dynamo.reset()
    dim = 32
    wide = torch.randn(3, 5, 2 * dim + 6, device=device)
    if op == "rmsnorm_gated":
        leaves = [wide[..., :dim].detach().requires_grad_(), torch.randn(dim, device=device, requires_grad=True),
                  wide[..., dim + 2:2 * dim + 2].detach().requires_grad_()]

        def fn(x, w, z):
            return (flashssm.rmsnorm_gated(x, w, z, group_size=dim // 2),)
    else:
        leaves = [torch.randn(3, 5, dim, device=device, requires_grad=True) for _ in range(2)]
        leaves.append(torch.randn(dim, device=device, requires_grad=True))

        def fn(h, r, w):
            return add_rmsnorm(h, r, w)

    def run(f):
        outs = f(*leaves)
        dys = [torch.ones_like(o) * torch.linspace(-1, 1, o.shape[-1], device=device) for o in outs]
        return [o.detach() for o in outs] + list(torch.autograd.grad(outs, leaves, dys))

    want = run(fn)
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager" if device == "cpu" else "inductor")
    launches = record_calls(monkeypatch, _runtime, "_launch") if form != "kernel" else None  # (as in test_conv1d's)
    got = run(compiled)
    assert launches is None or bool(launches) == (form == "custom_op"), launches
    for i, (g, e) in enumerate(zip(got, want)):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-4, msg=f"output or gradient {i}")
