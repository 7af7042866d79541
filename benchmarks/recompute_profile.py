"""What the recompute (`MambaLM.set_recompute`) costs a training step, and where: `flashssm bench model` timed the 370m
model's 8 x 2K step at 161.7 ms without it and 206.0 with it (+27 %, where ~5 % was predicted: the conv's and the
gated norm's forwards once more a layer; H200, seventy-third session).

Steps without and with it alternate in one process (CUDA events, medians), then one step of each under
torch.profiler: the GPU kernels and the host's torch calls whose totals differ most between the two, so the extra
time has a name. `--part conv` / `--part norm` remakes only that tensor (the other is kept as without the recompute);
`--checkpointing` compares activation checkpointing (`set_gradient_checkpointing`) with neither instead.

    python3 benchmarks/recompute_profile.py --preset mamba2-370m --shape 8x2048 --layers 8
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import statistics
import sys
import time

import torch

from flashssm.bench.model import train_step
from flashssm.models import MambaLM, preset
from flashssm.modules import recompute as recompute_module


def _only(part):
    """Recompute.add limited to the conv's output (marked in a mixer's forward) or the norm's (in `_output`)."""
    real = recompute_module.Recompute.add

    def add(self, tensor, make):
        # (the caller's name from its frame: inspect.stack() reads every frame's source, ~0.5 ms a call, which cost
        # both modes ~50 ms a step in the seventy-third session's call 2)
        if (part == "conv") == (sys._getframe(1).f_code.co_name == "forward"):
            real(self, tensor, make)

    recompute_module.Recompute.add = add


def _timed(step, device, n):
    if device.type != "cuda":  # (the script's own check on the CPU machine)
        start = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - start) * 1e3 / n
    times = []
    for _ in range(n):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize(device)
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _host_and_synced(step, device, n):
    """Medians of n steps each from a synchronised start: the host's time to issue the step (until step() returns) and
    the step's time with a synchronisation after it (as `flashssm bench model` times a training step)."""
    issue, synced = [], []
    for _ in range(n):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        step()
        issue.append((time.perf_counter() - start) * 1e3)
        torch.cuda.synchronize(device)
        synced.append((time.perf_counter() - start) * 1e3)
    return statistics.median(issue), statistics.median(synced)


def _profile(step, device):
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        step()
        if cuda:
            torch.cuda.synchronize(device)
    gpu, host = {}, {}
    for e in prof.key_averages():
        t_gpu = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        if t_gpu:
            gpu[e.key] = (t_gpu / 1e3, e.count)
        if e.self_cpu_time_total:
            host[e.key] = (e.self_cpu_time_total / 1e3, e.count)
    return gpu, host


def _diff(name, off, on, top):
    keys = set(off) | set(on)
    rows = sorted(keys, key=lambda k: -abs(on.get(k, (0, 0))[0] - off.get(k, (0, 0))[0]))[:top]
    print(f"{name}: total {sum(v[0] for v in off.values()):.2f} ms without, {sum(v[0] for v in on.values()):.2f} with")
    for k in rows:
        a, b = off.get(k, (0.0, 0)), on.get(k, (0.0, 0))
        print(f"  {b[0] - a[0]:+9.3f} ms  {a[0]:9.3f} ({a[1]:5d}) -> {b[0]:9.3f} ({b[1]:5d})  {k[:110]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="mamba2-370m")
    ap.add_argument("--shape", default="8x2048", help="batch x seqlen")
    ap.add_argument("--layers", type=int, help="the preset's width with this many layers")
    ap.add_argument("--part", choices=["conv", "norm"], help="remake only this tensor")
    ap.add_argument("--checkpointing", action="store_true", help="against activation checkpointing "
                    "(`set_gradient_checkpointing`) instead of the recompute")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--top", type=int, default=14)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    device = torch.device(args.device)
    batch, seqlen = (int(v) for v in args.shape.split("x"))
    config = preset(args.preset)
    if args.layers:
        config = dataclasses.replace(config, n_layer=args.layers)
    if args.part:
        _only(args.part)
    torch.manual_seed(0)
    base = MambaLM(config, device=device, dtype=torch.float32)
    ids = torch.randint(0, config.vocab_size, (batch, seqlen), device=device)
    if args.checkpointing:
        models = {on: copy.deepcopy(base).set_gradient_checkpointing(on) for on in (False, True)}
    else:
        models = {on: copy.deepcopy(base).set_recompute(on) for on in (False, True)}
    steps = {}
    for on, model in models.items():
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
        steps[on] = (lambda model=model, opt=opt: train_step(model, opt, ids, device))
        for _ in range(3):
            steps[on]()
    times = {False: [], True: []}
    for _ in range(args.rounds):
        for on in (False, True):
            times[on].append(_timed(steps[on], device, 3))
    label = f"{args.preset} x{config.n_layer} {args.shape}" + (f" ({args.part} only)" if args.part else "")
    what = "activation checkpointing" if args.checkpointing else "the recompute"
    off_ms, on_ms = statistics.median(times[False]), statistics.median(times[True])
    print(f"{label}: step {off_ms:.2f} ms without {what}, {on_ms:.2f} with ({on_ms / off_ms - 1:+.1%}); "
          f"rounds {[round(t, 2) for t in times[False]]} / {[round(t, 2) for t in times[True]]}", flush=True)
    if device.type == "cuda":
        for on in (False, True):
            issue, synced = _host_and_synced(steps[on], device, 5)
            print(f"{'with' if on else 'without'}: the host issues a step in {issue:.2f} ms; a step synchronised "
                  f"after it takes {synced:.2f} ms", flush=True)
    gpu_off, host_off = _profile(steps[False], device)
    gpu_on, host_on = _profile(steps[True], device)
    _diff("GPU kernels (self time)", gpu_off, gpu_on, args.top)
    _diff("host torch calls (self CPU time)", host_off, host_on, args.top)


if __name__ == "__main__":
    main()
