"""Shared memory of every launch one public call makes, compiled for sm_90 without a GPU: the call runs under the
interpreter with `_runtime.launch` recording each kernel, its arguments and its constexprs, then each distinct launch is
compiled by triton.compile for sm_90 (argument types from the recorded values) and its shared memory compared with the
227 KB a block may take on Hopper. A launch over it fails on the GPU with Triton's OutOfResources (the fifty-ninth
session's fuzz at model shapes found two). Use the GPU's Triton (3.6) for its figures.

    env -u TRITON_INTERPRET /tmp/t36/bin/python -m benchmarks.launch_smem --op ssd_scan --case 1288345749 --shapes model
"""
import argparse
import os

os.environ["TRITON_INTERPRET"] = "1"  # the call runs on the CPU; the compiles below target sm_90

import torch  # noqa: E402

from flashssm import _runtime  # noqa: E402
from tests.fuzz import fuzz  # noqa: E402

LIMIT = 232448
TYPES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.int32: "i32",
         torch.int64: "i64", torch.float64: "fp64", torch.bool: "i1", torch.uint8: "u8"}


def record(op, case, shapes):
    seen = {}
    real = _runtime._launch

    def spy(kernel, grid, args, device, meta):
        names = [n for n in kernel.arg_names if n not in meta]
        sig = []
        for name, value in zip(names, args):
            if torch.is_tensor(value):
                sig.append((name, "*" + TYPES[value.dtype]))
            elif isinstance(value, float):
                sig.append((name, "fp32"))
            else:
                sig.append((name, int(value)))
        key = (kernel.fn.__name__ if hasattr(kernel, "fn") else str(kernel), tuple(sig),
               tuple(sorted((k, v) for k, v in meta.items())))
        seen.setdefault(key, kernel)
        return real(kernel, grid, args, device, meta)

    _runtime._launch = spy
    try:
        for n in ("repeated_call", "packed_nan_stays"):
            setattr(fuzz, n, lambda *a, **k: None)
        args = (case, torch.device("cpu")) if shapes == "small" else (case, torch.device("cpu"), shapes)
        desc, out = fuzz.CASES[op](*args)
    finally:
        _runtime._launch = real
    return desc, seen


def compile_for_hopper(kernel, sig, meta):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile as tcompile

    signature, consts, attrs = {}, {}, {}
    options = {k: v for k, v in meta.items() if k in ("num_warps", "num_stages", "maxnreg")}
    constexprs = {k: v for k, v in meta.items() if k not in options}
    values = dict(sig)
    for i, name in enumerate(kernel.arg_names):
        if name in constexprs:
            signature[name], consts[name] = "constexpr", constexprs[name]
        elif name not in values:  # a constexpr left to its default
            param = next(p for p in kernel.params if p.name == name)
            signature[name], consts[name] = "constexpr", param.default
        elif isinstance(values[name], str):
            signature[name] = values[name]
            if values[name].startswith("*"):
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif values[name] == 1:
            signature[name], consts[name] = "constexpr", 1
        else:
            signature[name] = "i64" if abs(values[name]) >= 2**31 else "i32"
    return tcompile(ASTSource(kernel, signature, consts, attrs), target=GPUTarget("cuda", 90, 32), options=options)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", required=True)
    p.add_argument("--case", type=int, required=True)
    p.add_argument("--shapes", default="small")
    args = p.parse_args()
    desc, seen = record(args.op, args.case, args.shapes)
    print(desc)
    del os.environ["TRITON_INTERPRET"]
    for (name, sig, meta), kernel in seen.items():
        try:
            k = compile_for_hopper(kernel, sig, dict(meta))
            shared = k.metadata.shared
            print(f"{name:28s} {shared:7d} B{'  OVER' if shared > LIMIT else ''}  {dict(meta)}", flush=True)
        except Exception as err:
            print(f"{name:28s} failed: {type(err).__name__}: {str(err).splitlines()[0][:150]}", flush=True)


if __name__ == "__main__":
    main()
