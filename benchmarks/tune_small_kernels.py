"""Sweep the launch parameters of the bandwidth-bound kernels (steps, conv1d, gated RMSNorm) on the GPU.

Prints, per kernel and shape, the time of each configuration as a fraction of the copy-bandwidth
floor measured in the same run, and the configuration the current table picks. The step at small
batch is timed from a CUDA graph of many steps on rotating state copies (device time, no launch
overhead); everything else with do_bench (L2 flushed).

    PYTHONPATH=. python benchmarks/tune_small_kernels.py [step|scanstep|conv|convbwd|norm ...]
"""

from __future__ import annotations

import itertools
import sys

import torch
from triton.testing import do_bench

from flashssm import _runtime
from flashssm.bench.measure import measure_ceilings
from flashssm.bench.workloads import WORKLOADS, Conv1dWorkload, NormWorkload, SSDStepWorkload
from flashssm.ops.checks import check_causal_conv1d
from flashssm.ops.conv1d import conv as conv_mod
from flashssm.ops.norm import rmsnorm as norm_mod
from flashssm.ops.selective_scan import step as scan_step_mod
from flashssm.ops.ssd import step as step_mod

DEV = torch.device("cuda")


def graph_time_ms(step, calls: int) -> float:
    """Per-call device time of `step(i)` for i < calls, replayed from one CUDA graph."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step(0)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            step(i)
    return do_bench(graph.replay, warmup=25, rep=200, return_mode="median") / calls


def tune_step(copy_bw: float) -> None:
    for batch in (1, 16, 128, 512):
        w = SSDStepWorkload(f"b{batch}", batch)
        inp = w.make_inputs(DEV)
        floor = w.bytes() / copy_bw * 1e3
        calls = max(4, min(64, -(-(256 << 20) // (inp["state"].numel() * 4))))
        cache = inp["state"].repeat(calls, 1, 1, 1)
        rows = [torch.arange(i * batch, (i + 1) * batch, device=DEV) for i in range(calls)]
        chosen = step_mod.pick_block_p(batch, 80, 64, 128, _runtime.sm_count(DEV, on_cpu=1))
        print(f"\nssd_step batch {batch}: floor {floor * 1e3:.2f} us; table picks block_p {chosen}")
        for block_p, warps in itertools.product((1, 2, 4, 8, 16, 32, 64), (1, 2, 4, 8)):
            if block_p * 128 // (32 * warps) < 1:
                continue

            def step(i, block_p=block_p, warps=warps):
                step_mod.ssd_step_kernel((0.0, float("inf")), cache, inp["x"], inp["dt"], inp["A"], inp["B"],
                                         inp["C"], D=inp["D"], dt_bias=inp["dt_bias"], dt_softplus=True,
                                         state_batch_indices=rows[i], block_p=block_p, num_warps=warps)
            ms = graph_time_ms(step, calls)
            print(f"  block_p {block_p:3d} warps {warps}: {ms * 1e3:8.2f} us  x floor {ms / floor:5.2f}")


def tune_scan_step(copy_bw: float) -> None:
    w = WORKLOADS["m1step-2.8b-b128"]
    inp = w.make_inputs(DEV)
    floor = w.bytes() / copy_bw * 1e3
    chosen = scan_step_mod.pick_block_d(128, 5120, 16, _runtime.sm_count(DEV, on_cpu=1))
    print(f"\nselective_scan_step batch 128: floor {floor * 1e3:.2f} us; table picks block_d {chosen}")
    for block_d, warps in itertools.product((16, 32, 64, 128, 256), (1, 2, 4, 8)):
        state = inp["state"].clone()
        fn = lambda: scan_step_mod.selective_scan_step_kernel(  # noqa: E731
            state, inp["u"], inp["delta"], inp["A"], inp["B"], inp["C"], D=inp["D"], z=inp["z"],
            delta_bias=inp["delta_bias"], delta_softplus=True, block_d=block_d, num_warps=warps)
        ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
        print(f"  block_d {block_d:3d} warps {warps}: {ms * 1e3:8.2f} us  x floor {ms / floor:5.2f}")


def tune_conv(copy_bw: float) -> None:
    for channels_last in (True, False):
        w = Conv1dWorkload("conv", 8, 4096, channels_last=channels_last)
        inp = w.make_inputs(DEV)
        floor = w.bytes() / copy_bw * 1e3
        dims = check_causal_conv1d(inp["x"], inp["weight"], inp["bias"], "silu")
        chosen = conv_mod.pick_blocks(w.dim, w.seqlen, channels_last)
        print(f"\ncausal_conv1d 8x4K channels_last={channels_last}: floor {floor:.4f} ms; table picks {chosen}")
        for block_l, block_d, warps in itertools.product((16, 32, 64, 128), (16, 32, 64, 128, 256), (2, 4, 8)):
            if block_l * block_d > 16384 or block_l * block_d < 512:
                continue
            fn = lambda: conv_mod.conv1d_forward(dims, inp["x"], inp["weight"], inp["bias"],  # noqa: E731
                                                 blocks=(block_l, block_d, warps))
            ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
            print(f"  L {block_l:3d} D {block_d:3d} warps {warps}: {ms:.4f} ms  x floor {ms / floor:5.2f}")


def tune_conv_bwd(copy_bw: float) -> None:
    """The backward (dx, d weight, d bias; SiLU recomputed) of Mamba-2's conv at the 370m shape (2304
    channels, the train scenario) and the 2.7B one, both layouts. Floor: read x and dy, write dx."""
    for dim, batch, seqlen in ((2304, 8, 2048), (5376, 8, 4096)):
        for channels_last in (True, False):
            w = Conv1dWorkload("conv", batch, seqlen, dim=dim, channels_last=channels_last)
            inp = w.make_inputs(DEV)
            x = inp["x"]
            dy = torch.randn_like(x)
            floor = 3 * x.numel() * x.element_size() / copy_bw * 1e3
            dims = check_causal_conv1d(x, inp["weight"], inp["bias"], "silu")
            chosen = conv_mod.pick_bwd_blocks(dim, x.element_size())
            print(f"\ncausal_conv1d backward {batch}x{seqlen} dim {dim} channels_last={channels_last}: "
                  f"floor {floor:.4f} ms; table picks {chosen}")
            grid = [(bl, bd, w) for bl, bd, w in itertools.product((32, 64, 128), (32, 64, 128, 256), (1, 2, 4, 8))
                    if 32 * w <= bd <= 64 * w]  # one or two channels per thread
            if (dim, channels_last) != (2304, True):  # the full sweep on the train shape, the pick elsewhere
                grid = [(chosen[0], chosen[1], chosen[3])]
            runs = [(f"L {bl:3d} D {bd:3d} warps {w}", dict(blocks=(bl, bd, chosen[2], w))) for bl, bd, w in grid]
            for label, kw in runs:
                fn = lambda: conv_mod.conv1d_backward(dims, x, inp["weight"], inp["bias"], None, dy, None,  # noqa: E731
                                                      False, **kw)
                ms = do_bench(fn, warmup=10, rep=50, return_mode="median")
                print(f"  {label}: {ms:.4f} ms  x floor {ms / floor:5.2f}", flush=True)


def tune_norm(copy_bw: float) -> None:
    for group in (5120, 640):
        w = NormWorkload("norm", 8, 4096, group_size=group)
        inp = w.make_inputs(DEV)
        floor = w.bytes() / copy_bw * 1e3
        block_n = 1 << (group - 1).bit_length()
        print(f"\nrmsnorm_gated 8x4K group {group}: floor {floor:.4f} ms; table picks {norm_mod.pick_blocks(group)}")
        for block_m, warps in itertools.product((1, 2, 4, 8, 16), (2, 4, 8, 16, 32)):
            if block_m * block_n > 32768:
                continue
            fn = lambda: norm_mod.rmsnorm_forward(inp["x"], inp["weight"], inp["z"], 1e-5, group,  # noqa: E731
                                                  False, blocks=(block_m, block_n, warps))
            ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
            print(f"  M {block_m:2d} warps {warps:2d}: {ms:.4f} ms  x floor {ms / floor:5.2f}")


def main(which: list[str]) -> None:
    ceilings = measure_ceilings(DEV)
    copy_bw = ceilings.copy_bytes_per_s
    print(f"{torch.cuda.get_device_name()}: copy {copy_bw / 1e12:.2f} TB/s")
    steps = {"step": tune_step, "scanstep": tune_scan_step, "conv": tune_conv, "convbwd": tune_conv_bwd, "norm": tune_norm}
    for name in which or list(steps):
        steps[name](copy_bw)


if __name__ == "__main__":
    main(sys.argv[1:])
