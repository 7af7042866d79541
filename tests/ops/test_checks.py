"""Every bad input of every public function gets a TypeError or ValueError naming the argument."""

import math

import pytest
import torch

import flashssm
from tests.helpers import scan_inputs, ssd_inputs


def _ssd_scan_kw():
    kw = ssd_inputs(1, 10, 4, 8, 6, 2, dtype=torch.float32, D="h", z=True, dt_bias=True, initial_states=True)
    return kw


def _cu(*values, dtype=torch.int32):
    return torch.tensor(values, dtype=dtype)


def _swap(name, fn):
    """A mutation replacing kw[name] by fn(kw)."""
    def mutate(kw):
        kw[name] = fn(kw)
    return mutate


SSD_SCAN_CASES = [
    ("x-not-tensor", _swap("x", lambda kw: kw["x"].tolist()), TypeError, "x must be a torch.Tensor"),
    ("x-3d", _swap("x", lambda kw: kw["x"][0]), ValueError, r"x must have shape \(batch, seqlen, nheads, headdim\)"),
    ("x-int", _swap("x", lambda kw: kw["x"].int()), TypeError, "x must have dtype"),
    ("x-float64", _swap("x", lambda kw: kw["x"].double()), TypeError,
     "x must have dtype float16 or bfloat16 or float32"),
    ("x-no-heads", _swap("x", lambda kw: kw["x"][:, :, :0]), ValueError, "nheads must be at least 1"),
    ("B-seqlen", _swap("B", lambda kw: kw["B"][:, :9]), ValueError, r"B must have shape \(batch=1, seqlen=10"),
    ("B-dtype", _swap("B", lambda kw: kw["B"].half()), TypeError, "B must have dtype float32"),
    ("B-groups", _swap("B", lambda kw: torch.randn(1, 10, 3, 6)), ValueError, "multiple of ngroups"),
    ("C-dstate", _swap("C", lambda kw: kw["C"][..., :5]), ValueError, r"C must have shape .*dstate=6"),
    ("C-dtype", _swap("C", lambda kw: kw["C"].bfloat16()), TypeError, "C must have dtype"),
    ("dt-shape", _swap("dt", lambda kw: kw["dt"][..., :3]), ValueError, r"dt must have shape .*nheads=4"),
    ("dt-int", _swap("dt", lambda kw: kw["dt"].long()), TypeError, "dt must have dtype"),
    ("A-shape", _swap("A", lambda kw: torch.randn(5)), ValueError, r"A must have shape \(nheads=4\)"),
    ("A-2d", _swap("A", lambda kw: torch.randn(4, 8)), ValueError, "A must have shape"),
    ("A-complex", _swap("A", lambda kw: torch.randn(4, dtype=torch.complex64)), TypeError, "A must have dtype"),
    ("D-shape", _swap("D", lambda kw: torch.randn(4, 9)), ValueError, r"D must have shape \(nheads=4, headdim=8\)"),
    ("D-3d", _swap("D", lambda kw: torch.randn(4, 8, 1)), ValueError, r"D must have shape \(nheads=4,\) or"),
    ("D-not-tensor", _swap("D", lambda kw: 1.0), TypeError, "D must be a torch.Tensor"),
    ("z-shape", _swap("z", lambda kw: kw["z"][..., :4]), ValueError, "z must have shape"),
    ("z-dtype", _swap("z", lambda kw: kw["z"].half()), TypeError, "z must have dtype"),
    ("dt_bias-shape", _swap("dt_bias", lambda kw: torch.randn(4, 1)), ValueError, "dt_bias must have shape"),
    ("dt_softplus-str", _swap("dt_softplus", lambda kw: "yes"), TypeError, "dt_softplus must be a bool"),
    ("return_final_states-int", _swap("return_final_states", lambda kw: 1), TypeError,
     "return_final_states must be a bool"),
    ("dt_limit-one", _swap("dt_limit", lambda kw: (1.0,)), TypeError, "dt_limit must be a pair"),
    ("dt_limit-order", _swap("dt_limit", lambda kw: (0.5, 0.1)), ValueError, "low <= high"),
    ("dt_limit-nan", _swap("dt_limit", lambda kw: (math.nan, 1.0)), ValueError, "dt_limit"),
    ("chunk-48", _swap("chunk_size", lambda kw: 48), ValueError, "power of two from 16 to 256"),
    ("chunk-8", _swap("chunk_size", lambda kw: 8), ValueError, "power of two from 16 to 256"),
    ("chunk-512", _swap("chunk_size", lambda kw: 512), ValueError, "power of two from 16 to 256"),
    ("chunk-float", _swap("chunk_size", lambda kw: 64.0), TypeError, "chunk_size must be an int"),
    ("chunk-bool", _swap("chunk_size", lambda kw: True), TypeError, "chunk_size must be an int"),
    ("state_dtype-f64", _swap("state_dtype", lambda kw: torch.float64), TypeError, "state_dtype must be"),
    ("state_dtype-str", _swap("state_dtype", lambda kw: "fp16"), TypeError, "state_dtype must be"),
    ("init-num_seqs", _swap("initial_states", lambda kw: torch.randn(2, 4, 8, 6)), ValueError,
     r"initial_states must have shape \(num_seqs=1"),
    ("init-dtype", _swap("initial_states", lambda kw: torch.zeros(1, 4, 8, 6, dtype=torch.int32)), TypeError,
     "initial_states must have dtype"),
    ("device", _swap("B", lambda kw: kw["B"].to("meta")), ValueError, "B must be on cpu"),
    ("cu-float", _swap("cu_seqlens", lambda kw: torch.tensor([0.0, 10.0])), TypeError, "cu_seqlens must have dtype"),
    ("cu-2d", _swap("cu_seqlens", lambda kw: _cu(0, 10).view(1, 2)), ValueError, "cu_seqlens must have shape"),
    ("cu-short", _swap("cu_seqlens", lambda kw: _cu(0)), ValueError, "at least 2 offsets"),
    ("cu-start", _swap("cu_seqlens", lambda kw: _cu(1, 10)), ValueError, "cu_seqlens must start at 0"),
    ("cu-decreasing", _swap("cu_seqlens", lambda kw: _cu(0, 6, 4, 10)), ValueError, "non-decreasing"),
    ("cu-end", _swap("cu_seqlens", lambda kw: _cu(0, 4, 9, dtype=torch.int64)), ValueError,
     r"end at the total number of tokens \(seqlen=10\)"),
]


