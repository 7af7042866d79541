"""causal_conv1d (forward and backward) and causal_conv1d_update against the float64 reference."""

import itertools

import pytest
import torch

import flashssm
from flashssm.ops.conv1d import reference as ref
from tests.conftest import HAS_GPU
from tests.helpers import VARLEN_IDS, VARLEN_PACKS, assert_close, pairs_of_four, spread, to_float64

pytestmark = pytest.mark.filterwarnings("error:flashssm:RuntimeWarning")

DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if HAS_GPU else [])
SHAPES = [(1, 1, 1), (2, 40, 37), (3, 17, 63), (1, 24, 257)]  # (batch, dim, seqlen)


def conv_inputs(batch, dim, seqlen, width, *, dtype=torch.float32, device="cpu", layout="channels", bias=True,
                initial_states=False, num_seqs=None):
    """x (batch, dim, seqlen) with channels contiguous ('channels', Mamba-2's layout) or tokens contiguous."""
    if layout == "channels":
        x = torch.randn(batch, seqlen, dim, device=device, dtype=dtype).transpose(1, 2)
    else:
        x = torch.randn(batch, dim, seqlen, device=device, dtype=dtype)
    kw = dict(x=x, weight=torch.randn(dim, width, device=device) / width)
    if bias:
        kw["bias"] = torch.randn(dim, device=device)
    if initial_states:
        kw["initial_states"] = torch.randn(num_seqs or batch, dim, width - 1, device=device, dtype=dtype)
    return kw


def check_forward_backward(kw, dtype, *, activation, cu_seqlens=None, final=True, what=""):
    """Output, final states and every gradient (incoming gradients on both outputs) against float64."""
    leaves = {k: v.detach().clone().requires_grad_() for k, v in kw.items()}
    leaves64 = {k: v.detach().double().requires_grad_() for k, v in kw.items()}
    out = flashssm.causal_conv1d(**leaves, activation=activation, cu_seqlens=cu_seqlens,
                                 return_final_states=final)
    out64 = ref.causal_conv1d_reference(**leaves64, activation=activation, cu_seqlens=cu_seqlens,
                                        return_final_states=final)
    y, y64 = (out[0], out64[0]) if final else (out, out64)
    assert y.dtype == kw["x"].dtype and y.stride() == kw["x"].stride(), "y keeps x's dtype and layout"
    assert_close(y, y64, dtype, f"y {what}")
    grads = [torch.randn_like(y64)]
    loss, loss64 = (y.double() * grads[0]).sum(), (y64 * grads[0]).sum()
    if final:
        assert_close(out[1], out64[1], dtype, f"final_states {what}")
        grads.append(torch.randn_like(out64[1]))
        loss = loss + (out[1].double() * grads[1]).sum()
        loss64 = loss64 + (out64[1] * grads[1]).sum()
    loss.backward()
    loss64.backward()
    for name in kw:
        assert leaves[name].grad is not None, f"no gradient for {name}"
        assert_close(leaves[name].grad, leaves64[name].grad, dtype, f"d{name} {what}")


@pytest.mark.parametrize("shape,width,layout", spread(
    [(s, w) for s in SHAPES for w in (2, 3, 4)], ["channels", "tokens"],
    ["B{}-D{}-L{}-{}".format(*s, w) for s in SHAPES for w in (2, 3, 4)]))
def test_conv1d(shape, width, layout, device):
    kw = conv_inputs(*shape, width, device=device, layout=layout, initial_states=True)
    check_forward_backward(kw, torch.float32, activation="silu", what=f"{shape} W{width} {layout}")


OPTIONS = list(itertools.product([False, True], [None, "silu"], [False, True], [False, True]))


@pytest.mark.parametrize("options", pairs_of_four(OPTIONS, [f"bias{int(b)}-{a}-init{int(i)}-final{int(f)}"
                                                             for b, a, i, f in OPTIONS]))
