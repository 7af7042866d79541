"""A model's training step eager, through torch.compile, and through torch.compile's CUDA graphs (reduce-overhead): the
same weights and batches, each mode's losses over a few steps against eager's, and the step's median time.

    PYTHONPATH=. python3 benchmarks/model_step_compiled.py [--preset mamba2-130m ...] [--layers N] [--shape 1x512 ...]
        [--mode eager --mode default --mode reduce-overhead] [--steps 20] [--device cuda] [--conv-form custom_op]
        [--norm-form custom_op] [--history] [--workspace-on-thread]

A small model's eager step is bound by its host work (the seventy-first session: the 130M Mamba-2 model's 1 x 512
step ~60 ms on the H200 machine, ~25 us a torch call on its host); CUDA graphs replay the whole step's launches at
once. This says whether flashssm's custom ops (ssd_scan, selective_scan, conv1d, the gated norm; their workspaces and
ticket counters) train correctly when captured, and what it gains. `--device cpu --preset tiny --mode eager --mode
aot_eager` is a dry run of the tool (aot_eager: torch.compile's backend without code generation). --conv-form: the
conv's form while torch.compile traces (`conv.COMPILE_FORM`: reference, custom_op, kernel); --norm-form the norms'
(`rmsnorm.COMPILE_FORM`). --history: cudagraph trees record where each allocation in their pool came from, and a
failing mode prints its whole message (for reduce-overhead's "tensors in the cudagraph pool not tracked as outputs").
--workspace-on-thread: `_runtime.WORKSPACE_OFF_THREAD` off (the hand-over workspace made on the calling thread, as
before the seventy-second session: reduce-overhead then refuses a Mamba-2 step); --workspace-off-thread, the default
since, is accepted and changes nothing.
"""

import argparse
import copy
import dataclasses
import statistics
import time

import torch

from flashssm.bench.model import _config, train_step


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _run(model, mode, ids_list, device, steps):
    """(losses over ids_list, median seconds a step over `steps` further steps, the compile's first-step seconds)."""
    graphs = mode == "reduce-overhead"
    if mode == "eager":
        fwd = model
    elif mode == "aot_eager":
        fwd = torch.compile(model, backend="aot_eager")
    else:
        fwd = torch.compile(model, mode=None if mode == "default" else mode)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=device.type == "cuda")

    def step(ids):
        return train_step(fwd, opt, ids, device, graphs).detach().clone()

    t = time.perf_counter()
    losses = [step(ids_list[0])]
    _sync(device)
    first = time.perf_counter() - t
    losses += [step(ids) for ids in ids_list[1:]]
    times = []
    for i in range(steps):
        t = time.perf_counter()
        step(ids_list[i % len(ids_list)])
        _sync(device)
        times.append(time.perf_counter() - t)
    return [float(v) for v in losses], statistics.median(times), first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", action="append")
    ap.add_argument("--layers", type=int, help="the preset's width with this many layers")
    ap.add_argument("--shape", action="append", help="batch x seqlen, e.g. 1x512")
    ap.add_argument("--mode", action="append", help="eager, default, reduce-overhead, aot_eager (the first: reference)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--checked", type=int, default=6, help="steps whose losses are compared")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--conv-form", choices=["reference", "custom_op", "kernel"])
    ap.add_argument("--norm-form", choices=["reference", "custom_op", "kernel"])
    ap.add_argument("--history", action="store_true")
    ap.add_argument("--workspace-off-thread", action="store_true")
    ap.add_argument("--workspace-on-thread", action="store_true")
    args = ap.parse_args()
    from flashssm.models import MambaLM
    from flashssm.ops.conv1d import conv

    from flashssm.ops.norm import rmsnorm

    if args.conv_form:
        conv.COMPILE_FORM = args.conv_form
    if args.norm_form:
        rmsnorm.COMPILE_FORM = args.norm_form
    if args.workspace_on_thread or args.workspace_off_thread:
        from flashssm import _runtime

        _runtime.WORKSPACE_OFF_THREAD = not args.workspace_on_thread
    if args.history:
        import torch._inductor.config as inductor_config

        inductor_config.triton.cudagraph_trees_history_recording = True

    device = torch.device(args.device)
    modes = args.mode or ["eager", "default", "reduce-overhead"]
    for name in args.preset or ["mamba2-130m", "mamba1-130m"]:
        config = _config(name)
        if args.layers:
            config = dataclasses.replace(config, n_layer=args.layers)
        for shape in args.shape or ["1x512", "4x2048"]:
            batch, seqlen = (int(v) for v in shape.split("x"))
            torch.manual_seed(0)
            with torch.device(device):
                base = MambaLM(config, dtype=torch.float32)
            gen = torch.Generator(device="cpu").manual_seed(1)
            ids_list = [torch.randint(0, config.vocab_size, (batch, seqlen), generator=gen).to(device)
                        for _ in range(args.checked)]
            first_losses = None
            for mode in modes:
                model = copy.deepcopy(base).train()
                try:
                    losses, sec, first = _run(model, mode, ids_list, device, args.steps)
                except Exception as err:  # (a mode that fails is a finding: say it, go on)
                    text = str(err) if args.history else (str(err).splitlines() or [""])[0][:200]
                    print(f"{name} x{config.n_layer} {shape} {mode}: failed ({type(err).__name__}: {text})", flush=True)
                    continue
                if first_losses is None:
                    first_losses = losses
                diff = max(abs(a - b) / abs(b) for a, b in zip(losses, first_losses))
                print(f"{name} x{config.n_layer} {shape} {mode} (conv {conv.COMPILE_FORM}, norms {rmsnorm.COMPILE_FORM}): step {sec * 1e3:.2f} ms (first step {first:.1f} s); "
                      f"losses {losses[0]:.4f} -> {losses[-1]:.4f}, largest relative difference from "
                      f"{modes[0]}'s {diff:.1e}", flush=True)
                model = None
                torch._dynamo.reset()
            base = None
            if device.type == "cuda":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
