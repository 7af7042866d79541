"""Which class of operator a GPU kernel belongs to, as the characterisation paper groups them.

A kernel is classified by, in order: the operator that launched it (the innermost profiler range
that names a known operator: a flashssm or mamba_ssm autograd function, an aten op), so that the
small helper kernels an operator launches (a zero fill, a sum of partials) count towards it; then
the kernel's own name. Classes: GEMM, SSM scan, conv1d, norm, attention, element-wise, other.
"""

from __future__ import annotations

import re

CLASSES = ("GEMM", "SSM scan", "conv1d", "norm", "attention", "element-wise", "other")

# Operators (profiler range names) whose every kernel belongs to one class. Matched against the
# range name with re.search; the first rule that matches wins.
_OP_RULES: tuple[tuple[str, str], ...] = (
    (r"^flashssm::(ssd_scan|selective_scan)|^(SSDScan|SelectiveScan)Function", "SSM scan"),  # (eager: the Functions)
    (r"MambaChunkScanCombinedFn|ChunkScanFn|ChunkStateFn|StatePassingFn|SelectiveScanFn|MambaInnerFn", "SSM scan"),
    (r"CausalConv1dFn|causal_conv1d", "conv1d"),
    (r"aten::(cudnn_|_|mkldnn_|miopen_)?convolution", "conv1d"),
    (r"RMSNormGatedFn|LayerNormFn|RMSNormFn|aten::(native_)?(layer_norm|rms_norm|_fused_rms_norm)", "norm"),
    (r"scaled_dot_product|flash_attention|efficient_attention|cudnn_attention|FlashAttn", "attention"),
    (r"^aten::(mm|addmm|bmm|baddbmm|_scaled_mm|addbmm|_addmm_activation)$", "GEMM"),
)

# Kernel names, when no operator rule matched.
_KERNEL_RULES: tuple[tuple[str, str], ...] = (
    # flashssm's kernels
    (r"^_(ssd|scan)_(fwd|bwd|step)_kernel|^_bc_tiles_kernel|^_tiles(_[a-z]+)?_kernel|^_dstates_kernel", "SSM scan"),
    (r"^_conv_(fwd|bwd|update)_kernel", "conv1d"),
    (r"^_rmsnorm_(fwd|bwd)", "norm"),
    # mamba_ssm's Triton SSD and its CUDA selective scan
    (r"^_(chunk_cumsum|bmm_chunk|chunk_state|state_passing|chunk_scan|chunk_scan_chunk_state)_", "SSM scan"),
    (r"selective_scan|selective_state_update|ssd_", "SSM scan"),
    (r"causal_conv1d", "conv1d"),
    (r"^_layer_norm_(fwd|bwd)|layer_norm|rms_norm|RowwiseMoments|ComputeInternalGradients", "norm"),
    (r"flash_fwd|flash_bwd|fmha|attention|attn", "attention"),
    (r"gemm|gemv|nvjet|cutlass|xmma|wgmma|s16816|h16816|^triton_tem_|cublas", "GEMM"),
    (r"conv|implicit_convolve|dgrad|wgrad|fprop", "conv1d"),
    (r"elementwise|multi_tensor_apply|fused_adam|Adam|Sgd|CatArrayBatchedCopy|copy_kernel|fill_kernel|"
     r"^triton_poi_|index_elementwise|vectorized|unrolled|where_kernel", "element-wise"),
)

_OP_COMPILED = tuple((re.compile(p), c) for p, c in _OP_RULES)
_KERNEL_COMPILED = tuple((re.compile(p), c) for p, c in _KERNEL_RULES)


def op_class(op_name: str) -> str | None:
    """The class every kernel of this operator belongs to, or None when the operator says nothing."""
    for pattern, cls in _OP_COMPILED:
        if pattern.search(op_name):
            return cls
    return None


def kernel_class(kernel_name: str) -> str:
    """The class of a kernel from its name alone ('other' when no rule knows it)."""
    for pattern, cls in _KERNEL_COMPILED:
        if pattern.search(kernel_name):
            return cls
    return "other"


def classify(kernel_name: str, op_stack: list[str] = (), kind: str = "kernel") -> str:
    """A kernel's class from the operator ranges enclosing its launch (outermost first) and its name.

    Copies and memsets the runtime does (kind 'memcpy'/'memset') are 'other' unless an operator of
    a known class launched them. The innermost operator with a class wins: a GEMM inside an SSM
    operator's backward is part of the SSM operator.
    """
    for op in reversed(list(op_stack)):
        cls = op_class(op)
        if cls is not None:
            return cls
    if kind != "kernel":
        return "other"
    return kernel_class(kernel_name)
