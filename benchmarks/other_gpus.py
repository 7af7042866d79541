"""What flashssm's kernels ask of a GPU other than Hopper, found without one: every launch of the public ops, compiled
for Ampere, Ada or Blackwell as that GPU would compile it, its shared memory against the GPU's limit.

    env -u TRITON_INTERPRET python -m benchmarks.other_gpus [--gpu a100 --gpu l4 ...] [--quick] [--json FILE]

A launch needs no more shared memory than its GPU lets one block opt in to (A100 163 KB, Ada and consumer Blackwell 99
KB, Hopper 227 KB): past that, Triton refuses it at its first launch (OutOfResources), inside the op. The project's
GPU machine is a Hopper, where every kernel fits; this finds what would not fit elsewhere. How: the ops run on meta
tensors (shapes, strides and dtypes; no memory) as `_runtime.plan_ahead`'s dry run runs a backward, with the device's
properties (SM count, capability, shared memory) those of the GPU named and Triton's active driver a stand-in whose
target is that GPU's; each launch the ops make is compiled there (`JITFunction.warmup`, as compiling ahead does) instead
of launched, and its shared memory read from the compiled kernel. The wrappers choose their launches exactly as they
would on that GPU: the Hopper-only Gluon forward, for one, is refused by its capability check.

What it cannot see: a launch made outside `_runtime.launch` (none in the ops it runs), a choice read from a tensor's
values (a packed batch's offsets are host values here), and anything a real GPU would do differently at run time
(speed, and a compiler's own failure at launch, which would show here as a failed compile).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time

if os.environ.get("TRITON_INTERPRET") == "1":
    sys.exit("run without TRITON_INTERPRET: the kernels must be compiled, not interpreted")

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from flashssm import _runtime  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Gpu:
    name: str
    capability: tuple[int, int]
    sms: int
    shared: int  # bytes one block may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin)


# CUDA's programming guide, "Technical Specifications per Compute Capability": 163 KB on 8.0, 99 KB on 8.6, 8.9 and
# 12.0, 227 KB on 9.0 (one block's opt-in limit, 1 KB below the SM's)
GPUS = {
    "a100": Gpu("A100", (8, 0), 108, 163 * 1024),
    "a10": Gpu("A10 / RTX 3090", (8, 6), 82, 99 * 1024),
    "l4": Gpu("L4 / RTX 4090", (8, 9), 58, 99 * 1024),
    "rtx5090": Gpu("RTX 5090", (12, 0), 170, 99 * 1024),
    "h100": Gpu("H100", (9, 0), 132, 227 * 1024),
}


class _StandInDriver:
    """Triton's active driver for compiles only: the device 0 of the named GPU's target; nothing loads or launches."""

    def __init__(self, gpu: Gpu):
        self.target = GPUTarget("cuda", gpu.capability[0] * 10 + gpu.capability[1], 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return self.target

    def is_active(self):
        return True


@dataclasses.dataclass
class Launch:
    kernel: str
    shared: int
    warps: int
    stages: int
    constexprs: str
    where: str  # the op call that made it
    error: str = ""
    fitted: int = -1  # past the GPU's limit: the shared memory with fewer stages (`_runtime.cached_launch`)
    fitted_stages: int = 0


class Survey:
    """The launches the ops make on meta tensors, compiled for `gpu` (one process a GPU: Triton's per-device caches
    hold one target)."""

    def __init__(self, gpu: Gpu):
        self.gpu = gpu
        self.launches: list[Launch] = []
        self.seen: dict = {}
        self.references: list[str] = []
        self.where = ""

    def compile(self, kernel, grid, args, device, meta):
        dtypes = [a.dtype if isinstance(a, torch.Tensor) else a for a in args]
        key = (kernel.fn.__name__ if hasattr(kernel, "fn") else str(kernel),
               tuple(str(d) if isinstance(d, torch.dtype) else (d if isinstance(d, (bool, float, str)) else
                                                                 _int_class(d)) for d in dtypes),
               tuple(sorted((k, str(v)) for k, v in meta.items())))
        if key in self.seen:
            return None
        name = getattr(kernel, "__name__", None) or kernel.fn.__name__
        consts = ", ".join(f"{k}={v}" for k, v in sorted(meta.items()))
        try:
            compiled = kernel.warmup(*dtypes, grid=grid, **meta)
            found = Launch(name, int(compiled.metadata.shared), compiled.metadata.num_warps,
                           compiled.metadata.num_stages, consts, self.where)
            # as `_runtime.cached_launch` does where Triton refuses a launch for want of shared memory
            stages = meta.get("num_stages", _runtime.DEFAULT_STAGES)
            while compiled.metadata.shared > self.gpu.shared and stages > 1:
                stages -= 1
                compiled = kernel.warmup(*dtypes, grid=grid, **{**meta, "num_stages": stages})
                found.fitted, found.fitted_stages = int(compiled.metadata.shared), stages
        except Exception as e:  # noqa: BLE001 (a compile that fails there is a finding, not a crash of the survey)
            found = Launch(name, -1, meta.get("num_warps", 4), meta.get("num_stages", 0), consts, self.where,
                           f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300] if str(e).strip() else ''}")
        self.seen[key] = found
        self.launches.append(found)
        return None


def _int_class(v):
    """An int argument as Triton specialises it: 1, divisible by 16, or other (its value does not change the code)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return "1" if v == 1 else ("16k" if v % 16 == 0 else "int")
    return str(v)


