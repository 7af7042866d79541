"""Replay one fuzz case in detail: every compared output and gradient with its error, the full traceback of an
exception (the fuzzer's line keeps only the innermost frame), under each setting of the package's switches asked for.

    python -m benchmarks.replay_fuzz_case --op ssd_scan --case 4057396612 --shapes model \
        --set forward_gluon.ENABLED=False --set backward_chain.TILES_STATES_FROM_FORWARD=False

Each --set (module under flashssm.ops.ssd or flashssm.ops.selective_scan, a global, a Python literal) is one more run
after the run as the package stands; "a,b" in one --set changes both at once. --dtype replaces the input dtype the case
drew by another, every other draw the same (the dtype lists keep their length), so that one case can be read at fp16
or fp32 too, or on the CPU where the interpreter's bf16 products are wrong (a case the GPU found: --drawn-on cuda).
"""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import traceback

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from tests.fuzz import fuzz  # noqa: E402


def _module(name: str):
    for package in ("flashssm.ops.ssd", "flashssm.ops.selective_scan", "flashssm"):
        try:
            return importlib.import_module(f"{package}.{name}")
        except ImportError:
            continue
    raise SystemExit(f"--set: no module {name!r} under flashssm.ops.ssd, flashssm.ops.selective_scan or flashssm")


def _changes(spec: str) -> list[tuple[object, str, object]]:
    out = []
    for part in spec.split(","):
        target, eq, value = part.partition("=")
        if not eq or "." not in target:
            raise SystemExit(f"--set: expected module.NAME=literal, got {part!r}")
        module, name = target.rsplit(".", 1)
        mod = _module(module)
        if not hasattr(mod, name):
            raise SystemExit(f"--set: {module} has no {name}")
        try:
            out.append((mod, name, ast.literal_eval(value)))
        except (ValueError, SyntaxError):
            raise SystemExit(f"--set: {value!r} is not a Python literal") from None
    return out


def _force_dtype(dtype: torch.dtype, drawn_on_gpu: bool) -> None:
    """Every draw of an input dtype gives `dtype`; the lists keep the lengths they had where the case was drawn (the
    GPU's lists hold bf16 too), so the draws after them are as there."""
    drawn = fuzz.input_dtypes
    fuzz.input_dtypes = lambda on_gpu: [dtype] * len(drawn(drawn_on_gpu))
    fuzz.MODEL_DTYPES = [dtype] * len(fuzz.MODEL_DTYPES)


def run(op: str, case: int, device, shapes: str) -> None:
    real = fuzz.compare

    def logged(out, name, got, want, tol, *args, **kwargs):
        if torch.is_tensor(got) and torch.is_tensor(want) and got.shape == want.shape:
            got, want = got.detach(), want.detach()
            err = fuzz.rel_err(got, want)
            diff = float((got.double() - want).abs().max())
            small = f" got {got.double().flatten()[:4].tolist()} want {want.flatten()[:4].tolist()}"
            print(f"  {name:16s} rel {err:.3e} (tol {tol:.1e}) max|diff| {diff:.3e} |want| {float(want.norm()):.3e}"
                  + (small if want.numel() <= 8 else ""), flush=True)
        elif got is None or want is None:
            print(f"  {name:16s} got {'None' if got is None else 'a tensor'}, "
                  f"want {'None' if want is None else 'a tensor'}")
        return real(out, name, got, want, tol, *args, **kwargs)

    fuzz.compare = logged
    try:
        args = (case, device) if shapes == "small" else (case, device, shapes)
        desc, out = fuzz.CASES[op](*args)
        print(f"  {desc}")
        print("  failures: " + ("; ".join(out.failures) if out.failures else "none"), flush=True)
    except Exception:
        traceback.print_exc()
    finally:
        fuzz.compare = real


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", required=True, choices=list(fuzz.CASES))
    parser.add_argument("--case", type=int, required=True)
    parser.add_argument("--shapes", choices=("small", "model"), default="small")
    parser.add_argument("--set", action="append", default=[], help="module.NAME=literal[,module.NAME=literal]")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=("float32", "float16", "bfloat16"),
                        help="the input dtype in place of the drawn one (the other draws unchanged)")
    parser.add_argument("--drawn-on", choices=("cpu", "cuda"),
                        help="with --dtype: where the case was found (its draws differ), if not --device (ssd_step "
                             "cases draw their state dtype by the device too: replay those where they were found)")
    args = parser.parse_args(argv)
    if args.drawn_on and not args.dtype:
        parser.error("--drawn-on goes with --dtype (without it the case draws its dtypes as on --device)")
    device = torch.device(args.device)
    if args.dtype:
        _force_dtype(getattr(torch, args.dtype), (args.drawn_on or device.type) == "cuda")
    for spec in [None, *args.set]:
        changes = _changes(spec) if spec else []
        before = [(mod, name, getattr(mod, name)) for mod, name, _ in changes]
        for mod, name, value in changes:
            setattr(mod, name, value)
        print(f"== {args.op} case {args.case}, {spec or 'as the package stands'}", flush=True)
        try:
            run(args.op, args.case, device, args.shapes)
        finally:
            for mod, name, value in before:
                setattr(mod, name, value)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
