"""What the benchmark scripts of small ssd_scan training calls share: their inputs (the bench's SSD workload inputs,
2.7B mixer shape, bf16, on the GPU, as leaves that require grad, with D, z and dt_bias added for `options`), the
training call of a workload, and the host time of a call with every kernel launch stubbed out."""

import ast
import contextlib
import importlib
import time

import torch

import flashssm
from flashssm import _runtime
from flashssm.bench.workloads import SSDWorkload


def switch(spec: str, texts=None, default=("False", "True")) -> tuple:
    """A module switch named MODULE.NAME: (the module, NAME, the values of `texts` (Python literals; `default` when
    none), the switch's current value, or None when the module has none yet)."""
    module_name, attr = spec.rsplit(".", 1)
    module = importlib.import_module(module_name)
    return module, attr, [ast.literal_eval(v) for v in (texts or default)], getattr(module, attr, None)


def train_leaves(spec: str, options: bool) -> tuple[dict, dict, torch.Tensor]:
    """(leaves, ssd_scan's keyword options, an incoming gradient dy) for workload `spec` ("BATCHxSEQLEN")."""
    batch, seqlen = (int(v) for v in spec.split("x"))
    inp = SSDWorkload(spec, batch, seqlen).make_inputs("cuda")
    h = inp["x"].shape[2]
    gen = torch.Generator(device="cuda").manual_seed(0)
    extra = dict(D=torch.randn(h, device="cuda", generator=gen), z=torch.randn_like(inp["x"]),
                 dt_bias=torch.randn(h, device="cuda", generator=gen) * 0.5)
    names = ("x", "dt", "A", "B", "C") + (("D", "z", "dt_bias") if options else ())
    leaves = {k: (inp[k] if k in inp else extra[k]).detach().clone().requires_grad_() for k in names}
    return leaves, dict(chunk_size=256, dt_softplus=options), torch.randn_like(inp["x"])


# The 16-bit dtypes the calls below take for x, B, C, z and dy, by the name a script's --dtype gives
# (`add_dtype_argument`).
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def add_dtype_argument(parser) -> None:
    """The scripts' --dtype: the name of the 16-bit leaves' dtype (DTYPES), bf16 by default."""
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="bf16", help="x, B, C and dy's dtype")


def _call_leaves(spec: str, options: bool, z: bool, dtype: str = "bf16"):
    """train_leaves for workload `spec` ("8x4K"-style, K = 1024 tokens), without z unless asked (with the options);
    the 16-bit leaves (x, B, C, z) and dy in `dtype` (a DTYPES name)."""
    batch, seqlen = spec.lower().replace("k", "").split("x")
    leaves, opts, dy = train_leaves(f"{batch}x{int(seqlen) * 1024}", options)
    if not (z and options):
        leaves.pop("z", None)
    if DTYPES[dtype] != torch.bfloat16:
        leaves = {k: (v.detach().to(DTYPES[dtype]).requires_grad_() if v.dtype == torch.bfloat16 else v)
                  for k, v in leaves.items()}
        dy = dy.to(DTYPES[dtype])
    return leaves, opts, dy


def training_call(spec: str, options: bool, z: bool = False, dtype: str = "bf16"):
    """(step, names) for workload `spec` ("8x4K"-style, K = 1024 tokens): step() runs ssd_scan forward and the
    gradients of its leaves `names` through autograd; without z unless asked (with z the forward stores no states for
    the backward), z with the options alone."""
    leaves, opts, dy = _call_leaves(spec, options, z, dtype)
    names = list(leaves)

    def step():
        y = flashssm.ssd_scan(**leaves, **opts)
        return torch.autograd.grad(y, [leaves[k] for k in names], dy)

    return step, names


def forward_call(spec: str, options: bool, z: bool = False, dtype: str = "bf16"):
    """training_call's forward alone, on leaves that need no gradient (an inference call of ssd_scan)."""
    leaves, opts, _ = _call_leaves(spec, options, z, dtype)
    plain = {k: v.detach() for k, v in leaves.items()}
    return lambda: flashssm.ssd_scan(**plain, **opts)


@contextlib.contextmanager
def launches_stubbed():
    """Every kernel launch of the package replaced by a no-op inside the block: what is left is host work."""
    real = _runtime.launch
    _runtime.launch = lambda *args, **kw: None
    try:
        yield
    finally:
        _runtime.launch = real


def stubbed_host_us(step, calls: int) -> float:
    """Microseconds of host time a call of `step` with the launches stubbed out (20 calls first, then `calls` timed);
    run the real kernels once before, so that they are compiled and cached."""
    with launches_stubbed():
        for _ in range(20):
            step()
        t = time.perf_counter()
        for _ in range(calls):
            step()
        return (time.perf_counter() - t) / calls * 1e6