def _ssd_batch2_with_cu(kw):
    for k in ("x", "dt", "B", "C", "z"):
        kw[k] = torch.cat([kw[k], kw[k]])
    kw["cu_seqlens"] = _cu(0, 10)
    kw["initial_states"] = None


def _varlen_init_mismatch(kw):
    kw["cu_seqlens"] = _cu(0, 3, 10)  # two sequences, one initial state


SSD_SCAN_CASES += [
    ("cu-batch2", _ssd_batch2_with_cu, ValueError, "cu_seqlens requires batch == 1"),
    ("cu-init-mismatch", _varlen_init_mismatch, ValueError, r"initial_states must have shape \(num_seqs=2"),
]


@pytest.mark.parametrize("mutate,exc,match", [c[1:] for c in SSD_SCAN_CASES], ids=[c[0] for c in SSD_SCAN_CASES])
def test_ssd_scan_rejects(mutate, exc, match):
    kw = _ssd_scan_kw()
    flashssm.ssd_scan(**kw)  # the unmutated call is valid
    mutate(kw)
    with pytest.raises(exc, match=match):
        flashssm.ssd_scan(**kw)


def _ssd_step_kw():
    kw = ssd_inputs(3, 1, 4, 8, 6, 2, dtype=torch.float32, D="hp", z=True, dt_bias=True)
    kw = {k: v[:, 0] if k in ("x", "dt", "B", "C", "z") else v for k, v in kw.items()}
    kw["state"] = torch.randn(3, 4, 8, 6)
    return kw


