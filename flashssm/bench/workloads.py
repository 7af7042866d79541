"""Named benchmark workloads and their inputs."""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class _Workload:
    """What every workload shares (each is a frozen dataclass of its sizes)."""

    def as_dict(self) -> dict:
        return asdict(self)

    # packed sequences, for the workloads with a `lengths` field (batch 1, seqlen their sum)
    def _check_lengths(self) -> None:
        if self.lengths is not None and (self.batch != 1 or sum(self.lengths) != self.seqlen):
            raise ValueError(f"{self.name}: packed lengths need batch 1 and seqlen their sum ({sum(self.lengths)})")

    def _packed(self) -> str:
        return "" if self.lengths is None else f" packed {len(self.lengths)} sequences"

    def _with_cu_seqlens(self, inp: dict, device) -> dict:
        """inp, with the lengths' offsets as cu_seqlens (int32, on the device) where the workload is packed."""
        if self.lengths is not None:
            inp["cu_seqlens"] = torch.tensor([0, *itertools.accumulate(self.lengths)], dtype=torch.int32,
                                             device=device)
        return inp


@dataclass(frozen=True)
class SSDWorkload(_Workload):
    """One ssd_scan forward call: x (batch, seqlen, nheads, headdim), B/C (batch, seqlen, ngroups, dstate).

    Inputs follow mamba_ssm's tests: x, B, C ~ N(0, 1) in `dtype`, dt = softplus(N(0, 1) − 4) in
    fp32 (about 0.02), A = −exp(U(0, 1)); no D, z or dt_bias, so every peer computes the same thing.
    `lengths`: packed sequences (batch 1, seqlen their sum), passed as cu_seqlens (int32, on the device; mamba_ssm
    takes the per-token seq_idx, fla cu_seqlens as int64, both built outside the timed call).
    `layer`: the call as a Mamba-2 layer makes it (mamba_ssm's Mamba2 with its gated norm, which gates outside the
    scan): dt is in_proj's output, 0.5 N(0, 1) in `dtype`, with dt_bias = softplus^-1 of a log-uniform step in [1e-3,
    0.1] a head and dt_softplus, and D a value a head (N(0, 1)); fla's chunk_simple_gla takes none of them.
    """

    name: str
    batch: int
    seqlen: int
    nheads: int = 80
    headdim: int = 64
    dstate: int = 128
    ngroups: int = 1
    chunk_size: int = 256
    dtype: str = "bfloat16"
    needs_gpu: bool = True
    lengths: tuple[int, ...] | None = None
    layer: bool = False
    op = "ssd_scan"

    def __post_init__(self):
        self._check_lengths()

    @property
    def tokens(self) -> int:
        return self.batch * self.seqlen

    @property
    def shape(self) -> str:
        return (f"{self.batch}x{self.seqlen}{self._packed()} h{self.nheads} p{self.headdim} n{self.dstate} g{self.ngroups} "
                f"Q{self.chunk_size} {self.dtype}{' D dt_bias softplus' if self.layer else ''}")

    # the inputs beyond x, dt, A, B, C that a layer workload passes, in ssd_scan's keyword order
    LAYER_INPUTS = ("D", "dt_bias")

    @property
    def extra_inputs(self) -> tuple[str, ...]:
        """The names of the inputs beyond x, dt, A, B, C (`layer`: D and dt_bias)."""
        return self.LAYER_INPUTS if self.layer else ()

    def options(self, *extra) -> dict:
        """ssd_scan's (and mamba_ssm's) keyword arguments for the values of `extra_inputs`: D, dt_bias and
        dt_softplus for a layer workload, none otherwise."""
        return dict(zip(self.LAYER_INPUTS, extra), dt_softplus=True) if self.layer else {}

    def make_inputs(self, device, seed: int = 0) -> dict:
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = DTYPES[self.dtype]

        def randn(*shape, dt=dtype):
            return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32).to(dt)

        b, l, h = self.batch, self.seqlen, self.nheads
        inp = dict(
            x=randn(b, l, h, self.headdim),
            dt=F.softplus(randn(b, l, h, dt=torch.float32) - 4.0),
            A=-torch.exp(torch.rand(h, generator=gen, device=device)),
            B=randn(b, l, self.ngroups, self.dstate),
            C=randn(b, l, self.ngroups, self.dstate),
        )
        if self.layer:  # (drawn after the others: the plain workload's x, A, B, C, the same draws)
            step = torch.exp(torch.rand(h, generator=gen, device=device) * (math.log(0.1) - math.log(1e-3))
                             + math.log(1e-3))
            inp.update(dt=(0.5 * randn(b, l, h, dt=torch.float32)).to(dtype), D=randn(h, dt=torch.float32),
                       dt_bias=step + torch.log(-torch.expm1(-step)))
        return self._with_cu_seqlens(inp, device)

    def reference(self, inp: dict) -> torch.Tensor:
        """y in float64 from the chunked reference."""
        from flashssm.ops.ssd.reference import ssd_scan_chunked

        return ssd_scan_chunked(*(inp[k].double() for k in ("x", "dt", "A", "B", "C")), chunk_size=self.chunk_size,
                                cu_seqlens=inp.get("cu_seqlens"),
                                **self.options(*(inp[k].double() for k in self.extra_inputs)))[0]

    @property
    def _dt_size(self) -> int:
        """dt's element size: fp32, or the input dtype's for a layer workload."""
        return DTYPES[self.dtype].itemsize if self.layer else 4

    def bytes(self) -> int:
        """Read x, B, C (input dtype) and dt once, write y once."""
        elt = DTYPES[self.dtype].itemsize
        per_token = (2 * self.nheads * self.headdim * elt + 2 * self.ngroups * self.dstate * elt
                     + self.nheads * self._dt_size)
        return self.tokens * per_token

    def flops(self) -> int:
        """Per token (shared/ANCHORS.md): 2·Q·N per group for C·Bᵀ within the chunk, and per head
        2·Q·P for the intra-chunk product plus 4·N·P for the chunk state and the state's output."""
        q, n, p = self.chunk_size, self.dstate, self.headdim
        return self.tokens * (2 * q * n * self.ngroups + self.nheads * (2 * q * p + 4 * n * p))


