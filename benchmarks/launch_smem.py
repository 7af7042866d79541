"""Shared memory of every launch one fuzz case makes, compiled for sm_90 without a GPU, in two steps:

    TRITON_INTERPRET=1 python3 -m benchmarks.launch_smem record --op ssd_scan --case 1288345749 --shapes model FILE
    env -u TRITON_INTERPRET /tmp/t36/bin/python -m benchmarks.launch_smem compile FILE

`record` runs the case under the interpreter (the local Triton) with `_runtime._launch` spied: each distinct launch's
kernel, argument types and values, constexprs and options go to FILE. `compile` (the GPU machine's Triton, 3.6, for its
figures) compiles each for sm_90 as the JIT would specialise it (pointers 16-byte aligned, ints equal to 1 constant,
multiples of 16 marked) and prints its shared memory against the 227 KB a block may take on Hopper: a launch over it
fails there with Triton's OutOfResources (the fifty-ninth session's model-shape fuzz found two). Under the interpreter
the dispatch sees no GPU (`sm_count` 0: the backward always takes its tiles), so choices that depend on the GPU's size
may differ from the GPU's; patch them before `record` where it matters.
"""
import argparse
import importlib
import os
import pickle

LIMIT = 232448


def record(op, case, shapes, path):
    os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch

    from flashssm import _runtime
    from tests.fuzz import fuzz

    seen = {}
    real = _runtime._launch

    def spy(kernel, grid, args, device, meta):
        names = [n for n in kernel.arg_names if n not in meta]
        sig = tuple((n, "*" + str(v.dtype).split(".")[1] if torch.is_tensor(v) else
                     "fp32" if isinstance(v, float) else int(v)) for n, v in zip(names, args))
        seen[(kernel.fn.__module__, kernel.fn.__name__, sig, tuple(sorted(meta.items())))] = None
        return real(kernel, grid, args, device, meta)

    _runtime._launch = spy
    try:
        args = (case, torch.device("cpu")) if shapes == "small" else (case, torch.device("cpu"), shapes)
        desc, out = fuzz.CASES[op](*args)
    finally:
        _runtime._launch = real
    print(desc, out.failures)
    with open(path, "wb") as f:
        pickle.dump(list(seen), f)
    print(f"{len(seen)} launches to {path}")


TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int32": "i32", "int64": "i64", "bool": "i1",
         "uint8": "u8", "float64": "fp64"}


def compile_all(path):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile as tcompile

    with open(path, "rb") as f:
        launches = pickle.load(f)
    for module, name, sig, meta in launches:
        kernel = getattr(importlib.import_module(module), name)
        meta = dict(meta)
        options = {k: v for k, v in meta.items() if k in ("num_warps", "num_stages", "maxnreg")}
        given = {k: v for k, v in meta.items() if k not in options}
        values = dict(sig)
        signature, consts, attrs = {}, {}, {}
        for i, arg in enumerate(kernel.arg_names):
            value = values.get(arg)
            if arg in given:
                signature[arg], consts[arg] = "constexpr", given[arg]
            elif arg not in values:  # a constexpr left to its default
                signature[arg], consts[arg] = "constexpr", next(p for p in kernel.params if p.name == arg).default
            elif isinstance(value, str):
                signature[arg] = "*" + TYPES[value[1:]] if value.startswith("*") else value
                if value.startswith("*"):
                    attrs[(i,)] = [["tt.divisibility", 16]]
            elif value == 1:
                signature[arg], consts[arg] = "constexpr", 1
            else:
                signature[arg] = "i64" if abs(value) >= 2**31 else "i32"
                if value % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        shown = {k: meta[k] for k in ("BLOCK_N", "BLOCK_P", "CHUNK", "SUB", "T", "num_warps", "num_stages")
                 if k in meta}
        try:
            k = tcompile(ASTSource(kernel, signature, consts, attrs), target=GPUTarget("cuda", 90, 32),
                         options=options)
            shared = k.metadata.shared
            print(f"{name:24s} {shared:7d} B{'  OVER' if shared > LIMIT else ''}  {shown}", flush=True)
        except Exception as err:  # a compile failure is a finding too
            print(f"{name:24s} failed: {type(err).__name__}: {str(err).splitlines()[0][:150]}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    r = sub.add_parser("record")
    r.add_argument("--op", required=True)
    r.add_argument("--case", type=int, required=True)
    r.add_argument("--shapes", default="small")
    r.add_argument("file")
    c = sub.add_parser("compile")
    c.add_argument("file")
    args = p.parse_args()
    if args.step == "record":
        record(args.op, args.case, args.shapes, args.file)
    else:
        compile_all(args.file)


if __name__ == "__main__":
    main()
