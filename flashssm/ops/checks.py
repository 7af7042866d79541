"""Input validation shared by every public op.

Each failure raises `TypeError` (wrong type or dtype) or `ValueError` (wrong shape, value or
device) naming the argument and what was expected, so that bad input never reaches a kernel.
The check functions return the problem's dimensions, read once here and reused by the launchers.
"""

from __future__ import annotations

import math
import operator
import weakref
from dataclasses import dataclass
from typing import Sequence

import torch

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
FLOAT_DTYPES_REF = FLOAT_DTYPES + (torch.float64,)
INDEX_DTYPES = (torch.int32, torch.int64)


def _dtype_names(dtypes: Sequence[torch.dtype]) -> str:
    return " or ".join(str(d).replace("torch.", "") for d in dtypes)


def check_tensor(name: str, t, dims: Sequence[tuple[str, int | None]], dtypes, device=None) -> torch.Tensor:
    """Check that `t` is a tensor of the given dims (name, size or None for free) and dtypes."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    shape = t.shape
    if len(shape) != len(dims):
        _bad_shape(name, shape, dims)
    for size, (_, s) in zip(shape, dims):  # (a plain loop: every public call runs this several times)
        if s is not None and size != s:
            _bad_shape(name, shape, dims)
    if t.dtype not in dtypes:
        raise TypeError(f"{name} must have dtype {_dtype_names(dtypes)}, got {t.dtype}")
    if device is not None and t.device != device:
        raise ValueError(f"{name} must be on {device}, the device of the first input, got {t.device}")
    return t


def _bad_shape(name: str, shape, dims) -> None:
    expected = "(" + ", ".join(n if s is None else f"{n}={s}" for n, s in dims) + ")"
    raise ValueError(f"{name} must have shape {expected}, got {tuple(shape)}")


def check_optional(name: str, t, dims, dtypes, device) -> None:
    if t is not None:
        check_tensor(name, t, dims, dtypes, device)


def check_positive_dims(**dims: int) -> None:
    for name, size in dims.items():
        if size < 1:
            raise ValueError(f"{name} must be at least 1, got {size}")


def check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def check_register_cap(owner: str, maxnreg) -> None:
    """A launch configuration's ptxas register cap: None or an int from 16 to 255."""
    if maxnreg is not None and (not isinstance(maxnreg, int) or not 16 <= maxnreg <= 255):
        raise ValueError(f"{owner}.maxnreg must be None or an int from 16 to 255 (a ptxas register cap), "
                         f"got {maxnreg!r}")


def as_int(name: str, value, expected: str = "an int") -> int:
    """value as an int (anything with __index__ but bool), else a TypeError naming the argument."""
    try:
        if isinstance(value, bool):
            raise TypeError
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}") from None


def check_chunk_size(chunk_size) -> int:
    q = as_int("chunk_size", chunk_size)
    if not (16 <= q <= 256 and q & (q - 1) == 0):
        raise ValueError(f"chunk_size must be a power of two from 16 to 256, got {q}")
    return q


def check_dt_limit(dt_limit) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in dt_limit)
    except (TypeError, ValueError):
        raise TypeError(f"dt_limit must be a pair of numbers (low, high), got {dt_limit!r}") from None
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ValueError(f"dt_limit must be (low, high) with low <= high, got {dt_limit!r}")
    return lo, hi


def check_dtype_arg(name: str, value, dtypes=FLOAT_DTYPES) -> torch.dtype | None:
    """A dtype argument (state_dtype, out_dtype, ...): None or one of `dtypes`."""
    if value is not None and value not in dtypes:
        raise TypeError(f"{name} must be None or torch.{_dtype_names(dtypes)}, got {value!r}")
    return value


def check_state_dtype(state_dtype) -> torch.dtype | None:
    return check_dtype_arg("state_dtype", state_dtype)