@dataclass(frozen=True)
class SSDTrainWorkload(SSDWorkload):
    """One ssd_scan forward + backward: y, then the gradients of x, dt, A, B, C (a layer workload: and of D and
    dt_bias) for an incoming dy (N(0, 1) in the input dtype); inputs as `SSDWorkload`. The output compared is (y, dx,
    ddt, dA, dB, dC[, dD, ddt_bias])."""

    op = "ssd_scan_train"

    def make_inputs(self, device, seed: int = 0) -> dict:
        inp = super().make_inputs(device, seed)
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        inp["dy"] = _randn(gen, device, *inp["x"].shape, dtype=inp["x"].dtype)
        return inp

    def reference(self, inp: dict):
        """y and the gradients in float64, through the chunked reference's autograd."""
        from flashssm.ops.ssd.reference import ssd_scan_chunked

        leaves = [inp[k].double().requires_grad_() for k in ("x", "dt", "A", "B", "C", *self.extra_inputs)]
        y = ssd_scan_chunked(*leaves[:5], chunk_size=self.chunk_size, cu_seqlens=inp.get("cu_seqlens"),
                             **self.options(*leaves[5:]))[0]
        grads = torch.autograd.grad(y, leaves, inp["dy"].double())
        return (y.detach(), *grads)

    def bytes(self) -> int:
        """The forward's bytes, then the backward's: read x, B, C, dt and dy once, write dx, dB, dC, ddt once."""
        elt = DTYPES[self.dtype].itemsize
        xs = self.nheads * self.headdim * elt
        bc = self.ngroups * self.dstate * elt
        return super().bytes() + self.tokens * (3 * xs + 4 * bc + 2 * self.nheads * self._dt_size)

    def flops(self) -> int:
        """The forward's FLOPs three times: the backward recomputes the states and takes two products
        for each of the forward's (the usual count for a product's gradient)."""
        return 3 * super().flops()