@contextlib.contextmanager
def as_gpu(gpu: Gpu, survey: Survey):
    """The ops' device queries answer as `gpu` would, their launches on meta tensors compile for it (`survey`)."""
    saved = {name: getattr(_runtime, name) for name in ("_cuda_sm_count", "_cuda_shared_memory", "cuda_capability",
                                                         "_cuda_name", "kernel_device", "device_blocker",
                                                         "_compile_ahead")}
    _runtime._cuda_sm_count = lambda index: gpu.sms
    _runtime._cuda_shared_memory = lambda index: gpu.shared
    _runtime.cuda_capability = lambda index: gpu.capability
    _runtime._cuda_name = lambda index: gpu.name
    _runtime.kernel_device = lambda t: t.is_meta or saved["kernel_device"](t)
    _runtime.device_blocker = lambda x: None if x.is_meta else saved["device_blocker"](x)
    _runtime._compile_ahead = survey.compile
    active = triton.runtime.driver._active  # (None until a driver is asked for; there may be none without a GPU)
    triton.runtime.driver.set_active(_StandInDriver(gpu))
    _runtime._plan_state.device = torch.device("cuda", 0)
    from flashssm.ops.selective_scan import reference as scan_reference
    from flashssm.ops.ssd import reference as ssd_reference

    references = [(ssd_reference, "ssd_chunked_checked"), (scan_reference, "selective_scan_checked")]
    kept = [getattr(module, name) for module, name in references]
    for module, name in references:  # (the op chose its reference: no kernel there, and none runs on meta tensors)
        setattr(module, name, _takes_reference)
    try:
        yield
    finally:
        for (module, name), fn in zip(references, kept):
            setattr(module, name, fn)
        _runtime._plan_state.device = None
        triton.runtime.driver._active = active
        for name, value in saved.items():
            setattr(_runtime, name, value)


class TakesReference(Exception):
    """The op took its plain-PyTorch reference on this GPU (a case the kernels refuse there: `ssd.training_blocker`)."""


def _takes_reference(*args, **kwargs):
    raise TakesReference


def meta(*shape, dtype=torch.bfloat16, grad=True):
    t = torch.empty(shape, dtype=dtype, device="meta")
    return t.requires_grad_(grad) if dtype.is_floating_point else t


def _train(out, inputs):
    """The backward of `out` (a tensor or a tuple of them) for every input that wants a gradient."""
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None and o.requires_grad]
    wanted = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
    torch.autograd.grad(outs, wanted, [torch.empty_like(o) for o in outs], allow_unused=True)