def check_head_param(name: str, t, nheads: int, headdim: int | None, device) -> None:
    """D may be (nheads,) or (nheads, headdim); dt_bias and A are (nheads,)."""
    if t is None:
        return
    if headdim is not None and isinstance(t, torch.Tensor) and t.dim() == 2:
        check_tensor(name, t, [("nheads", nheads), ("headdim", headdim)], FLOAT_DTYPES_REF, device)
    else:
        if headdim is not None and isinstance(t, torch.Tensor) and t.dim() != 1:
            raise ValueError(f"{name} must have shape (nheads={nheads},) or (nheads={nheads}, headdim={headdim}), "
                             f"got {tuple(t.shape)}")
        check_tensor(name, t, [("nheads", nheads)], FLOAT_DTYPES_REF, device)


def check_cu_seqlens(cu_seqlens, batch: int, seqlen: int, device, read: bool = True) -> tuple[int, ...] | None:
    """Validate cu_seqlens (on the CPU or x's device) and return its values on the host. read=False: its tensor only,
    returning None (while torch.compile traces a call that a custom op takes: the trace has no values, and the op
    validates them when it runs)."""
    if cu_seqlens is None:
        return None
    check_tensor("cu_seqlens", cu_seqlens, [("num_seqs + 1", None)], INDEX_DTYPES)
    if cu_seqlens.device.type != "cpu" and cu_seqlens.device != device:
        raise ValueError(f"cu_seqlens must be on the CPU or on {device}, got {cu_seqlens.device}")
    if batch != 1:
        raise ValueError(f"cu_seqlens requires batch == 1 (sequences packed along seqlen), got batch {batch}")
    if cu_seqlens.numel() < 2:
        raise ValueError(f"cu_seqlens must hold at least 2 offsets (one sequence), got {cu_seqlens.numel()}")
    if not read:
        return None
    values = _host_values(cu_seqlens)
    if values[0] != 0:
        raise ValueError(f"cu_seqlens must start at 0, got {values[0]}")
    if any(b < a for a, b in zip(values, values[1:])):
        raise ValueError("cu_seqlens must be non-decreasing")
    if values[-1] != seqlen:
        raise ValueError(f"cu_seqlens must end at the total number of tokens (seqlen={seqlen}), got {values[-1]}")
    return values


# id(tensor) -> (weak reference to it, its version counter when read, its values): the host copy of cu_seqlens.
# Reading a GPU tensor's values waits for the device (a synchronisation a call, and every layer of a model calls
# with the same offsets, forward and backward). A hit needs the same live tensor object at the same version, so a
# new tensor at a freed one's address, or an in-place change through PyTorch, reads again.
_HOST_VALUES: dict[int, tuple] = {}


def _host_values(t: torch.Tensor) -> tuple[int, ...]:
    """t's values as a tuple of ints, read once per (tensor, version) (a CPU tensor's alike: the same rule, tested on
    the CPU). Inference tensors keep no version counter, so theirs are read every time."""
    try:
        version = t._version
    except RuntimeError:  # an inference tensor: no version counter to trust
        return tuple(t.tolist())
    key = id(t)
    entry = _HOST_VALUES.get(key)
    if entry is not None and entry[0]() is t and entry[1] == version:
        return entry[2]
    values = tuple(t.tolist())
    _HOST_VALUES[key] = (weakref.ref(t, lambda _ref, key=key: _HOST_VALUES.pop(key, None)), version, values)
    return values


def _graph_capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def check_state_batch_indices(indices, batch: int, cache_batch: int, device, name: str = "state_batch_indices",
                              state: str = "state") -> None:
    """(batch,) int rows into the cache; negative = padding. Values are checked unless a CUDA graph
    is being captured (reading them would synchronise the device) or torch.compile traces the call
    (no values; the decoding steps' custom ops check them when they run, `ops/step_ops.py`)."""
    if indices is None:
        if batch != cache_batch:
            raise ValueError(f"{state} has {cache_batch} rows but the input has batch {batch}; "
                             f"pass {name} to pick rows of a larger cache")
        return
    check_tensor(name, indices, [("batch", batch)], INDEX_DTYPES, device)
    # (traced, first: Dynamo cannot trace the capture query; the custom ops check the values when they run)
    if torch.compiler.is_compiling() or _graph_capturing():
        return
    values = [v for v in indices.tolist() if v >= 0]
    if any(v >= cache_batch for v in values):
        raise ValueError(f"{name} must be < cache_batch={cache_batch} (or negative for padding), got {max(values)}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must not repeat a cache row: two rows would update one state")