def _randn(gen, device, *shape, dtype=torch.float32):
    return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32).to(dtype)


@dataclass(frozen=True)
class SSDStepWorkload(_Workload):
    """One ssd_step (decoding) call as Mamba-2 makes it: dt_bias, softplus, D; the state updated in place.

    The floor is the state read and written once (everything else is under 1% of the bytes).
    """

    name: str
    batch: int
    nheads: int = 80
    headdim: int = 64
    dstate: int = 128
    ngroups: int = 1
    dtype: str = "bfloat16"
    state_dtype: str = "float32"
    needs_gpu: bool = True
    op = "ssd_step"

    @property
    def shape(self) -> str:
        return (f"batch {self.batch} h{self.nheads} p{self.headdim} n{self.dstate} g{self.ngroups} {self.dtype}, "
                f"{self.state_dtype} state")

    def make_inputs(self, device, seed: int = 0) -> dict:
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = DTYPES[self.dtype]
        b, h, p, n, g = self.batch, self.nheads, self.headdim, self.dstate, self.ngroups
        return dict(
            state=_randn(gen, device, b, h, p, n, dtype=DTYPES[self.state_dtype]),
            x=_randn(gen, device, b, h, p, dtype=dtype),
            dt=_randn(gen, device, b, h) - 4.0,
            A=-torch.exp(torch.rand(h, generator=gen, device=device)),
            B=_randn(gen, device, b, g, n, dtype=dtype),
            C=_randn(gen, device, b, g, n, dtype=dtype),
            D=_randn(gen, device, h),
            dt_bias=_randn(gen, device, h) * 0.5,
        )

    def reference(self, inp: dict):
        """(y, new state) in float64."""
        from flashssm.ops.ssd.reference import ssd_step_reference

        state = inp["state"].double().clone()
        y = ssd_step_reference(state, *(inp[k].double() for k in ("x", "dt", "A", "B", "C")), D=inp["D"].double(),
                               dt_bias=inp["dt_bias"].double(), dt_softplus=True)
        return y, state

    def bytes(self) -> int:
        state = self.batch * self.nheads * self.headdim * self.dstate * DTYPES[self.state_dtype].itemsize
        io = self.batch * (2 * self.nheads * self.headdim + 2 * self.ngroups * self.dstate) * DTYPES[self.dtype].itemsize
        return 2 * state + io + self.batch * self.nheads * 4

    def flops(self) -> int:
        return 0


@dataclass(frozen=True)
class ScanStepWorkload(_Workload):
    """One selective_scan_step (Mamba-1 decoding): delta_bias, softplus, D, z; shared B and C."""

    name: str
    batch: int
    dim: int = 5120
    dstate: int = 16
    dtype: str = "bfloat16"
    needs_gpu: bool = True
    op = "selective_scan_step"

    @property
    def shape(self) -> str:
        return f"batch {self.batch} dim {self.dim} n{self.dstate} {self.dtype}, fp32 state"

    def make_inputs(self, device, seed: int = 0) -> dict:
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = DTYPES[self.dtype]
        b, d, n = self.batch, self.dim, self.dstate
        return dict(
            state=_randn(gen, device, b, d, n),
            u=_randn(gen, device, b, d, dtype=dtype),
            delta=_randn(gen, device, b, d, dtype=dtype) - 4.0,
            A=-torch.exp(torch.rand(d, n, generator=gen, device=device)),
            B=_randn(gen, device, b, n, dtype=dtype),
            C=_randn(gen, device, b, n, dtype=dtype),
            D=_randn(gen, device, d),
            z=_randn(gen, device, b, d, dtype=dtype),
            delta_bias=_randn(gen, device, d) * 0.5,
        )

    def reference(self, inp: dict):
        from flashssm.ops.selective_scan.reference import selective_scan_step_reference

        state = inp["state"].double().clone()
        y = selective_scan_step_reference(state, *(inp[k].double() for k in ("u", "delta", "A", "B", "C")),
                                          D=inp["D"].double(), z=inp["z"].double(),
                                          delta_bias=inp["delta_bias"].double(), delta_softplus=True)
        return y, state

    def bytes(self) -> int:
        elt = DTYPES[self.dtype].itemsize
        return (2 * self.batch * self.dim * self.dstate * 4 + self.dim * self.dstate * 4
                + self.batch * (4 * self.dim + 2 * self.dstate) * elt)

    def flops(self) -> int:
        return 0


