"""Shared memory of every launch one fuzz case makes, compiled for sm_90 without a GPU, in two steps:

    TRITON_INTERPRET=1 python3 -m benchmarks.launch_smem record --op ssd_scan --case 1288345749 --shapes model FILE
    env -u TRITON_INTERPRET /tmp/t36/bin/python -m benchmarks.launch_smem compile FILE

`record` runs the case under the interpreter (the local Triton) with `_runtime._launch` spied: each distinct launch's
kernel, argument types and values, constexprs and options go to FILE. `compile` (the GPU machine's Triton, 3.6, for its
figures) compiles each for sm_90 as the JIT would specialise it (`offline_ssd_forward.compile_specialised`: pointers
16-byte aligned, ints equal to 1 constant, multiples of 16 marked) and prints its shared memory against the 227 KB a
block may take on Hopper: a launch over it fails there with Triton's OutOfResources (the fifty-ninth session's
model-shape fuzz found two). Under the interpreter the dispatch sees no GPU (`sm_count` 0: the backward always takes
its tiles), so choices that depend on the GPU's size may differ from the GPU's; patch them before `record` where it
matters.
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

    if op not in fuzz.CASES:
        raise SystemExit(f"--op: one of {', '.join(fuzz.CASES)}, not {op!r}")
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
    from benchmarks.offline_ssd_forward import compile_specialised

    with open(path, "rb") as f:
        launches = pickle.load(f)
    for module, name, sig, meta in launches:
        kernel = getattr(importlib.import_module(module), name)
        meta = dict(meta)
        options = ("num_warps", "num_stages", "maxnreg")
        consts = {k: v for k, v in meta.items() if k not in options}
        values = dict(sig)
        pointers = {k: "*" + TYPES[v[1:]] for k, v in values.items() if isinstance(v, str) and v.startswith("*")}
        floats = [k for k, v in values.items() if v == "fp32"]
        ints = {k: v for k, v in values.items() if not isinstance(v, str)}
        shown = {k: meta[k] for k in ("BLOCK_N", "BLOCK_P", "CHUNK", "SUB", "T", "num_warps", "num_stages")
                 if k in meta}
        try:
            k = compile_specialised(kernel, consts, ints, pointers.__getitem__, meta.get("num_warps", 4),
                                    meta.get("num_stages"), meta.get("maxnreg"), floats=floats)
            shared = k.metadata.shared
            print(f"{name:24s} {shared:7d} B{'  OVER' if shared > LIMIT else ''}  {shown}", flush=True)
        except Exception as err:  # a compile failure is a finding too
            print(f"{name:24s} failed: {type(err).__name__}: {str(err).splitlines()[0][:150]}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    r = sub.add_parser("record")
    r.add_argument("--op", required=True, help="a fuzz op (tests/fuzz/fuzz.py's CASES)")
    r.add_argument("--case", type=int, required=True)
    r.add_argument("--shapes", default="small", choices=("small", "model"))
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