def check_out(out, like: torch.Tensor, names: Sequence[str]) -> None:
    """An optional preallocated output: the shape (dims named `names`), dtype and device of `like`."""
    if out is None:
        return
    check_tensor("out", out, list(zip(names, like.shape)), (like.dtype,), like.device)
    check_writable("out", out)


def check_writable(name: str, t: torch.Tensor) -> None:
    """A tensor written in place may be strided (a slice of a larger cache) but not overlap itself."""
    if any(st == 0 and sz > 1 for st, sz in zip(t.stride(), t.shape)):
        raise ValueError(f"{name} is written in place and must not be an expanded (stride-0) view; "
                         "pass a tensor that owns its memory")


@dataclass(frozen=True)
class SSDDims:
    """Dimensions of one ssd_scan call, read from its validated inputs."""

    batch: int
    seqlen: int
    nheads: int
    headdim: int
    ngroups: int
    dstate: int
    num_seqs: int
    chunk_size: int
    # host copy of the offsets; None without varlen, or where they were not read (`check_cu_seqlens`: read=False)
    cu_seqlens: tuple[int, ...] | None
    dt_limit: tuple[float, float]

    def sequences(self) -> list[tuple[int, int, int]]:
        """(batch row, first token, end token) of every sequence, in order."""
        if self.cu_seqlens is None:
            return [(b, 0, self.seqlen) for b in range(self.batch)]
        return [(0, s, e) for s, e in zip(self.cu_seqlens, self.cu_seqlens[1:])]


def check_ssd_scan(x, dt, A, B, C, *, chunk_size=256, D=None, z=None, dt_bias=None, dt_softplus=False,
                   dt_limit=(0.0, math.inf), initial_states=None, cu_seqlens=None, return_final_states=False,
                   state_dtype=None, allow_float64=False, read_offsets: bool = True) -> SSDDims:
    floats = FLOAT_DTYPES_REF if allow_float64 else FLOAT_DTYPES
    check_tensor("x", x, [("batch", None), ("seqlen", None), ("nheads", None), ("headdim", None)], floats)
    batch, seqlen, nheads, headdim = x.shape
    device = x.device
    check_positive_dims(batch=batch, nheads=nheads, headdim=headdim)
    check_tensor("B", B, [("batch", batch), ("seqlen", seqlen), ("ngroups", None), ("dstate", None)], (x.dtype,),
                 device)
    _, _, ngroups, dstate = B.shape
    check_positive_dims(ngroups=ngroups, dstate=dstate)
    if nheads % ngroups != 0:
        raise ValueError(f"nheads ({nheads}) must be a multiple of ngroups ({ngroups}, B's third dimension)")
    check_tensor("C", C, [("batch", batch), ("seqlen", seqlen), ("ngroups", ngroups), ("dstate", dstate)],
                 (x.dtype,), device)
    check_tensor("dt", dt, [("batch", batch), ("seqlen", seqlen), ("nheads", nheads)], FLOAT_DTYPES_REF, device)
    check_tensor("A", A, [("nheads", nheads)], FLOAT_DTYPES_REF, device)
    check_head_param("D", D, nheads, headdim, device)
    check_optional("z", z, [("batch", batch), ("seqlen", seqlen), ("nheads", nheads), ("headdim", headdim)],
                   (x.dtype,), device)
    check_head_param("dt_bias", dt_bias, nheads, None, device)
    check_bool("dt_softplus", dt_softplus)
    check_bool("return_final_states", return_final_states)
    limit = check_dt_limit(dt_limit)
    q = check_chunk_size(chunk_size)
    check_state_dtype(state_dtype)
    cu = check_cu_seqlens(cu_seqlens, batch, seqlen, device, read_offsets)
    num_seqs = batch if cu_seqlens is None else cu_seqlens.shape[0] - 1
    check_optional("initial_states", initial_states,
                   [("num_seqs", num_seqs), ("nheads", nheads), ("headdim", headdim), ("dstate", dstate)],
                   floats, device)
    return SSDDims(batch, seqlen, nheads, headdim, ngroups, dstate, num_seqs, q, cu, limit)