def test_conv1d_options(options, device):
    bias, activation, init, final = options
    kw = conv_inputs(2, 12, 21, 4, device=device, bias=bias, initial_states=init)
    check_forward_backward(kw, torch.float32, activation=activation, final=final)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv1d_dtypes(dtype, device):
    kw = conv_inputs(2, 33, 50, 4, dtype=dtype, device=device, initial_states=True)
    check_forward_backward(kw, dtype, activation="swish")


@pytest.mark.parametrize("lengths", VARLEN_PACKS, ids=VARLEN_IDS)
def test_conv1d_varlen(lengths, device):
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device=device, dtype=torch.int32)
    kw = conv_inputs(1, 20, sum(lengths), 4, device=device, initial_states=True, num_seqs=len(lengths))
    check_forward_backward(kw, torch.float32, activation="silu", cu_seqlens=cu)


@pytest.mark.parametrize("width,layout", spread([(2,), (4,)], ["channels", "tokens"], ["2", "4"]))
def test_conv1d_backward_layouts(layout, width, device):
    """The backward's rolling window in both layouts (one coalesced load per row with the channels
    contiguous, [channels, T] vectors split into rows with the tokens contiguous): packed sequences of
    lengths around its 64-token tile and 8-token steps (one token, empty, exactly a tile), initial and
    final states (16-bit inputs: test_conv1d_dtypes)."""
    lengths = [1, 70, 0, 9, 64]
    cu = torch.tensor([0] + list(itertools.accumulate(lengths)), device=device, dtype=torch.int32)
    kw = conv_inputs(1, 10, sum(lengths), width, device=device, layout=layout, initial_states=True,
                     num_seqs=len(lengths))
    check_forward_backward(kw, torch.float32, activation="silu", cu_seqlens=cu, what="varlen")
    kw = conv_inputs(2, 10, 75, width, device=device, layout=layout)
    check_forward_backward(kw, torch.float32, activation=None, final=False, what="batch 2")


def test_conv1d_varlen_no_leak(device):
    """Packed sequences give what each sequence gives alone; changing one leaves the others' outputs bit-equal."""
    cu = torch.tensor([0, 7, 8, 38], device=device)
    kw = conv_inputs(1, 16, 38, 4, device=device, initial_states=True, num_seqs=3)
    y, final = flashssm.causal_conv1d(**kw, activation="silu", cu_seqlens=cu, return_final_states=True)
    for s, (a, b) in enumerate(zip([0, 7, 8], [7, 8, 38])):
        alone = dict(kw, x=kw["x"][:, :, a:b], initial_states=kw["initial_states"][s:s + 1])
        y_s, f_s = flashssm.causal_conv1d(**alone, activation="silu", return_final_states=True)
        assert_close(y[:, :, a:b], y_s, torch.float32, f"sequence {s}")
        assert_close(final[s:s + 1], f_s, torch.float32, f"final state {s}")
    x2 = kw["x"].clone()
    x2[:, :, 8:] = 100.0
    y2 = flashssm.causal_conv1d(**dict(kw, x=x2), activation="silu", cu_seqlens=cu)
    assert torch.equal(y2[:, :, :8], y[:, :, :8])


