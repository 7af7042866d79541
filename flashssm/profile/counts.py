"""Bytes and FLOPs of each kernel, counted from the shapes it works on.

Bytes are the compulsory traffic: every tensor the kernel reads is read once and every tensor it
writes is written once (re-reads that hit in L2 are not counted, so achieved GB/s over these bytes
is the bandwidth the kernel makes useful). FLOPs are the math's, split into tensor-core FLOPs (the
dot products: 2·m·n·k each) and vector FLOPs (one per element per element-wise operation: exp,
multiply, add, softplus counted as 4, SiLU as 4, RMS norm as 5 per element forward and 10 backward).

Three sources, tried in order by `launch_cost`:
1. a formula per kernel name for the SSM, conv and norm kernels of flashssm and mamba_ssm (their
   launches sit inside Python code, not inside an aten op with recorded shapes), taking the shapes
   from the layer that launched the kernel (`Dims`) and the batch and sequence length;
2. the recorded input shapes of the aten op that launched the kernel: matrix products (2·m·n·k),
   scaled-dot-product attention, and element-wise ops (inputs read, the largest written);
3. nothing: the kernel is timed and classified but left off the roofline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ELEMENT_BYTES = {
    "float": 4, "c10::BFloat16": 2, "c10::Half": 2, "double": 8, "long int": 8, "int": 4, "bool": 1,
    "unsigned char": 1, "signed char": 1, "short int": 2, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "float32": 4, "bfloat16": 2, "float16": 2, "float64": 8, "int64": 8, "int32": 4,
}


@dataclass(frozen=True)
class Cost:
    bytes: float
    tensor_flops: float = 0.0
    vector_flops: float = 0.0
    source: str = "formula"

    @property
    def flops(self) -> float:
        return self.tensor_flops + self.vector_flops

    def scaled(self, factor: float) -> "Cost":
        return Cost(self.bytes * factor, self.tensor_flops * factor, self.vector_flops * factor, self.source)


@dataclass(frozen=True)
class Shape:
    """The token shape of the profiled step: `batch` sequences of `seqlen` tokens, inputs of
    `elem` bytes (2 for bf16/fp16, 4 for fp32)."""
    batch: int
    seqlen: int
    elem: int = 2

    @property
    def tokens(self) -> int:
        return self.batch * self.seqlen


# ---- SSD (Mamba-2) ----

def _ssd_terms(d: dict, s: Shape) -> dict:
    """Sizes (bytes) and FLOP terms of one SSD layer; d holds nheads, headdim, ngroups, d_state, chunk_size."""
    T, e = s.tokens, s.elem
    H, P, G, N, Q = d["nheads"], d["headdim"], d["ngroups"], d["d_state"], d["chunk_size"]
    nch = s.batch * math.ceil(s.seqlen / Q)          # chunks (each sequence padded to whole chunks)
    Tq = nch * Q
    return dict(
        x=T * H * P * e, dt_in=T * H * e, dt32=T * H * 4, dA=Tq * H * 4, B=T * G * N * e, B32=T * G * N * 4,
        CB=nch * G * Q * Q * 4,
        st32=nch * H * P * N * 4, st_e=nch * H * P * N * e, final=s.batch * H * P * N * 4,
        # dot products
        cb=2.0 * Tq * Q * G * N,                     # C·Bᵀ within each chunk, per group
        intra=2.0 * Tq * Q * H * P,                  # (L∘CBᵀ)·X, per head
        intra_n=2.0 * Tq * Q * H * N,                # backward: dC and dB within the chunk, per head
        state=2.0 * T * H * N * P,                   # one of: chunk states Bᵀ·X, output C·S, and their gradients
        # element-wise: the decay matrix (exp, mask, dt scale), the per-token terms, the state update
        decay=3.0 * Tq * Q * H, token=8.0 * T * H + 3.0 * T * H * P, update=2.0 * nch * H * P * N,
    )


def _ssd(reads, writes, tensor=(), vector=()):
    def cost(d: dict, s: Shape) -> Cost:
        t = _ssd_terms(d, s)
        return Cost(sum(t[k] for k in reads) + sum(t[k] for k in writes),
                    sum(t[k] if isinstance(k, str) else t[k[0]] * k[1] for k in tensor),
                    sum(t[k] if isinstance(k, str) else t[k[0]] * k[1] for k in vector))
    return cost


SSD_KERNELS = {
    # flashssm: the single-launch forward; in the backward the same kernel recomputes the state
    # entering each chunk (no output sweep); the gradient kernel does all gradients in one launch.
    ("_ssd_fwd_kernel", "forward"): _ssd(["x", "dt_in", "B", "B"], ["x"], ["cb", "intra", ("state", 2)],
                                         ["decay", "token", "update"]),
    ("_ssd_fwd_kernel", "backward"): _ssd(["x", "dt_in", "B"], ["st32"], ["state"], ["token", "update"]),
    # the forward's preparation launch: dt and its in-sub-chunk cumsums, fp32
    ("_ssd_decays_kernel", "forward"): _ssd(["dt_in"], ["dt32", "dt32"], vector=[("token", 0.25)]),
    # the same kernel in the backward's tiles: the chunk cumsum alone, of the processed dt
    ("_ssd_decays_kernel", "backward"): _ssd(["dt32"], ["dt32"], vector=[("token", 0.25)]),
    ("_ssd_bwd_kernel", None): _ssd(["x", "dt_in", "B", "B", "x", "st32"], ["x", "dt32", "B32", "B32"],
                                    ["cb", ("intra", 2), ("intra_n", 2), ("state", 4)],
                                    [("decay", 2), ("token", 2), ("update", 2)]),
    # the state gradients' chain as a launch of its own (one long sequence, or z): reads dout, C, dt and x (D's
    # gradient), writes dH after every chunk; D's gradient alone where there is no such launch
    ("_dstates_kernel", None): _ssd(["x", "dt_in", "B", "x"], ["st32"], ["state"], ["token"]),
    ("_dD_kernel", None): _ssd(["x", "x"], [], vector=[("token", 0.25)]),
    # the gradients in tiles (the default after the chain launch): per head the pairs' (S L)^T dy over the lower
    # triangle and the state product B dH (S^T of the pairs from _tiles_s_kernel, H and dH 16-bit); per group of heads
    # the state paths x dH^T and dy H^T summed over the heads (_tiles_paths_kernel), the pairs' G = dy x^T (per head),
    # and V^T C, V B; the decay gradient's sums per (chunk, head)
    ("_tiles_kernel", None): _ssd(["x", "dt_in", "B", "x", "x", "st_e", "CB"], ["x"],
                                  [("intra", 0.5), "state"], ["decay", "token"]),
    ("_tiles_paths_kernel", None): _ssd(["x", "x", "dt_in", "B", "st_e", "st_e"], ["B32", "B32"], [("state", 2)],
                                        ["token"]),
    ("_tiles_bc_kernel", None): _ssd(["x", "x", "dt_in", "B", "B"], ["B32", "B32"], [("intra", 0.5), ("cb", 1.5)],
                                     [("decay", 2), "token"]),
    # (three planes of per-token terms and the processed dt, fp32, and the raw dt it takes ddt on to)
    ("_tiles_da_kernel", None): _ssd(["dt32", "dt32", "dt32", "dt32", "dt_in"], ["dt32"], vector=[("token", 0.25)]),
    # mamba_ssm's Triton SSD: five forward kernels; its backward recomputes the first four, then
    # runs the gradient kernels (ssd_combined._mamba_chunk_scan_combined_bwd).
    ("_chunk_cumsum_fwd_kernel", None): _ssd(["dt_in"], ["dt32", "dA"], vector=[("token", 0.25)]),
    ("_bmm_chunk_fwd_kernel", None): _ssd(["B", "B"], ["CB"], ["cb"]),
    ("_chunk_state_fwd_kernel", None): _ssd(["B", "x", "dt32", "dA"], ["st32"], ["state"], ["token"]),
    ("_state_passing_fwd_kernel", None): _ssd(["st32", "final"], ["st_e", "final"], vector=["update"]),
    ("_chunk_scan_fwd_kernel", None): _ssd(["CB", "x", "dt32", "dA", "B", "st_e"], ["x"], ["intra", "state"],
                                           ["decay", "token"]),
    ("_chunk_scan_bwd_dstates_kernel", None): _ssd(["x", "B", "dA"], ["st32"], ["state"], ["token"]),
    ("_state_passing_bwd_kernel", None): _ssd(["st32", "st_e"], ["st_e", "st_e"], vector=[("update", 2)]),
    ("_chunk_scan_chunk_state_bwd_dx_kernel", None): _ssd(["x", "dt32", "dA", "B", "CB", "x", "st_e"],
                                                          ["x", "dt32"], ["intra", "state"], ["decay", "token"]),
    ("_chunk_state_bwd_db_kernel", None): _ssd(["x", "dt32", "dA", "st_e", "B"], ["B", "dt32"], ["state"], ["token"]),
    ("_chunk_scan_bwd_dc_kernel", None): _ssd(["st_e", "dA", "x", "B"], ["B", "dt32"], ["state"], ["token"]),
    ("_chunk_scan_bwd_dcb_kernel", None): _ssd(["x", "dt32", "dA", "x"], ["CB"], ["intra"], ["decay"]),
    ("_bmm_chunk_bwd_kernel", None): _ssd(["B", "CB", "B"], ["B"], ["cb"]),
    ("_chunk_scan_bwd_ddAcs_stable_kernel", None): _ssd(["x", "dt32", "dA", "x", "CB"], ["dt32"], ["intra"],
                                                       [("decay", 2)]),
    ("_chunk_cumsum_bwd_kernel", None): _ssd(["dt32", "dt_in"], ["dt_in", "dt32"], vector=[("token", 0.5)]),
    ("_chunk_scan_bwd_dz_kernel", None): _ssd(["x", "x", "x", "x"], ["x", "x"], vector=[("token", 1)]),
}


# ---- selective scan (Mamba-1) ----

def _scan_cost(kernel: str, d: dict, s: Shape) -> Cost:
    """flashssm's selective scan: u, delta, z (d_inner per token), B and C (ngroups·d_state per
    token), y; training keeps an fp32 state every 32 tokens for the backward."""
    T, e = s.tokens, s.elem
    D, N, G = d["d_inner"], d["d_state"], d.get("ngroups", 1)
    per_d, per_bc = T * D * e, T * G * N * e
    ckpt = s.batch * math.ceil(s.seqlen / 32) * D * N * 4
    if kernel == "_scan_fwd_kernel":
        return Cost(4 * per_d + 2 * per_bc + ckpt, 0.0, 5.0 * T * D * N + 8.0 * T * D)
    return Cost(4 * per_d + 2 * per_bc + ckpt + 3 * per_d + 2 * T * G * N * 4, 0.0, 12.0 * T * D * N + 16.0 * T * D)


# ---- conv1d and norms ----

def _conv_cost(kernel: str, d: dict, s: Shape) -> Cost:
    T, e, C, W = s.tokens, s.elem, d["conv_dim"], d.get("conv_width", 4)
    if kernel.endswith("fwd_kernel"):
        return Cost(2 * T * C * e + C * W * 4, 0.0, T * C * (2.0 * W + 4))
    return Cost(3 * T * C * e + C * W * 4, 0.0, T * C * (4.0 * W + 8))


def _norm_cost(kernel: str, d: dict, s: Shape) -> Cost:
    """A row-wise RMS norm over `width`; gated (z read, and dz written backward) when d['gated'];
    with an fp32 residual stream read and written (mamba_ssm's fused add+norm) when d['residual']."""
    T, e, W = s.tokens, s.elem, d["width"]
    gated, residual = d.get("gated", False), d.get("residual", False)
    if "fwd" in kernel:
        nbytes = T * W * (e + e + (e if gated else 0) + (8 if residual else 0))
        return Cost(nbytes, 0.0, T * W * (5.0 + (4 if gated else 0) + (1 if residual else 0)))
    nbytes = T * W * (3 * e + (2 * e if gated else 0) + (8 if residual else 0))
    return Cost(nbytes, 0.0, T * W * (10.0 + (8 if gated else 0)))


_SSD_NAMES = frozenset(name for name, _ in SSD_KERNELS)
NORM_KERNELS = ("_rmsnorm_fwd_kernel", "_rmsnorm_bwd_kernel", "_rmsnorm_bwd_wide_kernel", "_layer_norm_fwd_1pass_kernel",
                 "_layer_norm_bwd_kernel")


def formula_cost(kernel: str, layer: dict | None, shape: Shape, phase: str | None) -> Cost | None:
    """The counted cost of one launch of a known SSM / conv / norm kernel, or None.

    `layer` holds the dims of the innermost module around the launch (`run.module_dims`): a Mamba-2
    mixer's nheads, headdim, ngroups, d_state, chunk_size; a Mamba-1 mixer's d_inner, d_state;
    conv_dim and conv_width; a norm's width (gated / residual flags). None, or a layer without the
    dims a kernel needs, gives None. `phase` tells flashssm's forward kernel in the backward (where
    it recomputes chunk states) from the forward.
    """
    if layer is None:
        return None
    try:
        if kernel in _SSD_NAMES:
            f = SSD_KERNELS.get((kernel, phase)) or SSD_KERNELS.get((kernel, None)) or SSD_KERNELS[(kernel, "forward")]
            return f(layer, shape)
        if kernel in ("_scan_fwd_kernel", "_scan_bwd_kernel"):
            return _scan_cost(kernel, layer, shape)
        if kernel in ("_conv_fwd_kernel", "_conv_bwd_kernel"):
            return _conv_cost(kernel, layer, shape)
        if kernel in NORM_KERNELS:
            return _norm_cost(kernel, layer, shape)
    except KeyError:
        return None
    return None


# ---- from an aten op's recorded input shapes ----

def _numel(dims) -> int:
    return math.prod(dims) if dims else 1


def _tensors(dims_list, types) -> list[tuple[list[int], int]]:
    """(shape, element bytes) of each tensor input; tensor lists flattened; scalars skipped."""
    out = []
    for dims, typ in zip(dims_list, types):
        if isinstance(dims, list) and dims and isinstance(dims[0], list):   # a TensorList
            for sub in dims:
                out.append((sub, ELEMENT_BYTES.get(typ, 4) if isinstance(typ, str) else 4))
        elif isinstance(dims, list) and dims and typ in ELEMENT_BYTES:   # [] is a scalar (or a 0-d tensor)
            out.append((dims, ELEMENT_BYTES[typ]))
    return out


GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_addmm_activation")
SDPA_FWD = ("aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
            "aten::_scaled_dot_product_cudnn_attention", "aten::_flash_attention_forward",
            "aten::_efficient_attention_forward")
SDPA_BWD = tuple(n + "_backward" for n in SDPA_FWD[:3]) + ("aten::_flash_attention_backward",
                                                          "aten::_efficient_attention_backward")
# Ops whose kernels only write (no tensor read).
_WRITE_ONLY = ("aten::fill_", "aten::zero_", "aten::zeros", "aten::ones", "aten::full", "aten::normal_",
               "aten::uniform_", "aten::random_")


def op_cost(op: str, dims_list, types) -> Cost | None:
    """The cost of an aten op from its recorded input shapes and types, or None when unknown."""
    if not dims_list or not types:
        return None
    tensors = _tensors(dims_list, types)
    if op in GEMM_OPS:
        mats = [t for t in tensors if len(t[0]) >= 2]
        if len(mats) < 2:
            return None
        (a, ea), (b, eb) = mats[-2], mats[-1]
        batch = _numel(a[:-2])
        m, k, n = a[-2], a[-1], b[-1]
        nbytes = (_numel(a) * ea + _numel(b) * eb + batch * m * n * ea
                  + sum(_numel(t) * el for t, el in tensors[:len(tensors) - 2]))  # addmm's bias
        return Cost(nbytes, 2.0 * batch * m * n * k, 0.0, "op shapes")
    if op in SDPA_FWD or op in SDPA_BWD:
        if len(tensors) < 3:
            return None
        if op in SDPA_BWD:
            tensors = tensors[1:]            # grad_out first, then q, k, v
        (q, eq), (k, _), (v, _) = tensors[:3]
        if len(q) != 4:
            return None
        b, h, L, dh = q
        S = k[-2]
        causal = 0.5 if L == S else 1.0      # flashssm's and mamba_ssm's attention are causal
        fwd = 4.0 * b * h * L * S * dh * causal
        qkvo = (2 * _numel(q) + _numel(k) + _numel(v)) * eq
        if op in SDPA_BWD:
            return Cost(2 * qkvo + _numel(q) * eq, 2.5 * fwd, 0.0, "op shapes")
        return Cost(qkvo, fwd, 0.0, "op shapes")
    if not tensors:
        return None
    sizes = [_numel(t) * el for t, el in tensors]
    biggest = max(range(len(tensors)), key=lambda i: sizes[i])
    numel = _numel(tensors[biggest][0])
    if op in _WRITE_ONLY:
        return Cost(sizes[biggest], 0.0, 0.0, "op shapes")
    if op in ("aten::copy_", "aten::_to_copy", "aten::to", "aten::clone", "aten::contiguous"):
        return Cost(sum(sizes) if op == "aten::copy_" else 2 * sizes[0], 0.0, 0.0, "op shapes")
    # an element-wise op or a reduction: every input read once, an output the size of the largest input
    return Cost(sum(sizes) + sizes[biggest], 0.0, float(numel), "op shapes")