def check_ssd_step(state, x, dt, A, B, C, *, D=None, z=None, dt_bias=None, dt_softplus=False,
                   dt_limit=(0.0, math.inf), state_batch_indices=None, out=None,
                   allow_float64=False) -> tuple[float, float]:
    floats = FLOAT_DTYPES_REF if allow_float64 else FLOAT_DTYPES
    check_tensor("x", x, [("batch", None), ("nheads", None), ("headdim", None)], floats)
    batch, nheads, headdim = x.shape
    device = x.device
    check_positive_dims(batch=batch, nheads=nheads, headdim=headdim)
    check_tensor("state", state, [("cache_batch", None), ("nheads", nheads), ("headdim", headdim), ("dstate", None)],
                 floats, device)
    dstate = state.shape[3]
    check_positive_dims(dstate=dstate)
    check_writable("state", state)
    check_tensor("B", B, [("batch", batch), ("ngroups", None), ("dstate", dstate)], (x.dtype,), device)
    ngroups = B.shape[1]
    check_positive_dims(ngroups=ngroups)
    if nheads % ngroups != 0:
        raise ValueError(f"nheads ({nheads}) must be a multiple of ngroups ({ngroups}, B's second dimension)")
    check_tensor("C", C, [("batch", batch), ("ngroups", ngroups), ("dstate", dstate)], (x.dtype,), device)
    check_tensor("dt", dt, [("batch", batch), ("nheads", nheads)], FLOAT_DTYPES_REF, device)
    check_tensor("A", A, [("nheads", nheads)], FLOAT_DTYPES_REF, device)
    check_head_param("D", D, nheads, headdim, device)
    check_optional("z", z, [("batch", batch), ("nheads", nheads), ("headdim", headdim)], (x.dtype,), device)
    check_head_param("dt_bias", dt_bias, nheads, None, device)
    check_bool("dt_softplus", dt_softplus)
    limit = check_dt_limit(dt_limit)
    check_state_batch_indices(state_batch_indices, batch, state.shape[0], device)
    check_out(out, x, ("batch", "nheads", "headdim"))
    return limit


def _check_scan_bc(name: str, t, batch: int, dim: int, dstate: int | None, seqlen: int | None, floats, device):
    """B or C of the selective scan: (batch, dstate, seqlen) shared, or (batch, ngroups, dstate, seqlen)."""
    tail = [("dstate", dstate)] + ([("seqlen", seqlen)] if seqlen is not None else [])
    if isinstance(t, torch.Tensor) and t.dim() == len(tail) + 2:
        check_tensor(name, t, [("batch", batch), ("ngroups", None)] + tail, floats, device)
        ngroups = t.shape[1]
        check_positive_dims(ngroups=ngroups)
        if dim % ngroups != 0:
            raise ValueError(f"dim ({dim}) must be a multiple of {name}'s ngroups ({ngroups})")
    else:
        if isinstance(t, torch.Tensor) and t.dim() != len(tail) + 1:
            shapes = " or ".join(
                "(" + ", ".join(n for n, _ in dims) + ")"
                for dims in ([("batch", 0)] + tail, [("batch", 0), ("ngroups", 0)] + tail))
            raise ValueError(f"{name} must have shape {shapes}, got {tuple(t.shape)}")
        check_tensor(name, t, [("batch", batch)] + tail, floats, device)


