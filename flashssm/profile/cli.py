"""`flashssm profile`: one step of a model workload under torch.profiler, characterised.

Writes to --out: report.md (tables and figures together), breakdown.png (time per operator
class, one bar per kernel set), roofline.png (each kernel at its counted arithmetic intensity
and achieved FLOP rate, under the measured copy-bandwidth and bf16 GEMM ceilings), kernels-<set>.csv
(per kernel: launches, time, share, GB/s, TFLOP/s, fraction of the ceiling), trace-<set>.json
(Chrome trace: chrome://tracing or ui.perfetto.dev), profile.json and summary.json.

Workloads: any preset of flashssm.models (mamba2-130m ... mamba2-2.7b, mamba1-130m ... mamba1-2.8b,
mamba2-hybrid-2.7b), the paper's hybrid 'mamba2-hybrid' (43 % Mamba-2, 7 % attention, 50 % MLP
sublayers), or --checkpoint DIR. Random weights unless --checkpoint. Warm-up steps are excluded;
one step is profiled. --kernels picks flashssm's kernels, mamba_ssm's model and kernels (installed
separately; its pure-Python install: Triton SSD and norms, nn.Conv1d for the conv), or the
plain-PyTorch references; several kernel sets are put side by side in one report.
--ncu adds Nsight Compute counters for the SSM kernels (achieved occupancy, L1/L2 hit rates, DRAM
throughput, tensor/FMA/XU pipe use), run on one layer with --clock-control none.
--from DIR re-writes the report of an earlier run from its profile.json and traces (no GPU needed).

Examples:
  flashssm profile --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 \\
      --kernels flashssm mamba_ssm --ncu --out profile-2.7b
  flashssm profile --from profile-2.7b
"""

from __future__ import annotations

import json
import os

DESCRIPTION = __doc__


def add_arguments(parser) -> None:
    from flashssm.profile.run import KERNELS, MODES

    parser.add_argument("--model", default="mamba2-2.7b", help="preset or suite name (default mamba2-2.7b)")
    parser.add_argument("--checkpoint", default=None, help="a local checkpoint directory instead of random weights")
    parser.add_argument("--mode", choices=MODES, default="train")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seqlen", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=None, help="cut the model to this many layers")
    parser.add_argument("--kernels", nargs="+", choices=KERNELS, default=["flashssm"],
                        help="kernel sets to profile, side by side (e.g. flashssm mamba_ssm)")
    parser.add_argument("--compare", nargs="+", choices=KERNELS, default=None,
                        help="same as --kernels with two or more sets")
    parser.add_argument("--dtype", choices=("amp", "bf16", "fp16", "fp32"), default="amp",
                        help="amp: fp32 weights under bf16 autocast (training) / bf16 weights otherwise")
    parser.add_argument("--decode-steps", type=int, default=16, help="tokens per profiled decode step")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="timed steps (wall time, peak memory)")
    parser.add_argument("--device", default=None)
    parser.add_argument("--ncu", action="store_true", help="Nsight Compute counters for the SSM kernels")
    parser.add_argument("--ncu-timeout", type=int, default=900)
    parser.add_argument("--ncu-child", action="store_true", help=argparse_hidden())
    parser.add_argument("--from", dest="from_dir", default=None, help="re-write the report of an earlier --out")
    parser.add_argument("--out", default="flashssm-profile", help="output directory")
    parser.set_defaults(func=main)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


def _check(args) -> None:
    for name in ("batch", "seqlen", "decode_steps", "warmup", "repeat"):
        value = getattr(args, name)
        if value < (0 if name == "warmup" else 1):
            raise SystemExit(f"flashssm profile: --{name.replace('_', '-')} must be positive, got {value}")
    if args.compare:
        args.kernels = list(dict.fromkeys(args.compare))
    if args.mode != "train" and args.dtype == "amp":
        args.dtype = "bf16"
    if args.from_dir is None and not args.ncu_child:   # before the run measures anything
        from flashssm.profile.run import model_config

        try:
            model_config(args.model, args.layers)
        except ValueError as err:
            raise SystemExit(f"flashssm profile: {err}") from None
        if args.checkpoint is not None and not os.path.isdir(args.checkpoint):
            raise SystemExit(f"flashssm profile: --checkpoint: {args.checkpoint!r} is not a directory")


def _load_meta(out_dir: str) -> dict:
    path = os.path.join(out_dir, "profile.json")
    if not os.path.exists(path):
        raise SystemExit(f"flashssm profile: {path} not found (expected the --out of an earlier run)")
    with open(path) as f:
        return json.load(f)


def report_from(out_dir: str, ncu: dict | None = None) -> str:
    """Analyse the traces of a profile directory and write its report; returns report.md's path."""
    from flashssm.profile import analyze, report, trace
    from flashssm.profile.counts import Shape

    meta = _load_meta(out_dir)
    if ncu is None and os.path.exists(os.path.join(out_dir, "ncu.json")):
        with open(os.path.join(out_dir, "ncu.json")) as f:
            ncu = json.load(f)
    w = meta["workload"]
    analyses = []
    for label, run in meta["runs"].items():
        launches = trace.launches(trace.load(os.path.join(out_dir, run["trace"])))
        if w["mode"] == "decode":   # decode_steps single-token steps of every sequence
            shape = Shape(w["batch"] * w.get("decode_steps", 1), 1, run.get("elem_bytes", 2))
        else:
            shape = Shape(w["batch"], w["seqlen"], run.get("elem_bytes", 2))
        analyses.append(analyze.analyze(launches, run["modules"], shape, label))
    if not analyses:
        raise SystemExit("flashssm profile: no kernel set ran: " + json.dumps(meta.get("errors", {})))
    return report.write_report(out_dir, meta, analyses, ncu)


def _ncu(args, out_dir: str, kernel_sets) -> dict:
    from flashssm.profile import ncu as ncu_mod

    ncu = {"columns": [], "rows": [], "errors": {}}
    for kernels in kernel_sets:
        if kernels == "reference":
            continue
        res = ncu_mod.run(args, out_dir, kernels)
        if "error" in res:
            ncu["errors"][kernels] = res["error"]
            print(f"ncu ({kernels}): {res['error']}", flush=True)
            continue
        ncu["columns"] = res["columns"]
        ncu["rows"] += res["rows"]
        ncu["note"] = res["note"]
    with open(os.path.join(out_dir, "ncu.json"), "w") as f:
        json.dump(ncu, f, indent=1)
    return ncu


def main(args) -> int:
    _check(args)
    if args.ncu_child:
        from flashssm.profile.ncu import child_step

        return child_step(args)
    if args.from_dir:
        ncu = None
        if args.ncu:   # add hardware counters to an earlier profile: its workload, its kernel sets
            meta = _load_meta(args.from_dir)
            for key, value in meta["workload"].items():
                if key != "layers":
                    setattr(args, key, value)
            ncu = _ncu(args, args.from_dir, list(meta["runs"]))
        print(report_from(args.from_dir, ncu))
        return 0
    from flashssm.profile import run

    meta = run.run(args, args.out)
    if not meta["runs"]:
        print("flashssm profile: no kernel set ran: " + json.dumps(meta["errors"]))
        return 1
    ncu = _ncu(args, args.out, list(meta["runs"])) if args.ncu else None
    print(report_from(args.out, ncu))
    return 0