def ssd_case(batch, seqlen, h, p, n, g, dtype, chunk=256, cu=None, state_dtype=None, extras=True):
    """(label, call): ssd_scan's inference call, then its training call (forward and backward), on meta tensors of
    this shape (x (batch, seqlen, h, p), B and C with g groups of dstate n); `extras`: z, D, dt_bias, softplus and
    initial states; `cu`: packed sequences' offsets (batch 1)."""
    from flashssm import ssd_scan

    def call():
        x = meta(batch, seqlen, h, p, dtype=dtype)
        dt = meta(batch, seqlen, h, dtype=dtype)
        A = meta(h, dtype=torch.float32)
        B, C = meta(batch, seqlen, g, n, dtype=dtype), meta(batch, seqlen, g, n, dtype=dtype)
        D = meta(h, dtype=torch.float32) if extras else None
        z = meta(batch, seqlen, h, p, dtype=dtype) if extras else None
        dt_bias = meta(h, dtype=torch.float32) if extras else None
        init = meta(len(cu) - 1 if cu is not None else batch, h, p, n, dtype=torch.float32) if extras else None
        cu_t = torch.tensor(cu, dtype=torch.int32) if cu is not None else None
        with torch.no_grad():  # (inference first: a training call may take the reference)
            ssd_scan(x, dt, A, B, C, chunk_size=chunk, D=D, z=z, dt_bias=dt_bias, dt_softplus=extras,
                     cu_seqlens=cu_t, state_dtype=state_dtype)
        y = ssd_scan(x, dt, A, B, C, chunk_size=chunk, D=D, z=z, dt_bias=dt_bias, dt_softplus=extras,
                     initial_states=init, cu_seqlens=cu_t, return_final_states=True, state_dtype=state_dtype)
        _train(y, (x, dt, A, B, C, D, z, dt_bias, init))
    label = (f"ssd_scan {batch}x{seqlen} h{h} p{p} n{n} g{g} {str(dtype)[6:]} Q{chunk}"
             f"{' packed' if cu else ''}{' states ' + str(state_dtype)[6:] if state_dtype else ''}"
             f"{'' if extras else ' plain'}")
    return label, call


def ssd_cases(quick: bool):
    """(label, call) for ssd_scan: the 2.7B and 130M shapes, the widest one (headdim 128 x dstate 256), the narrowest,
    many chains and few, each input dtype, fp16 states, z and D, groups, a packed batch, other chunk sizes."""
    shapes = [(80, 64, 128, 1), (24, 64, 128, 1), (16, 128, 256, 1), (8, 32, 16, 2), (32, 64, 64, 8)]
    lengths = [(1, 2048), (8, 4096), (1, 32768)]
    dtypes = [torch.bfloat16, torch.float16, torch.float32]
    if quick:
        shapes, lengths, dtypes = shapes[:1] + shapes[2:3], lengths[:2], dtypes[:1]

    for h, p, n, g in shapes:
        for batch, seqlen in lengths:
            for dtype in dtypes:
                yield ssd_case(batch, seqlen, h, p, n, g, dtype)
    yield ssd_case(1, 2048, 80, 64, 128, 1, torch.bfloat16, extras=False)
    yield ssd_case(1, 2048, 80, 64, 128, 1, torch.bfloat16, state_dtype=torch.float16)
    yield ssd_case(1, 2048, 80, 64, 128, 1, torch.float16, state_dtype=torch.float16)
    yield ssd_case(1, 8192, 80, 64, 128, 1, torch.bfloat16, cu=[0, 1000, 5000, 8192])
    for chunk in (64, 128):
        yield ssd_case(2, 4096, 80, 64, 128, 1, torch.bfloat16, chunk=chunk)
        yield ssd_case(2, 4096, 16, 128, 256, 1, torch.float32, chunk=chunk)