def check_selective_scan(u, delta, A, B, C, *, D=None, z=None, delta_bias=None, delta_softplus=False,
                         return_last_state=False, cu_seqlens=None, allow_float64=False,
                         read_offsets: bool = True) -> tuple[int, ...] | None:
    """Validate a selective_scan call; returns cu_seqlens' values on the host (None without it, or unread:
    `check_cu_seqlens`)."""
    floats = FLOAT_DTYPES_REF if allow_float64 else FLOAT_DTYPES
    check_tensor("u", u, [("batch", None), ("dim", None), ("seqlen", None)], floats)
    batch, dim, seqlen = u.shape
    device = u.device
    check_positive_dims(batch=batch, dim=dim)
    check_tensor("delta", delta, [("batch", batch), ("dim", dim), ("seqlen", seqlen)], FLOAT_DTYPES_REF, device)
    check_tensor("A", A, [("dim", dim), ("dstate", None)], FLOAT_DTYPES_REF, device)
    dstate = A.shape[1]
    check_positive_dims(dstate=dstate)
    _check_scan_bc("B", B, batch, dim, dstate, seqlen, floats, device)
    _check_scan_bc("C", C, batch, dim, dstate, seqlen, floats, device)
    check_optional("D", D, [("dim", dim)], FLOAT_DTYPES_REF, device)
    check_optional("z", z, [("batch", batch), ("dim", dim), ("seqlen", seqlen)], (u.dtype,), device)
    check_optional("delta_bias", delta_bias, [("dim", dim)], FLOAT_DTYPES_REF, device)
    check_bool("delta_softplus", delta_softplus)
    check_bool("return_last_state", return_last_state)
    return check_cu_seqlens(cu_seqlens, batch, seqlen, device, read_offsets)


def check_selective_scan_step(state, u, delta, A, B, C, *, D=None, z=None, delta_bias=None, delta_softplus=False,
                              state_batch_indices=None, out=None, allow_float64=False) -> None:
    floats = FLOAT_DTYPES_REF if allow_float64 else FLOAT_DTYPES
    check_tensor("u", u, [("batch", None), ("dim", None)], floats)
    batch, dim = u.shape
    device = u.device
    check_positive_dims(batch=batch, dim=dim)
    check_tensor("state", state, [("cache_batch", None), ("dim", dim), ("dstate", None)], floats, device)
    dstate = state.shape[2]
    check_positive_dims(dstate=dstate)
    check_writable("state", state)
    check_tensor("delta", delta, [("batch", batch), ("dim", dim)], FLOAT_DTYPES_REF, device)
    check_tensor("A", A, [("dim", dim), ("dstate", dstate)], FLOAT_DTYPES_REF, device)
    _check_scan_bc("B", B, batch, dim, dstate, None, floats, device)
    _check_scan_bc("C", C, batch, dim, dstate, None, floats, device)
    check_optional("D", D, [("dim", dim)], FLOAT_DTYPES_REF, device)
    check_optional("z", z, [("batch", batch), ("dim", dim)], (u.dtype,), device)
    check_optional("delta_bias", delta_bias, [("dim", dim)], FLOAT_DTYPES_REF, device)
    check_bool("delta_softplus", delta_softplus)
    check_state_batch_indices(state_batch_indices, batch, state.shape[0], device)
    check_out(out, u, ("batch", "dim"))


@dataclass(frozen=True)
class Conv1dDims:
    """Dimensions of one causal_conv1d call."""

    batch: int
    dim: int
    seqlen: int
    width: int
    num_seqs: int
    cu_seqlens: tuple[int, ...] | None  # (as SSDDims')
    silu: bool

    def sequences(self) -> list[tuple[int, int, int]]:
        """(batch row, first token, end token) of every sequence, in order."""
        if self.cu_seqlens is None:
            return [(b, 0, self.seqlen) for b in range(self.batch)]
        return [(0, s, e) for s, e in zip(self.cu_seqlens, self.cu_seqlens[1:])]


def check_activation(activation) -> bool:
    """None, 'silu' or 'swish' (the same function); returns whether SiLU is applied."""
    if activation is not None and activation not in ("silu", "swish"):
        raise ValueError(f"activation must be None, 'silu' or 'swish', got {activation!r}")
    return activation is not None


def _check_conv_weight(weight, dim: int, device) -> int:
    check_tensor("weight", weight, [("dim", dim), ("width", None)], FLOAT_DTYPES_REF, device)
    width = weight.shape[1]
    if not 2 <= width <= 4:
        raise ValueError(f"weight must have width (its second dimension) 2, 3 or 4, got {width}")
    return width