SSD_STEP_CASES = [
    ("state-not-tensor", _swap("state", lambda kw: None), TypeError, "state must be a torch.Tensor"),
    ("state-shape", _swap("state", lambda kw: torch.randn(3, 4, 7, 6)), ValueError,
     r"state must have shape \(cache_batch, nheads=4, headdim=8, dstate\)"),
    ("state-dtype", _swap("state", lambda kw: torch.zeros(3, 4, 8, 6, dtype=torch.int64)), TypeError,
     "state must have dtype"),
    ("state-expanded", _swap("state", lambda kw: torch.randn(1, 4, 8, 6).expand(3, 4, 8, 6)), ValueError,
     "must not be an expanded"),
    ("x-2d", _swap("x", lambda kw: kw["x"][0]), ValueError, r"x must have shape \(batch, nheads, headdim\)"),
    ("B-dstate", _swap("B", lambda kw: kw["B"][..., :5]), ValueError, r"B must have shape .*dstate=6"),
    ("B-groups", _swap("B", lambda kw: torch.randn(3, 3, 6)), ValueError, "multiple of ngroups"),
    ("C-dtype", _swap("C", lambda kw: kw["C"].half()), TypeError, "C must have dtype"),
    ("dt-shape", _swap("dt", lambda kw: kw["dt"][:2]), ValueError, r"dt must have shape \(batch=3, nheads=4\)"),
    ("A-shape", _swap("A", lambda kw: torch.randn(4, 8, 6)), ValueError, r"A must have shape \(nheads=4\)"),
    ("D-shape", _swap("D", lambda kw: torch.randn(8)), ValueError, "D must have shape"),
    ("z-shape", _swap("z", lambda kw: kw["z"][:, :2]), ValueError, "z must have shape"),
    ("dt_limit", _swap("dt_limit", lambda kw: (2.0, 1.0)), ValueError, "low <= high"),
    ("softplus", _swap("dt_softplus", lambda kw: None), TypeError, "dt_softplus must be a bool"),
    ("cache-batch", _swap("state", lambda kw: torch.randn(5, 4, 8, 6)), ValueError,
     "state has 5 rows but the input has batch 3"),
    ("indices-dtype", _swap("state_batch_indices", lambda kw: torch.tensor([0.0, 1.0, 2.0])), TypeError,
     "state_batch_indices must have dtype"),
    ("indices-shape", _swap("state_batch_indices", lambda kw: torch.tensor([0, 1])), ValueError,
     r"state_batch_indices must have shape \(batch=3\)"),
    ("indices-range", _swap("state_batch_indices", lambda kw: torch.tensor([0, 3, 1])), ValueError,
     "must be < cache_batch=3"),
    ("indices-repeat", _swap("state_batch_indices", lambda kw: torch.tensor([1, -1, 1])), ValueError,
     "must not repeat"),
    ("device", _swap("C", lambda kw: kw["C"].to("meta")), ValueError, "C must be on cpu"),
]


@pytest.mark.parametrize("mutate,exc,match", [c[1:] for c in SSD_STEP_CASES], ids=[c[0] for c in SSD_STEP_CASES])
def test_ssd_step_rejects(mutate, exc, match):
    kw = _ssd_step_kw()
    flashssm.ssd_step(**{k: v.clone() if k == "state" else v for k, v in kw.items()})
    mutate(kw)
    state = kw["state"]
    before = state.clone() if isinstance(state, torch.Tensor) else None
    with pytest.raises(exc, match=match):
        flashssm.ssd_step(**kw)
    if before is not None:
        torch.testing.assert_close(state, before, rtol=0, atol=0)  # a refused call writes nothing


def _scan_kw():
    return scan_inputs(2, 6, 9, 4, ngroups=2, dtype=torch.float32, D=True, z=True, delta_bias=True)