def scan_cases(quick: bool):
    """(label, call) for selective_scan: Mamba-1's 2.8B and 130M widths, dstate 16, 128 and 256, every input dtype,
    grouped B and C, a packed batch, short and long sequences."""
    from flashssm import selective_scan

    shapes = [(5120, 16, 0), (1536, 16, 0), (1024, 128, 0), (512, 256, 0), (1024, 16, 4)]
    lengths = [(8, 2048), (1, 32768), (2, 100)]
    dtypes = [torch.bfloat16, torch.float16, torch.float32]
    if quick:
        shapes, lengths, dtypes = shapes[:1] + shapes[2:4], lengths[:2], dtypes[:1]

    def case(batch, seqlen, dim, n, groups, dtype, cu=None):
        def call():
            u, delta = meta(batch, dim, seqlen, dtype=dtype), meta(batch, dim, seqlen, dtype=dtype)
            A = meta(dim, n, dtype=torch.float32)
            bc = (batch, groups, n, seqlen) if groups else (batch, n, seqlen)
            B, C = meta(*bc, dtype=dtype), meta(*bc, dtype=dtype)
            D, bias = meta(dim, dtype=torch.float32), meta(dim, dtype=torch.float32)
            z = meta(batch, dim, seqlen, dtype=dtype)
            kw = {} if cu is None else {"cu_seqlens": torch.tensor(cu, dtype=torch.int32)}
            y = selective_scan(u, delta, A, B, C, D=D, z=z, delta_bias=bias, delta_softplus=True,
                               return_last_state=True, **kw)
            _train(y, (u, delta, A, B, C, D, z, bias))
        label = f"selective_scan {batch}x{seqlen} dim{dim} n{n}{f' g{groups}' if groups else ''} {str(dtype)[6:]}"
        return label + (" packed" if cu else ""), call

    for dim, n, groups in shapes:
        for batch, seqlen in lengths:
            for dtype in dtypes:
                yield case(batch, seqlen, dim, n, groups, dtype)
    yield case(1, 8192, 5120, 16, 0, torch.bfloat16, cu=[0, 1000, 5000, 8192])