@pytest.mark.parametrize("width", [2, 3, 4])
@pytest.mark.parametrize("state_len", [0, 1, 3])
def test_conv1d_update(width, state_len, device):
    """Decoding token by token (and a few at once) on a strided cache with padding rows and out=."""
    state_len += width - 1
    dim = 24
    x = torch.randn(3, dim, 5, device=device)
    w, b = torch.randn(dim, width, device=device), torch.randn(dim, device=device)
    storage = torch.randn(5, state_len, dim, device=device)
    cache = storage.transpose(1, 2)  # (5, dim, state_len), channels contiguous like mamba_ssm's
    expected = cache.double().clone()
    idx = torch.tensor([4, -1, 1], device=device)
    before = cache.clone()
    for t in range(3):
        out = torch.full((3, dim), float("nan"), device=device)
        y = flashssm.causal_conv1d_update(x[:, :, t], cache, w, b, "silu", conv_state_indices=idx, out=out)
        y_ref = ref.causal_conv1d_update_reference(x[:, :, t].double(), expected, w.double(), b.double(), "silu",
                                                   conv_state_indices=idx)
        assert y.data_ptr() == out.data_ptr()
        assert_close(y, y_ref, torch.float32, f"y token {t}")
        assert (y[1] == 0).all()
    y = flashssm.causal_conv1d_update(x[:, :, 3:], cache, w, b, None, conv_state_indices=idx)
    y_ref = ref.causal_conv1d_update_reference(x[:, :, 3:].double(), expected, w.double(), b.double(), None,
                                               conv_state_indices=idx)
    assert_close(y, y_ref, torch.float32, "y of two tokens at once")
    assert_close(cache, expected, torch.float32, "conv_state")
    assert torch.equal(cache[[0, 2, 3]], before[[0, 2, 3]]), "rows nobody indexed must not change"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_prefill_then_decode_matches_conv(dtype, device):
    """causal_conv1d over a prefix with final_states, then updates for the rest, equals one conv over all."""
    kw = conv_inputs(2, 40, 30, 4, dtype=dtype, device=device)
    y_full = ref.causal_conv1d_reference(**to_float64(kw), activation="silu")
    prefix = dict(kw, x=kw["x"][:, :, :22])
    y_pre, final = flashssm.causal_conv1d(**prefix, activation="silu", return_final_states=True)
    cache = torch.zeros(2, 40, 4, device=device, dtype=dtype)  # mamba_ssm's state_len = width
    cache[:, :, 1:] = final
    ys = [flashssm.causal_conv1d_update(kw["x"][:, :, t], cache, kw["weight"], kw["bias"], "silu")
          for t in range(22, 30)]
    assert_close(torch.cat([y_pre, torch.stack(ys, -1)], -1), y_full, dtype, "prefill + decode")


def test_conv1d_nan_stays_local(device):
    kw = conv_inputs(1, 8, 40, 4, device=device)
    kw["x"][0, 3, 10] = float("nan")
    y = flashssm.causal_conv1d(**kw, activation="silu")
    nan = torch.isnan(y)
    assert nan[0, 3, 10:14].all() and nan.sum() == 4, "NaN reaches exactly the outputs that read it"


@pytest.mark.parametrize("mutate, exc, match", [
    (lambda kw: kw.update(weight=torch.randn(8, 5)), ValueError, "width"),
    (lambda kw: kw.update(weight=torch.randn(8, 1)), ValueError, "width"),
    (lambda kw: kw.update(weight=torch.randn(7, 4)), ValueError, "weight must have shape"),
    (lambda kw: kw.update(bias=torch.randn(9)), ValueError, "bias must have shape"),
    (lambda kw: kw.update(activation="relu"), ValueError, "activation"),
    (lambda kw: kw.update(x=kw["x"].long()), TypeError, "x must have dtype"),
    (lambda kw: kw.update(x=kw["x"][0]), ValueError, "x must have shape"),
    (lambda kw: kw.update(initial_states=torch.randn(2, 8, 4)), ValueError, "initial_states must have shape"),
    (lambda kw: kw.update(cu_seqlens=torch.tensor([0, 10])), ValueError, "batch == 1"),
    (lambda kw: kw.update(x=kw["x"][:1], cu_seqlens=torch.tensor([0, 4, 9])), ValueError, "must end at"),
])
def test_conv1d_rejects(mutate, exc, match):
    kw = dict(x=torch.randn(2, 8, 10), weight=torch.randn(8, 4), bias=torch.randn(8))
    mutate(kw)
    with pytest.raises(exc, match=match):
        flashssm.causal_conv1d(**kw)