SCAN_CASES = [
    ("u-2d", _swap("u", lambda kw: kw["u"][0]), ValueError, r"u must have shape \(batch, dim, seqlen\)"),
    ("u-float64", _swap("u", lambda kw: kw["u"].double()), TypeError, "u must have dtype"),
    ("delta-shape", _swap("delta", lambda kw: kw["delta"][..., :8]), ValueError,
     r"delta must have shape \(batch=2, dim=6, seqlen=9\)"),
    ("A-shape", _swap("A", lambda kw: torch.randn(5, 4)), ValueError, r"A must have shape \(dim=6, dstate\)"),
    ("A-complex", _swap("A", lambda kw: torch.randn(6, 4, dtype=torch.complex64)), TypeError, "A must have dtype"),
    ("B-5d", _swap("B", lambda kw: kw["B"][None]), ValueError, r"B must have shape \(batch, dstate, seqlen\) or"),
    ("B-dstate", _swap("B", lambda kw: kw["B"][:, :, :3]), ValueError, r"B must have shape .*dstate=4"),
    ("B-groups", _swap("B", lambda kw: torch.randn(2, 4, 4, 9)), ValueError, "multiple of B's ngroups"),
    ("C-seqlen", _swap("C", lambda kw: kw["C"][..., :8]), ValueError, r"C must have shape .*seqlen=9"),
    ("D-shape", _swap("D", lambda kw: torch.randn(6, 1)), ValueError, r"D must have shape \(dim=6\)"),
    ("z-dtype", _swap("z", lambda kw: kw["z"].half()), TypeError, "z must have dtype"),
    ("delta_bias-shape", _swap("delta_bias", lambda kw: torch.randn(7)), ValueError, "delta_bias must have shape"),
    ("softplus", _swap("delta_softplus", lambda kw: 1), TypeError, "delta_softplus must be a bool"),
    ("last_state", _swap("return_last_state", lambda kw: "no"), TypeError, "return_last_state must be a bool"),
    ("device", _swap("A", lambda kw: kw["A"].to("meta")), ValueError, "A must be on cpu"),
]


@pytest.mark.parametrize("mutate,exc,match", [c[1:] for c in SCAN_CASES], ids=[c[0] for c in SCAN_CASES])
def test_selective_scan_rejects(mutate, exc, match):
    kw = _scan_kw()
    flashssm.selective_scan(**kw)
    mutate(kw)
    with pytest.raises(exc, match=match):
        flashssm.selective_scan(**kw)


def _scan_step_kw():
    kw = scan_inputs(3, 6, 1, 4, ngroups=3, dtype=torch.float32, D=True, z=True)
    kw = {k: v[..., 0] if k in ("u", "delta", "B", "C", "z") else v for k, v in kw.items()}
    kw["state"] = torch.randn(3, 6, 4)
    return kw


SCAN_STEP_CASES = [
    ("state-shape", _swap("state", lambda kw: torch.randn(3, 5, 4)), ValueError,
     r"state must have shape \(cache_batch, dim=6, dstate\)"),
    ("state-expanded", _swap("state", lambda kw: torch.randn(3, 6, 1).expand(3, 6, 4)), ValueError,
     "must not be an expanded"),
    ("u-3d", _swap("u", lambda kw: kw["u"][..., None]), ValueError, r"u must have shape \(batch, dim\)"),
    ("delta-shape", _swap("delta", lambda kw: kw["delta"][:, :5]), ValueError, "delta must have shape"),
    ("A-dstate", _swap("A", lambda kw: torch.randn(6, 5)), ValueError, r"A must have shape \(dim=6, dstate=4\)"),
    ("B-groups", _swap("B", lambda kw: torch.randn(3, 4, 4)), ValueError, "multiple of B's ngroups"),
    ("C-4d", _swap("C", lambda kw: kw["C"][..., None]), ValueError, "C must have shape"),
    ("indices-range", _swap("state_batch_indices", lambda kw: torch.tensor([0, 1, 7])), ValueError,
     "must be < cache_batch=3"),
    ("cache-batch", _swap("state", lambda kw: torch.randn(2, 6, 4)), ValueError, "state has 2 rows"),
]


@pytest.mark.parametrize("mutate,exc,match", [c[1:] for c in SCAN_STEP_CASES],
                         ids=[c[0] for c in SCAN_STEP_CASES])