def check_causal_conv1d(x, weight, bias=None, activation=None, *, cu_seqlens=None, initial_states=None,
                        return_final_states=False, allow_float64=False, read_offsets: bool = True) -> Conv1dDims:
    floats = FLOAT_DTYPES_REF if allow_float64 else FLOAT_DTYPES
    check_tensor("x", x, [("batch", None), ("dim", None), ("seqlen", None)], floats)
    batch, dim, seqlen = x.shape
    device = x.device
    check_positive_dims(batch=batch, dim=dim)
    width = _check_conv_weight(weight, dim, device)
    check_optional("bias", bias, [("dim", dim)], FLOAT_DTYPES_REF, device)
    silu = check_activation(activation)
    check_bool("return_final_states", return_final_states)
    cu = check_cu_seqlens(cu_seqlens, batch, seqlen, device, read_offsets)
    num_seqs = batch if cu_seqlens is None else cu_seqlens.shape[0] - 1
    check_optional("initial_states", initial_states, [("num_seqs", num_seqs), ("dim", dim), ("width - 1", width - 1)],
                   floats, device)
    return Conv1dDims(batch, dim, seqlen, width, num_seqs, cu, silu)


def check_causal_conv1d_update(x, conv_state, weight, bias=None, activation=None, *, conv_state_indices=None,
                               out=None, allow_float64=False) -> tuple[int, bool]:
    """x (batch, dim) or (batch, dim, seqlen); conv_state (cache_batch, dim, state_len >= width - 1).
    Returns (width, silu)."""
    floats = FLOAT_DTYPES_REF if allow_float64 else FLOAT_DTYPES
    if isinstance(x, torch.Tensor) and x.dim() == 3:
        check_tensor("x", x, [("batch", None), ("dim", None), ("seqlen", None)], floats)
    else:
        check_tensor("x", x, [("batch", None), ("dim", None)], floats)
    batch, dim = x.shape[:2]
    device = x.device
    check_positive_dims(batch=batch, dim=dim)
    width = _check_conv_weight(weight, dim, device)
    check_tensor("conv_state", conv_state, [("cache_batch", None), ("dim", dim), ("state_len", None)], floats, device)
    if conv_state.shape[2] < width - 1:
        raise ValueError(f"conv_state must hold at least width - 1 = {width - 1} past inputs (state_len), "
                         f"got {conv_state.shape[2]}")
    check_writable("conv_state", conv_state)
    check_optional("bias", bias, [("dim", dim)], FLOAT_DTYPES_REF, device)
    silu = check_activation(activation)
    check_state_batch_indices(conv_state_indices, batch, conv_state.shape[0], device, "conv_state_indices",
                              "conv_state")
    check_out(out, x, ("batch", "dim", "seqlen"))
    return width, silu


def check_rmsnorm_gated(x, weight, z=None, *, eps=1e-6, group_size=None, norm_before_gate=False,
                        allow_float64=False, out_dtype=None) -> int:
    """x, z: (..., dim); weight: (dim,); out_dtype None or a float dtype. Returns the group size."""
    floats = FLOAT_DTYPES_REF if allow_float64 else FLOAT_DTYPES
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1 or x.shape[-1] < 1:
        raise ValueError(f"x must have shape (..., dim) with dim >= 1, got {tuple(x.shape)}")
    check_tensor("x", x, [(f"d{i}", None) for i in range(x.dim() - 1)] + [("dim", None)], floats)
    dim = x.shape[-1]
    check_tensor("weight", weight, [("dim", dim)], FLOAT_DTYPES_REF, x.device)
    if z is not None:
        check_tensor("z", z, [(f"d{i}", s) for i, s in enumerate(x.shape[:-1])] + [("dim", dim)], (x.dtype,),
                     x.device)
    check_bool("norm_before_gate", norm_before_gate)
    check_dtype_arg("out_dtype", out_dtype, floats)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a number, got {type(eps).__name__}")
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    if group_size is None:
        return dim
    group_size = as_int("group_size", group_size, "an int or None")
    if group_size < 1 or dim % group_size != 0:
        raise ValueError(f"group_size must divide dim ({dim}), got {group_size}")
    return group_size
