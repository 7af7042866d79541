"""What a first training call costs, compile included, with the backward's kernels compiled ahead (beside the forward's,
`_runtime.plan_ahead`) and without.

Each (workload, setting) runs in a fresh process with an empty Triton cache directory of its own, so that every kernel
compiles: the figure is what a user meets on the first step of a new shape. Per run: the first call (forward +
backward + synchronise, wall clock), the second call, the background compiles' counts, and the first call's
gradients against the second's (the same kernels: equal up to the float atomics' order).

    PYTHONPATH=. python benchmarks/first_call.py [--settings on,off] WORKLOAD ...   (GPU; training workloads of
    `flashssm bench`, e.g. train-2.7b-8x4K m1train-2.8b-8x2K, or a model's training step: model:mamba2-130m:4x2048)
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def child(name: str, device: str, steps: int, collect: bool) -> dict:
    import torch

    from flashssm import _runtime
    from flashssm.bench.impls import flashssm_training_forward
    from flashssm.bench.workloads import WORKLOADS

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if name.startswith("model:"):  # model:PRESET:BxL, a training step of a randomly initialised model in bf16
        from flashssm.models import MambaLM
        from flashssm.models.config import preset

        _, preset_name, shape = name.split(":")
        batch, seqlen = (int(v) for v in shape.split("x"))
        torch.manual_seed(0)
        model = MambaLM(preset(preset_name), device=device, dtype=torch.bfloat16 if device == "cuda" else None)
        ids = torch.randint(0, model.config.vocab_size, (batch, seqlen), device=device)
        params = [p for p in model.parameters() if p.requires_grad]

        def run():
            t0 = time.perf_counter()
            logits = model(ids)
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())
            sync()
            t1 = time.perf_counter()
            grads = torch.autograd.grad(loss, params)
            sync()
            return (loss.detach(), *grads[:8]), t1 - t0, time.perf_counter() - t1
    else:
        w = WORKLOADS[name]
        inp = w.make_inputs(device)
        forward, inputs = flashssm_training_forward(w, inp)

        def run():
            leaves = [inp[k].detach().clone().requires_grad_() for k in inputs]
            t0 = time.perf_counter()
            y = forward(*leaves)
            sync()
            t1 = time.perf_counter()
            grads = torch.autograd.grad(y, leaves, inp["dy"])
            sync()
            return (y, *grads), t1 - t0, time.perf_counter() - t1

    first, f1, b1 = run()
    after_first = dict(_runtime.ahead_stats)
    if collect:  # a full collection outside the timed steps (is the second step's extra time a collection?)
        gc.collect()
    later, parts = [], []
    gen2 = gc.get_stats()[2]["collections"]
    for _ in range(steps):
        second, f2, b2 = run()
        later.append(f2 + b2)
        parts.append((1e3 * f2, 1e3 * b2))
        if len(parts) == 1:  # (the second step of a Mamba-2 model took 212-227 ms against 81 without ahead)
            gen2 = gc.get_stats()[2]["collections"] - gen2
    diff = max(float((a.float() - b.float()).abs().max() / b.float().abs().max().clamp_min(1e-30))
               for a, b in zip(first, second) if a is not None)
    return {"forward_s": f1, "backward_s": b1, "second_ms": 1e3 * later[0], "later_ms": 1e3 * statistics.median(later),
            "second_parts_ms": parts[0], "second_gen2_gcs": gen2,
            "largest_relative_difference": diff, "workers": len(_runtime._workers),
            "planner_runs_later": _runtime.ahead_stats["planner_runs"] - after_first["planner_runs"], **after_first}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="*")
    ap.add_argument("--settings", default="on,off",
                    help="compile-ahead settings to run, in this order: on, off, or onN (N background threads)")
    ap.add_argument("--device", default="cuda", help="cpu: the interpreter (to check this script)")
    ap.add_argument("--steps", type=int, default=3, help="calls timed after the first (the median is reported; >= 1)")
    ap.add_argument("--collect", action="store_true", help="gc.collect() after the first call (not timed)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.child, args.device, args.steps, args.collect)), flush=True)
        return
    print(f"{'workload':28} {'ahead':5} {'first call s':>12} {'forward':>7} {'backward':>8} {'second ms':>9} "
          f"{'later ms':>8} {'planned':>7} {'compiled':>8} {'taken':>5} {'waited':>6}  first vs second", flush=True)
    for name in args.workloads:
        for setting in args.settings.split(","):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TRITON_CACHE_DIR=cache, FLASHSSM_COMPILE_AHEAD="0" if setting == "off" else "1")
                env.pop("FLASHSSM_COMPILE_THREADS", None)
                if setting.startswith("on") and setting[2:]:
                    env["FLASHSSM_COMPILE_THREADS"] = setting[2:]
                t0 = time.perf_counter()
                command = [sys.executable, __file__, "--child", name, "--device", args.device, "--steps",
                           str(args.steps)] + (["--collect"] if args.collect else [])
                proc = subprocess.run(command, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t0
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode or not lines:
                print(f"{name:28} {setting:5} failed (rc {proc.returncode}): {proc.stderr[-800:]}", flush=True)
                continue
            r = json.loads(lines[-1][len("RESULT "):])
            print(f"{name:28} {setting:5} {r['forward_s'] + r['backward_s']:12.1f} {r['forward_s']:7.1f} "
                  f"{r['backward_s']:8.1f} {r['second_ms']:9.3f} {r['later_ms']:8.3f} {r['planned']:7d} "
                  f"{r['compiled']:8d} {r['taken']:5d} {r['waited']:6d}  {r['largest_relative_difference']:.1e}"
                  f"  (process {wall:.1f} s; {r['workers']} threads; failed {r['failed']}; planners run "
                  f"{r['planner_runs']}, failed {r['planner_failed']}, run after the first call "
                  f"{r['planner_runs_later']}; second step: forward {r['second_parts_ms'][0]:.1f} ms, backward "
                  f"{r['second_parts_ms'][1]:.1f} ms, {r['second_gen2_gcs']} full garbage collections)", flush=True)


if __name__ == "__main__":
    main()