def test_selective_scan_step_rejects(mutate, exc, match):
    kw = _scan_step_kw()
    flashssm.selective_scan_step(**{k: v.clone() if k == "state" else v for k, v in kw.items()})
    mutate(kw)
    with pytest.raises(exc, match=match):
        flashssm.selective_scan_step(**kw)


def test_padding_rows_are_valid_indices():
    kw = _ssd_step_kw()
    kw["state_batch_indices"] = torch.tensor([-1, 2, -5])
    y = flashssm.ssd_step(**kw)
    assert (y[[0, 2]] == 0).all()


def test_cu_seqlens_values_read_once_per_tensor_and_version():
    """cu_seqlens' host values are cached per live tensor object and version (a GPU tensor's read is a device
    synchronisation, and every layer passes the same offsets): a second call reuses them, an in-place change or a new
    tensor (even at a freed one's address) reads again, and a wrong value is still refused after a cached read."""
    from flashssm.ops import checks

    reads = []
    real = torch.Tensor.tolist

    def counting(t):
        reads.append(t.numel())
        return real(t)

    cu = _cu(0, 4, 10)
    torch.Tensor.tolist = counting
    try:
        assert checks.check_cu_seqlens(cu, 1, 10, cu.device) == (0, 4, 10)
        assert checks.check_cu_seqlens(cu, 1, 10, cu.device) == (0, 4, 10)
        assert len(reads) == 1
        cu[1] = 6  # in place: a new version
        assert checks.check_cu_seqlens(cu, 1, 10, cu.device) == (0, 6, 10)
        assert len(reads) == 2
        cu[1] = 11  # the cache never lets a bad value through
        with pytest.raises(ValueError, match="non-decreasing"):
            checks.check_cu_seqlens(cu, 1, 10, cu.device)
        del cu
        other = _cu(0, 2, 10)  # a new object, wherever it lives
        assert checks.check_cu_seqlens(other, 1, 10, other.device) == (0, 2, 10)
        assert len(reads) == 4
        with torch.inference_mode():  # no version counter: read every time
            inf = _cu(0, 5, 10)
            assert checks.check_cu_seqlens(inf, 1, 10, inf.device) == (0, 5, 10)
            inf[1] = 3
            assert checks.check_cu_seqlens(inf, 1, 10, inf.device) == (0, 3, 10)
        assert len(reads) == 6
    finally:
        torch.Tensor.tolist = real
    key = id(other)
    assert key in checks._HOST_VALUES
    del other  # a dead tensor leaves no entry behind
    assert key not in checks._HOST_VALUES


@pytest.mark.parametrize("op", ["ssd_scan", "selective_scan", "causal_conv1d"])
def test_packed_offsets_checked_when_a_compiled_call_runs(op, device):
    """Traced by torch.compile (fullgraph), a packed call reads no offsets (the trace has no values: the custom op
    reads them when it runs): good offsets run, and bad ones raise the eager call's ValueError from the op."""
    torch._dynamo.reset()
    if op == "ssd_scan":
        kw = ssd_inputs(1, 24, 2, 8, 16, 1, dtype=torch.float32, device=device)
        call = lambda cu: flashssm.ssd_scan(**kw, chunk_size=16, cu_seqlens=cu)  # noqa: E731
    elif op == "selective_scan":
        kw = scan_inputs(1, 8, 24, 4, dtype=torch.float32, device=device)
        call = lambda cu: flashssm.selective_scan(**kw, cu_seqlens=cu)  # noqa: E731
    else:
        x, w = torch.randn(1, 8, 24, device=device), torch.randn(8, 4, device=device)
        call = lambda cu: flashssm.causal_conv1d(x, w, None, "silu", cu_seqlens=cu)  # noqa: E731
    compiled = torch.compile(call, fullgraph=True, backend="inductor" if device == "cuda" else "aot_eager")
    good = torch.tensor([0, 10, 24], dtype=torch.int32, device=device)
    assert torch.allclose(compiled(good), call(good), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"cu_seqlens must end at the total number of tokens \(seqlen=24\), got 23"):
        compiled(torch.tensor([0, 10, 23], dtype=torch.int32, device=device))
