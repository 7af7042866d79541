"""Sweep selective_scan's launch configurations on the GPU (forward, then forward + backward).

    python benchmarks/tune_selective_scan.py [--quick] [--sweep] [--forward | --backward]

Times each configuration with triton.testing.do_bench on the Mamba-1 2.8B shape (dim 5120) and
dstate 128, bf16, and prints it beside the bytes floor at the copy bandwidth measured here.
The picked configurations (forward_config / backward_config) are marked with '*'.
"""

import argparse
import itertools

import torch
import triton

from flashssm.bench.workloads import DTYPES, WORKLOADS, ScanWorkload
from flashssm.ops.selective_scan import scan


def copy_bandwidth() -> float:
    x = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x))
    return 2 * x.numel() / (ms * 1e-3)


def fwd_args(inp):
    return ([inp[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")], True)


def _bwd_config(w, lanes, chunk, warps, tile=0, maxnreg=0) -> "scan.BackwardConfig":
    """A backward configuration for workload w: lanes per channel, chunk, warps (the warps' lanes
    filled with channels), tile (0: the picked one), register cap (0: none)."""
    picked = scan.backward_config(w.batch, w.dim, w.dstate, 1, w.seqlen, 1, DTYPES[w.dtype].itemsize)
    return scan.BackwardConfig(32 * warps // lanes, lanes, tile or picked.tile, chunk, warps, maxnreg or picked.maxnreg)


def _warm_one(job):
    """Compile one backward configuration in a worker process (the timing process then finds it in
    Triton's cache): a batch of at most 2, the workload's other sizes (same specialisation)."""
    name, *knobs = job
    w = WORKLOADS[name]
    small = type(w)(w.name, min(w.batch, 2), w.seqlen, dim=w.dim, dstate=w.dstate, dtype=w.dtype)
    inp = small.make_inputs("cuda")
    tensors, sp = fwd_args(inp)
    cfg = _bwd_config(w, *knobs)
    chunk = cfg.chunk
    try:
        _, _, ckpt = scan.scan_forward(*tensors, sp, ckpt_tile=chunk)
        scan.scan_backward(inp["dy"], None, *tensors, sp, ckpt=ckpt, ckpt_tile=chunk, config=cfg)
        torch.cuda.synchronize()
    except Exception as e:  # reported again when timed
        return f"{job}: {type(e).__name__}"
    return None


def warm(jobs, worker=_warm_one, processes: int = 12):
    """Backward configurations take ~45 s each to compile (one unrolled tile per slot and token), forward
    ones several seconds: compile them in parallel processes first, worker(job) each (a message or None)."""
    import multiprocessing

    if not jobs:
        return
    with multiprocessing.get_context("spawn").Pool(min(processes, len(jobs))) as pool:
        for err in pool.imap_unordered(worker, jobs):
            if err:
                print("  warm:", err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sweep", action="store_true", help="the wide sweep on 8x2K dstate 16 only")
    ap.add_argument("--forward", action="store_true", help="the forward only")
    ap.add_argument("--backward", action="store_true", help="forward + backward only")
    ap.add_argument("--configs", default="", help="backward configurations to time instead of the grid: "
                    "'workload:lanes,chunk,warps[,tile[,maxnreg]];...'")
    ap.add_argument("--fwd-configs", default="", help="forward configurations to time instead of the grid: "
                    "'workload:lanes,tile,warps,cpt;...' (cpt: channels per thread, block_d = 32 warps cpt / lanes)")
    args = ap.parse_args()
    fwd_grids = {}
    for item in filter(None, args.fwd_configs.split(";")):
        name, cfg = item.split(":")
        fwd_grids.setdefault(name, []).append(tuple(int(v) for v in cfg.split(",")))
    bw = copy_bandwidth()
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s")
    n_sms = torch.cuda.get_device_properties(0).multi_processor_count
    fwd_names = ("m1-2.8b-8x2K",) if args.sweep else ("m1-2.8b-8x2K", "m1-2.8b-1x32K", "m1-2.8b-1x256K",
                                                          "m1-n128-8x2K")
    for name in () if args.backward else (tuple(fwd_grids) or fwd_names):
        # (1x256K is a bench workload too since the eighty-first session: its float64 reference runs in pieces)
        w = WORKLOADS.get(name) or ScanWorkload(name, 1, 262144)
        inp = w.make_inputs("cuda")
        tensors, sp = fwd_args(inp)
        floor_ms = w.bytes() / bw * 1e3
        picked = scan.forward_config(w.batch, w.dim, w.dstate, 1, n_sms, inp["u"].element_size(), w.seqlen,
                                     channels_last=scan.channels_contiguous(inp["u"]))
        print(f"\n{name} forward: floor {floor_ms:.3f} ms, picked {picked}")
        # lanes per channel, tile, warps; channels per program fill the warps' lanes
        grid = itertools.product([1, 2, 4, 8, 16], [8], [1, 2])
        if args.sweep:
            grid = itertools.product([1, 2, 4, 8, 16], [4, 8], [1, 2, 4])
        if args.quick:
            grid = [(picked.lanes, picked.tile, picked.num_warps), (4, 8, 1), (1, 8, 1), (2, 8, 1)]
        grid = [g if len(g) == 4 else (*g, 1) for g in fwd_grids.get(name, grid)]
        ms = triton.testing.do_bench(lambda: scan.scan_forward(*tensors, sp, config=picked))
        print(f"  the picked configuration itself: {ms:.3f} ms  x floor {ms / floor_ms:.2f}")
        for lanes, tile, warps, cpt in grid:
            if lanes > w.dstate or (w.dstate + lanes - 1) // lanes > 32:
                continue
            # (the picked register cap; no segments)
            cfg = scan.ForwardConfig(32 * warps * cpt // lanes, lanes, tile, warps, maxnreg=picked.maxnreg)
            try:
                ms = triton.testing.do_bench(lambda: scan.scan_forward(*tensors, sp, config=cfg))
            except Exception as e:  # out of resources
                print(f"  {cfg}: {type(e).__name__}")
                continue
            mark = "*" if cfg == picked else " "
            print(f" {mark}lanes {lanes} tile {tile} warps {warps} block_d {cfg.block_d}: {ms:.3f} ms  "
                  f"x floor {ms / floor_ms:.2f}")
        ms = triton.testing.do_bench(lambda: scan.bc_tiles(scan._as4(inp["B"]), scan._as4(inp["C"]),
                                                           triton.next_power_of_2(w.dstate), 8, torch.float32))
        print(f"  of which B, C to tiles: {ms:.4f} ms")
    bwd_names = ("m1train-2.8b-8x2K",) if args.sweep else ("m1train-2.8b-8x2K", "m1train-2.8b-1x32K",
                                                           "m1train-n128-1x1K")
    grids = {}
    for name in () if args.forward or fwd_grids else bwd_names:
        w = WORKLOADS[name]
        picked = scan.backward_config(w.batch, w.dim, w.dstate, 1, w.seqlen, n_sms, DTYPES[w.dtype].itemsize)
        # lanes per channel, chunk (spacing of the stored states), warps
        grid = itertools.product([1, 2, 4, 8], [16, 32, 64], [1, 2])
        if args.sweep:
            grid = itertools.product([1, 2, 4, 8, 16], [8, 16, 32, 64, 128], [1, 2, 4])
        if args.quick:
            grid = [(2, 32, 1), (4, 32, 1)]
        grid = [(picked.lanes, picked.chunk, picked.num_warps)] + list(grid)
        grids[name] = [g for g in dict.fromkeys(grid) if g[0] <= w.dstate and -(-w.dstate // g[0]) <= 32]
    if args.configs:
        grids = {}
        for item in args.configs.split(";"):
            name, cfg = item.split(":")
            grids.setdefault(name, []).append(tuple(int(v) for v in cfg.split(",")))
    warm([(name, *g) for name, grid in grids.items() for g in grid])
    for name, grid in grids.items():
        w = WORKLOADS[name]
        inp = w.make_inputs("cuda")
        tensors, sp = fwd_args(inp)
        dy = inp["dy"]
        floor_ms = w.bytes() / bw * 1e3
        picked = scan.backward_config(w.batch, w.dim, w.dstate, 1, w.seqlen, n_sms, inp["u"].element_size())
        print(f"\n{name} forward + backward: floor {floor_ms:.3f} ms, picked {picked}")
        for knobs in grid:
            cfg = _bwd_config(w, *knobs)
            lanes, chunk, warps = cfg.lanes, cfg.chunk, cfg.num_warps

            def run():
                y, _, ckpt = scan.scan_forward(*tensors, sp, ckpt_tile=chunk)
                return scan.scan_backward(dy, None, *tensors, sp, ckpt=ckpt, ckpt_tile=chunk, config=cfg)
            try:
                ms = triton.testing.do_bench(run)
                ms_bwd = ms - triton.testing.do_bench(lambda: scan.scan_forward(*tensors, sp, ckpt_tile=chunk))
            except Exception as e:
                print(f"  {cfg}: {type(e).__name__}: {str(e)[:80]}")
                continue
            mark = "*" if cfg == picked else " "
            print(f" {mark}lanes {lanes} chunk {chunk:3d} warps {warps} tile {cfg.tile} maxnreg {cfg.maxnreg}: "
                  f"{ms:.3f} ms (backward {ms_bwd:.3f})"
                  f"  x floor {ms / floor_ms:.2f}")


if __name__ == "__main__":
    main()