@dataclass(frozen=True)
class ScanWorkload(_Workload):
    """One selective_scan (Mamba-1) forward as MambaMixer calls it: delta_bias, softplus, D, z; B and C
    shared by the channels. Inputs: u, z ~ N(0, 1), delta ~ 0.5 N(0, 1), B, C ~ N(0, 1), all in `dtype`;
    delta_bias = softplus^-1 of a log-uniform step in [1e-3, 0.1] and A = -(1..dstate) per channel
    (Mamba-1's initialisation), D = 1. `lengths`: packed sequences (batch 1, seqlen their sum), passed as
    cu_seqlens (int32, on the device); mamba_ssm's CUDA scan has no packed form. `mixer_layout`: the same values laid
    out as flashssm's MambaMixer passes them: u, delta, z (and a training workload's dy) as (batch, dim, seqlen) views
    of (batch, seqlen, dim) tensors, B and C as views of x_proj's (batch, seqlen, dt_rank + 2 dstate) output;
    otherwise every tensor is contiguous. (The training harness differentiates clones of the inputs: u, delta and z
    keep the layout, B and C come out contiguous.)"""

    name: str
    batch: int
    seqlen: int
    dim: int = 5120
    dstate: int = 16
    dtype: str = "bfloat16"
    needs_gpu: bool = True
    lengths: tuple[int, ...] | None = None
    mixer_layout: bool = False
    op = "selective_scan"

    def __post_init__(self):
        self._check_lengths()

    @property
    def tokens(self) -> int:
        return self.batch * self.seqlen

    @property
    def shape(self) -> str:
        return (f"{self.batch}x{self.seqlen}{self._packed()} dim {self.dim} n{self.dstate} {self.dtype}"
                f"{', the mixer layout' if self.mixer_layout else ''}")

    def _laid_out(self, inp: dict) -> dict:
        """inp's (batch, dim, seqlen) tensors in `mixer_layout` where the workload asks for it."""
        if not self.mixer_layout:
            return inp
        out = dict(inp, **{k: inp[k].transpose(1, 2).contiguous().transpose(1, 2) for k in ("u", "delta", "z", "dy")
                           if k in inp})
        rank, n = -(-self.dim // 32), self.dstate  # (x_proj's dt_rank: ceil(d_model / 16), d_model = dim / 2)
        proj = inp["B"].new_zeros(self.batch, self.seqlen, rank + 2 * n)
        proj[..., rank:rank + n] = inp["B"].transpose(1, 2)
        proj[..., rank + n:] = inp["C"].transpose(1, 2)
        out["B"], out["C"] = proj[..., rank:rank + n].transpose(1, 2), proj[..., rank + n:].transpose(1, 2)
        return out

    def make_inputs(self, device, seed: int = 0) -> dict:
        return self._laid_out(self._values(device, seed))

    def _values(self, device, seed: int) -> dict:
        """The inputs, every tensor contiguous."""
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = DTYPES[self.dtype]
        b, d, n, l = self.batch, self.dim, self.dstate, self.seqlen
        step = torch.exp(torch.rand(d, generator=gen, device=device) * (math.log(0.1) - math.log(1e-3))
                         + math.log(1e-3))
        inp = dict(
            u=_randn(gen, device, b, d, l, dtype=dtype),
            delta=(0.5 * _randn(gen, device, b, d, l)).to(dtype),
            A=-torch.arange(1, n + 1, device=device, dtype=torch.float32).repeat(d, 1),
            B=_randn(gen, device, b, n, l, dtype=dtype),
            C=_randn(gen, device, b, n, l, dtype=dtype),
            D=torch.ones(d, device=device),
            z=_randn(gen, device, b, d, l, dtype=dtype),
            delta_bias=step + torch.log(-torch.expm1(-step)),
        )
        return self._with_cu_seqlens(inp, device)

    def reference(self, inp: dict):
        from flashssm.ops.selective_scan.reference import selective_scan_reference

        if inp.get("cu_seqlens") is None and self.seqlen > SCAN_REFERENCE_PIECE:
            return self._reference_in_pieces(inp, SCAN_REFERENCE_PIECE)
        return selective_scan_reference(*(inp[k].double() for k in ("u", "delta", "A", "B", "C", "D", "z",
                                                                      "delta_bias")), delta_softplus=True,
                                        cu_seqlens=inp.get("cu_seqlens"))

    @staticmethod
    def _reference_in_pieces(inp: dict, piece: int) -> torch.Tensor:
        """The float64 reference over pieces of `piece` tokens, each from the state the one before left: the whole
        sequence's result to float64's rounding (every token's arithmetic is the same; elementwise kernels may take
        other vector paths on other shapes), in the memory of one piece's float64 intermediates besides y (1 x 256K of
        the 2.8B shape: y 10.7 GB, against an estimated ~90 GB for the whole sequence at once, which an 80 GB H100
        could not hold)."""
        from flashssm.ops.selective_scan.reference import selective_scan_checked

        u = inp["u"]
        y = torch.empty(u.shape, dtype=torch.float64, device=u.device)
        A, D, bias = (inp[k].double() for k in ("A", "D", "delta_bias"))
        state = None
        for t0 in range(0, u.shape[-1], piece):
            part = {k: inp[k][..., t0:t0 + piece].double() for k in ("u", "delta", "B", "C", "z")}
            y[..., t0:t0 + piece], state = selective_scan_checked(
                part["u"], part["delta"], A, part["B"], part["C"], D=D, z=part["z"], delta_bias=bias,
                delta_softplus=True, return_last_state=True, initial_state=state)
        return y

    def bytes(self) -> int:
        """Read u, delta, z, B, C once, write y once."""
        elt = DTYPES[self.dtype].itemsize
        return self.tokens * (4 * self.dim + 2 * self.dstate) * elt

    def flops(self) -> int:
        return 0


@dataclass(frozen=True)
class ScanTrainWorkload(ScanWorkload):
    """selective_scan forward + backward: y, then the gradients of u, delta, A, B, C, D, z and delta_bias
    for an incoming dy ~ N(0, 1); inputs as `ScanWorkload`."""

    op = "selective_scan_train"

    def make_inputs(self, device, seed: int = 0) -> dict:
        inp = self._values(device, seed)
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        inp["dy"] = _randn(gen, device, *inp["u"].shape, dtype=inp["u"].dtype)
        return self._laid_out(inp)

    def reference(self, inp: dict):
        from flashssm.ops.selective_scan.reference import selective_scan_reference

        leaves = [inp[k].double().requires_grad_() for k in SCAN_TRAIN_INPUTS]
        y = selective_scan_reference(*leaves, delta_softplus=True, cu_seqlens=inp.get("cu_seqlens"))
        return (y.detach(), *torch.autograd.grad(y, leaves, inp["dy"].double()))

    def bytes(self) -> int:
        """The forward's bytes, then the backward's: read u, delta, z, B, C, dy; write du, ddelta, dz, dB, dC."""
        elt = DTYPES[self.dtype].itemsize
        return super().bytes() + self.tokens * (9 * self.dim + 4 * self.dstate) * elt


SCAN_TRAIN_INPUTS = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")
SCAN_REFERENCE_PIECE = 16384  # tokens: a longer selective_scan forward's float64 reference runs in pieces


@dataclass(frozen=True)
class Conv1dWorkload(_Workload):
    """causal_conv1d forward as Mamba-2 runs it: xBC (batch, dim, seqlen) with channels contiguous,
    width 4, bias, SiLU. The floor: read x once, write y once."""

    name: str
    batch: int
    seqlen: int
    dim: int = 5376  # 2.7B: 5120 x channels + 2 x 128 for B and C
    width: int = 4
    dtype: str = "bfloat16"
    channels_last: bool = True
    needs_gpu: bool = True
    op = "causal_conv1d"

    @property
    def shape(self) -> str:
        layout = "channels contiguous" if self.channels_last else "tokens contiguous"
        return f"{self.batch}x{self.seqlen} dim {self.dim} width {self.width} {self.dtype}, {layout}"

    def make_inputs(self, device, seed: int = 0) -> dict:
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = DTYPES[self.dtype]
        if self.channels_last:
            x = _randn(gen, device, self.batch, self.seqlen, self.dim, dtype=dtype).transpose(1, 2)
        else:
            x = _randn(gen, device, self.batch, self.dim, self.seqlen, dtype=dtype)
        return dict(x=x, weight=_randn(gen, device, self.dim, self.width) / self.width,
                    bias=_randn(gen, device, self.dim))

    def reference(self, inp: dict) -> torch.Tensor:
        from flashssm.ops.conv1d.reference import causal_conv1d_reference

        return causal_conv1d_reference(inp["x"].double(), inp["weight"].double(), inp["bias"].double(), "silu")

    def bytes(self) -> int:
        return 2 * self.batch * self.seqlen * self.dim * DTYPES[self.dtype].itemsize

    def flops(self) -> int:
        return 0


@dataclass(frozen=True)
class NormWorkload(_Workload):
    """rmsnorm_gated forward as Mamba-2 runs it: y = RMSNorm(x · silu(z)) per group, weight, eps 1e-5.
    The floor: read x and z once, write y once."""

    name: str
    batch: int
    seqlen: int
    dim: int = 5120
    group_size: int = 5120  # 2.7B: one group
    dtype: str = "bfloat16"
    needs_gpu: bool = True
    op = "rmsnorm_gated"

    @property
    def shape(self) -> str:
        return f"{self.batch}x{self.seqlen} dim {self.dim} group {self.group_size} {self.dtype}"

    def make_inputs(self, device, seed: int = 0) -> dict:
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = DTYPES[self.dtype]
        shape = (self.batch, self.seqlen, self.dim)
        return dict(x=_randn(gen, device, *shape, dtype=dtype), z=_randn(gen, device, *shape, dtype=dtype),
                    weight=1 + 0.1 * _randn(gen, device, self.dim))

    def reference(self, inp: dict) -> torch.Tensor:
        from flashssm.ops.norm.reference import rmsnorm_gated_reference

        return rmsnorm_gated_reference(inp["x"].double(), inp["weight"].double(), inp["z"].double(), eps=1e-5,
                                       group_size=self.group_size)

    def bytes(self) -> int:
        return 3 * self.batch * self.seqlen * self.dim * DTYPES[self.dtype].itemsize + self.dim * 4

    def flops(self) -> int:
        return 0


Workload = SSDWorkload | SSDStepWorkload | ScanStepWorkload | ScanWorkload | Conv1dWorkload | NormWorkload


def _mamba2_27b(batch: int, seqlen: int) -> SSDWorkload:
    label = f"{seqlen // 1024}K" if seqlen % 1024 == 0 else str(seqlen)
    return SSDWorkload(f"2.7b-{batch}x{label}", batch, seqlen)


def ragged_lengths(n: int, total: int, seed: int = 0, multiple: int = 256) -> tuple[int, ...]:
    """n sequence lengths summing to `total`, each 0.5-1.5x the mean (a seeded draw), none a multiple of `multiple`
    but perhaps the last: a packed training batch whose sequences end inside chunks."""
    w = 0.5 + torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    lengths = [max(1, int(v)) for v in (w / w.sum() * total).tolist()]
    lengths = [v + 1 if v % multiple == 0 else v for v in lengths]
    lengths[-1] += total - sum(lengths)
    return tuple(lengths)


# packed training batches of the 2.7B mixer: 8 sequences of ~4K (against 8x4K) and 64 of ~512 (an SFT-like batch)
PACKED_8 = ragged_lengths(8, 32768)
PACKED_64 = ragged_lengths(64, 32768, seed=1)
# and of the Mamba-1 2.8B mixer, the tokens of 8x2K (lengths not multiples of the backward's 32-token chunks)
M1_PACKED_8 = ragged_lengths(8, 16384, multiple=32)
M1_PACKED_64 = ragged_lengths(64, 16384, seed=1, multiple=32)
# a mix of 4 long sequences (~3K) and 64 short ones (~64 tokens, sharing the backward's rows: `varlen_rows`)
M1_PACKED_MIX = ragged_lengths(4, 12288, seed=3, multiple=32) + ragged_lengths(64, 4096, seed=4, multiple=32)


# Mamba-2 2.7B's mixer: d_model 2560, expand 2 -> 5120 channels = 80 heads of 64, dstate 128, 1 group.
WORKLOADS: dict[str, Workload] = {
    w.name: w for w in [
        _mamba2_27b(1, 2048),
        _mamba2_27b(1, 8192),
        _mamba2_27b(1, 32768),
        _mamba2_27b(1, 131072),
        _mamba2_27b(8, 4096),
        _mamba2_27b(32, 2048),
        # ANCHORS.md's accuracy table: batch 2, seqlen 1024, 16 heads
        SSDWorkload("accuracy-2x1K", 2, 1024, nheads=16),
        # Small enough for the Triton interpreter; fp32 since the interpreter's bf16 dots are wrong.
        SSDWorkload("cpu-small", 2, 200, nheads=4, headdim=32, dstate=16, ngroups=2, chunk_size=64,
                    dtype="float32", needs_gpu=False),
        # training: forward + backward of the 2.7B mixer
        SSDTrainWorkload("train-2.7b-1x2K", 1, 2048),
        SSDTrainWorkload("train-2.7b-1x8K", 1, 8192),
        SSDTrainWorkload("train-2.7b-1x32K", 1, 32768),
        SSDTrainWorkload("train-2.7b-8x4K", 8, 4096),
        # the call as a Mamba-2 layer makes it (D, dt_bias, softplus; dt in bf16), forward and training
        SSDWorkload("2.7b-8x4K-layer", 8, 4096, layer=True),
        SSDTrainWorkload("train-2.7b-8x4K-layer", 8, 4096, layer=True),
        SSDTrainWorkload("train-2.7b-1x32K-layer", 1, 32768, layer=True),
        # fp16 inputs (mamba_ssm's generation scripts default to fp16): the Gluon kernel's scaled fp16 form on Hopper
        SSDWorkload("2.7b-1x32K-fp16", 1, 32768, dtype="float16"),
        SSDWorkload("2.7b-8x4K-fp16", 8, 4096, dtype="float16"),
        SSDTrainWorkload("train-2.7b-8x4K-fp16", 8, 4096, dtype="float16"),
        SSDTrainWorkload("cpu-train", 1, 100, nheads=4, headdim=32, dstate=16, ngroups=2, chunk_size=32,
                         dtype="float32", needs_gpu=False),
        SSDTrainWorkload("cpu-train-layer", 1, 100, nheads=4, headdim=32, dstate=16, ngroups=2, chunk_size=32,
                         dtype="float32", needs_gpu=False, layer=True),
        # packed sequences (cu_seqlens), the same tokens as 8x4K; training too
        SSDWorkload("2.7b-packed-8x4K", 1, 32768, lengths=PACKED_8),
        SSDTrainWorkload("train-2.7b-packed-8x4K", 1, 32768, lengths=PACKED_8),
        SSDTrainWorkload("train-2.7b-packed-64x512", 1, 32768, lengths=PACKED_64),
        SSDTrainWorkload("cpu-train-packed", 1, 120, nheads=4, headdim=32, dstate=16, ngroups=2, chunk_size=32,
                         dtype="float32", needs_gpu=False, lengths=(50, 1, 0, 69)),
        # decoding: one token of the 2.7B mixer (fp32 state), and of Mamba-1 2.8B
        SSDStepWorkload("step-2.7b-b1", 1),
        SSDStepWorkload("step-2.7b-b128", 128),
        SSDStepWorkload("step-2.7b-b512", 512),
        ScanStepWorkload("m1step-2.8b-b128", 128),
        # Mamba-1's selective scan: the 2.8B mixer (dim 5120, dstate 16), and dstate 128
        ScanWorkload("m1-2.8b-8x2K", 8, 2048),
        ScanWorkload("m1-2.8b-8x2K-mixer", 8, 2048, mixer_layout=True),
        ScanWorkload("m1-2.8b-1x32K", 1, 32768),
        ScanWorkload("m1-2.8b-1x256K", 1, 262144),  # (issue 5's third forward shape)
        ScanWorkload("m1-n128-8x2K", 8, 2048, dstate=128),
        # a small model (Mamba-1 130M: dim 1536) at batch 1: the channels alone give 48 warps
        ScanWorkload("m1-130m-1x32K", 1, 32768, dim=1536),
        ScanTrainWorkload("m1train-2.8b-8x2K", 8, 2048),
        ScanTrainWorkload("m1train-2.8b-8x2K-mixer", 8, 2048, mixer_layout=True),
        ScanTrainWorkload("m1train-2.8b-1x32K", 1, 32768),
        # batch 2: the channels' backward grid fills 1.2 waves (its segments, forty-sixth session)
        ScanTrainWorkload("m1train-2.8b-2x16K", 2, 16384),
        ScanTrainWorkload("m1train-130m-1x8K", 1, 8192, dim=1536),
        # (the float64 reference's autograd keeps every state: 1x1K is what fits for dstate 128)
        ScanTrainWorkload("m1train-n128-1x1K", 1, 1024, dstate=128),
        # packed sequences (cu_seqlens), the same tokens as 8x2K: 8 ragged ones, and 64 of ~256 (an SFT-like batch)
        ScanWorkload("m1-2.8b-packed-8x2K", 1, 16384, lengths=M1_PACKED_8),
        ScanTrainWorkload("m1train-2.8b-packed-8x2K", 1, 16384, lengths=M1_PACKED_8),
        ScanTrainWorkload("m1train-2.8b-packed-64x256", 1, 16384, lengths=M1_PACKED_64),
        ScanTrainWorkload("m1train-2.8b-packed-mix", 1, 16384, lengths=M1_PACKED_MIX),
        ScanWorkload("cpu-m1", 2, 100, dim=12, dstate=8, dtype="float32", needs_gpu=False),
        ScanTrainWorkload("cpu-m1train", 1, 70, dim=8, dstate=8, dtype="float32", needs_gpu=False),
        ScanTrainWorkload("cpu-m1train-packed", 1, 70, dim=8, dstate=8, dtype="float32", needs_gpu=False,
                          lengths=(30, 1, 0, 39)),
        # the kernels around the scan, 2.7B at 8x4K
        Conv1dWorkload("conv-2.7b-8x4K", 8, 4096),
        Conv1dWorkload("conv-2.7b-8x4K-tokens", 8, 4096, channels_last=False),
        NormWorkload("norm-2.7b-8x4K", 8, 4096),
        NormWorkload("norm-2.7b-8x4K-g8", 8, 4096, group_size=640),
        SSDStepWorkload("cpu-step", 3, nheads=4, headdim=16, dstate=8, ngroups=2, dtype="float32", needs_gpu=False),
        Conv1dWorkload("cpu-conv", 2, 100, dim=24, dtype="float32", needs_gpu=False),
        NormWorkload("cpu-norm", 2, 50, dim=64, group_size=32, dtype="float32", needs_gpu=False),
    ]
}

GPU_DEFAULT = [name for name, w in WORKLOADS.items() if w.needs_gpu]
CPU_DEFAULT = [name for name, w in WORKLOADS.items() if not w.needs_gpu]
