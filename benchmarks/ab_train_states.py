"""A/B of the training call of ssd_scan: the tiles backward with the states that the forward stored as its output sweep
ran (`backward_chain.TILES_STATES_FROM_FORWARD`, on) against the states recomputed by the backward's own launch (off).

    PYTHONPATH=. python3 benchmarks/ab_train_states.py [--workload 8x4K ...] [--rounds 5] [--options]
        [--tiles-chunk 128]

Per workload (the 2.7B mixer shape, bf16, as the bench's train-* workloads; `--options`: with D, dt_bias and softplus
too), alternating in one process, medians of `rounds` do_bench medians (ms):
- train: forward + backward through autograd (the bench's call);
- forward: the forward launch alone, storing the states or not (what storing costs it);
- with --tiles-chunk, the training call with the tiles in chunks of that many tokens too;
- the peak memory of a training call above the inputs (MiB), and each gradient's largest difference between the two
  variants relative to its largest value (the states differ by rounding: bf16 copies of the same math).
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

import flashssm
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import backward_chain, forward
from benchmarks.train_harness import train_leaves


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--options", action="store_true")
    parser.add_argument("--tiles-chunk", type=int, default=0, help="also time the training call (states from the "
                        "forward) with the tiles in chunks of this many tokens (backward_chain.tiles_chunk)")
    a = parser.parse_args()
    for spec in a.workload or ["8x4K", "1x32K", "32x2K"]:
        batch, seqlen = spec.lower().replace("k", "").split("x")
        leaves, opts, dy = train_leaves(f"{batch}x{int(seqlen) * 1024}", a.options)
        leaves.pop("z", None)  # (with z the forward stores none: `tiles_states`)
        names = list(leaves)

        def step():
            y = flashssm.ssd_scan(**leaves, **opts)
            return torch.autograd.grad(y, [leaves[k] for k in names], dy)

        x = leaves["x"]
        dims = check_ssd_scan(**{k: v.detach() for k, v in leaves.items()}, **opts)
        cfg = forward.pick_config(dims, x.dtype, x.device)
        det = {k: v.detach() for k, v in leaves.items()}
        stored = backward_chain.tiles_states(dims, x, det["B"], det["C"], det.get("z"), None, cfg)
        if stored is None:
            print(f"{spec}: the forward stores no states for the tiles here")
            continue
        states, chunk = stored

        def fwd(store):
            return forward.launch(dims, **det, **{k: v for k, v in opts.items() if k != "chunk_size"}, config=cfg,
                                  states=states if store else None, state_chunk=chunk if store else None)

        times = {k: [] for k in ("train off", "train on", "forward plain", "forward storing")}
        grads, peaks = {}, {}
        for r in range(a.rounds):
            for on in (False, True):
                backward_chain.TILES_STATES_FROM_FORWARD = on
                times[f"train {'on' if on else 'off'}"].append(do_bench(step, warmup=10, rep=60))
                times[f"forward {'storing' if on else 'plain'}"].append(do_bench(lambda: fwd(on), warmup=10, rep=60))
                if on and a.tiles_chunk:
                    real_chunk = backward_chain.tiles_chunk
                    backward_chain.tiles_chunk = lambda dims, device: a.tiles_chunk
                    try:
                        times.setdefault("train on, tiles chunk", []).append(do_bench(step, warmup=10, rep=60))
                        if r == 0:
                            torch.cuda.synchronize()
                            base = torch.cuda.memory_allocated()
                            torch.cuda.reset_peak_memory_stats()
                            step()
                            torch.cuda.synchronize()
                            peaks["tiles chunk"] = (torch.cuda.max_memory_allocated() - base) / 2**20
                    finally:
                        backward_chain.tiles_chunk = real_chunk
                if r == 0:
                    torch.cuda.synchronize()
                    base = torch.cuda.memory_allocated()
                    torch.cuda.reset_peak_memory_stats()
                    grads[on] = step()
                    torch.cuda.synchronize()
                    peaks[on] = (torch.cuda.max_memory_allocated() - base) / 2**20
        backward_chain.TILES_STATES_FROM_FORWARD = True
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{spec}{' (D, dt_bias, softplus)' if a.options else ''}: states every {chunk} tokens, "
              f"{states.numel() * states.element_size() / 2**20:.0f} MiB")
        print(f"  train: recomputed {med['train off']:.4f} ms, from the forward {med['train on']:.4f} ms "
              f"({(med['train on'] / med['train off'] - 1) * 100:+.1f} %)  rounds: "
              + " ".join(f"{u:.3f}/{v:.3f}" for u, v in zip(times['train off'], times['train on'])))
        print(f"  forward: plain {med['forward plain']:.4f} ms, storing {med['forward storing']:.4f} ms "
              f"({(med['forward storing'] / med['forward plain'] - 1) * 100:+.1f} %)")
        if a.tiles_chunk:
            t = med["train on, tiles chunk"]
            print(f"  train, from the forward, tiles in chunks of {a.tiles_chunk}: {t:.4f} ms "
                  f"({(t / med['train on'] - 1) * 100:+.1f} % against the default), peak above the inputs "
                  f"{peaks['tiles chunk']:.0f} MiB")
        print(f"  peak above the inputs: {peaks[False]:.0f} MiB recomputed, {peaks[True]:.0f} MiB from the forward")
        diffs = {k: float((g1.float() - g0.float()).abs().max() / g0.float().abs().max().clamp_min(1e-30))
                 for k, g0, g1 in zip(names, grads[False], grads[True])}
        print("  gradients, largest difference / largest value: "
              + ", ".join(f"d{k} {v:.1e}" for k, v in diffs.items()), flush=True)


if __name__ == "__main__":
    main()