def other_cases(quick: bool):
    """(label, call) for causal_conv1d, rmsnorm_gated and the decoding steps at the models' widths."""
    from flashssm import causal_conv1d, causal_conv1d_update, rmsnorm_gated, selective_scan_step, ssd_step

    for dtype in ([torch.bfloat16] if quick else [torch.bfloat16, torch.float16, torch.float32]):
        for dim, seqlen in ((5376, 4096), (10240, 2048), (1536, 32768)):
            def conv(dim=dim, seqlen=seqlen, dtype=dtype):
                x, w, b = meta(2, dim, seqlen, dtype=dtype), meta(dim, 4, dtype=dtype), meta(dim, dtype=dtype)
                _train(causal_conv1d(x, w, b, activation="silu"), (x, w, b))
                with torch.no_grad():
                    causal_conv1d_update(meta(2, dim, dtype=dtype, grad=False), meta(2, dim, 3, dtype=dtype,
                                                                                        grad=False), w, b, "silu")
            yield f"causal_conv1d 2x{seqlen} dim{dim} {str(dtype)[6:]}", conv
        for width, groups in ((5120, 1), (2048, 8), (8192, 1)):
            def norm(width=width, groups=groups, dtype=dtype):
                x, z, w = meta(4096, width, dtype=dtype), meta(4096, width, dtype=dtype), meta(width, dtype=dtype)
                _train(rmsnorm_gated(x, w, z=z, group_size=width // groups), (x, z, w))
            yield f"rmsnorm_gated 4096x{width} groups {groups} {str(dtype)[6:]}", norm
        def steps(dtype=dtype):
            with torch.no_grad():
                state = meta(4, 80, 64, 128, dtype=torch.float32, grad=False)
                ssd_step(state, meta(4, 80, 64, dtype=dtype, grad=False), meta(4, 80, dtype=dtype, grad=False),
                         meta(80, dtype=torch.float32, grad=False), meta(4, 1, 128, dtype=dtype, grad=False),
                         meta(4, 1, 128, dtype=dtype, grad=False))
                s1 = meta(4, 5120, 16, dtype=torch.float32, grad=False)
                selective_scan_step(s1, meta(4, 5120, dtype=dtype, grad=False), meta(4, 5120, dtype=dtype, grad=False),
                                    meta(5120, 16, dtype=torch.float32, grad=False), meta(4, 16, dtype=dtype,
                                                                                          grad=False),
                                    meta(4, 16, dtype=dtype, grad=False))
        yield f"decoding steps {str(dtype)[6:]}", steps


def survey(gpu: Gpu, ops: list[str], quick: bool, verbose: bool) -> tuple[Survey, list[tuple[str, str]]]:
    found = Survey(gpu)
    failed = []
    sources = {"ssd_scan": ssd_cases, "selective_scan": scan_cases, "other": other_cases}
    with as_gpu(gpu, found):
        for op in ops:
            for label, call in sources[op](quick):
                found.where = label
                start = time.perf_counter()
                before = len(found.launches)
                try:
                    call()
                except TakesReference:
                    found.references.append(label)
                except Exception as e:  # noqa: BLE001 (an op that fails on meta tensors: said, the rest goes on)
                    failed.append((label, f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"))
                if verbose:
                    print(f"  {label}: {len(found.launches) - before} new launches, "
                          f"{time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    return found, failed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu", action="append", choices=sorted(GPUS), help="default: a100, l4")
    p.add_argument("--op", action="append", choices=("ssd_scan", "selective_scan", "other"),
                   help="default: all three")
    p.add_argument("--quick", action="store_true", help="fewer shapes and dtypes")
    p.add_argument("--json", help="write every launch found here")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    over = 0
    report = {}
    for key in args.gpu or ["a100", "l4"]:
        gpu = GPUS[key]
        start = time.perf_counter()
        found, failed = survey(gpu, args.op or ["ssd_scan", "selective_scan", "other"], args.quick, args.verbose)
        print(f"\n{gpu.name} (sm_{gpu.capability[0]}{gpu.capability[1]}, {gpu.sms} SMs, {gpu.shared // 1024} KB of "
              f"shared memory a block): {len(found.launches)} launches compiled in {time.perf_counter() - start:.0f} s")
        largest: dict[str, Launch] = {}
        for launch in found.launches:
            if launch.kernel not in largest or launch.shared > largest[launch.kernel].shared:
                largest[launch.kernel] = launch
        print(f"  {'kernel':26} {'largest KB':>10}  where")
        for name, launch in sorted(largest.items()):
            print(f"  {name:26} {launch.shared / 1024:10.1f}  {launch.where}")
        cut = [lc for lc in found.launches if lc.shared > gpu.shared and 0 <= lc.fitted <= gpu.shared]
        bad = [lc for lc in found.launches if (lc.shared > gpu.shared and lc not in cut) or lc.error]
        over += len(bad) + len(failed)
        for lc in cut:
            print(f"  fewer stages: {lc.kernel} {lc.shared / 1024:.1f} KB at {lc.stages} stages, "
                  f"{lc.fitted / 1024:.1f} KB at {lc.fitted_stages}, at {lc.where}")
        for lc in bad:
            fewest = f"; {lc.fitted / 1024:.1f} KB at {lc.fitted_stages} stages" if lc.fitted >= 0 else ""
            print(f"  OVER: {lc.kernel} {lc.shared / 1024:.1f} KB ({lc.error or 'past the limit'}{fewest}) at "
                  f"{lc.where}; {lc.constexprs}")
        for label, why in failed:
            print(f"  FAILED ON META TENSORS: {label}: {why}")
        for label in found.references:
            print(f"  takes the reference: {label}")
        if not bad and not failed:
            print("  every launch fits")
        report[key] = {"gpu": dataclasses.asdict(gpu), "launches": [dataclasses.asdict(lc) for lc in found.launches],
                       "failed": failed, "references": found.references}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