@pytest.mark.parametrize("mutate, exc, match", [
    (lambda kw: kw.update(conv_state=torch.randn(2, 8, 2)), ValueError, "width - 1"),
    (lambda kw: kw.update(conv_state=torch.randn(1, 8, 4)), ValueError, "conv_state_indices"),
    (lambda kw: kw.update(conv_state=torch.randn(8, 4).expand(2, 8, 4)), ValueError, "stride-0"),
    (lambda kw: kw.update(conv_state_indices=torch.tensor([0, 2])), ValueError, "< cache_batch"),
    (lambda kw: kw.update(conv_state_indices=torch.tensor([1, 1])), ValueError, "repeat"),
    (lambda kw: kw.update(conv_state_indices=torch.tensor([0.0, 1.0])), TypeError, "conv_state_indices must have"),
    (lambda kw: kw.update(out=torch.empty(2, 8, dtype=torch.float16)), TypeError, "out must have dtype"),
])
def test_conv1d_update_rejects(mutate, exc, match):
    kw = dict(x=torch.randn(2, 8), conv_state=torch.randn(2, 8, 4), weight=torch.randn(8, 4))
    mutate(kw)
    with pytest.raises(exc, match=match):
        flashssm.causal_conv1d_update(**kw)


@pytest.mark.gpu
@pytest.mark.parametrize("varlen", [False, True])
def test_conv1d_mamba2_shape_gpu(varlen):
    """Mamba-2 2.7B's xBC (5376 channels), bf16, channels contiguous, forward and backward."""
    device = "cuda"
    cu = torch.tensor([0, 1, 700, 701, 2000], device=device) if varlen else None
    batch = 1 if varlen else 2
    kw = conv_inputs(batch, 5376, 2000, 4, dtype=torch.bfloat16, device=device, initial_states=True,
                     num_seqs=4 if varlen else None)
    check_forward_backward(kw, torch.bfloat16, activation="silu", cu_seqlens=cu)


@pytest.mark.parametrize("form", ["reference", "custom_op", "kernel"])
def test_conv1d_under_torch_compile(form, device, monkeypatch):
    """Each form a call takes while torch.compile traces it (`conv.COMPILE_FORM`; the default, the custom op: a compiled
    Mamba-2 model's training step went to NaN on the GPU with the kernels traced, and trained as eager with the
    custom op or the reference) gives eager's output and gradients (the kernels), in the Mamba-2 layout (a column slice, channels
    contiguous): the reference with no launch, the custom op (opaque to Dynamo: its kernels run under the interpreter
    too) and the traced kernels (on the GPU: Dynamo cannot trace the interpreter) with theirs."""
    from flashssm import _runtime
    from flashssm.ops.conv1d import conv
    from tests.helpers import record_calls

    if form == "kernel" and not HAS_GPU:
        pytest.skip("Dynamo does not trace the interpreter's kernels")
    monkeypatch.setattr(conv, "COMPILE_FORM", form)
    torch._dynamo.reset()
    dim, seqlen = 24, 37
    x = torch.randn(2, seqlen, dim + 8, device=device)[..., 4:4 + dim].transpose(1, 2).detach().requires_grad_()
    w = torch.randn(dim, 4, device=device, requires_grad=True)
    b = torch.randn(dim, device=device, requires_grad=True)
    dy = torch.randn(2, seqlen, dim, device=device).transpose(1, 2)

    def fn(x, w, b):
        return flashssm.causal_conv1d(x, w, b, "silu")

    want = [fn(x, w, b).detach(), *torch.autograd.grad(fn(x, w, b), [x, w, b], dy)]
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager" if device == "cpu" else "inductor")
    # (the launches a run makes: none from the reference, the custom op's at run time; the traced ones are Inductor's,
    # and a spy would be traced with them, so that form is not spied on)
    launches = record_calls(monkeypatch, _runtime, "_launch") if form != "kernel" else None
    out = compiled(x, w, b)
    got = [out.detach(), *torch.autograd.grad(out, [x, w, b], dy)]
    assert launches is None or bool(launches) == (form == "custom_op"), launches
    for g, e, name in zip(got, want, ("y", "dx", "dweight", "dbias")):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-4, msg=name)
