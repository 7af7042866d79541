"""Time selective_scan's sequence segments (one program per segment, hand-over between them) on the GPU.

    python benchmarks/tune_scan_segments.py [--forward SPEC ...] [--backward SPEC ...]

SPEC is 'batch x seqlen x dim : lanes,warps,segment[,tile]' for the forward and
'batch x seqlen x dim : lanes,segment' for the backward (chunk 32, one warp, as backward_config), e.g.
'1x32768x5120:1,1,4096'; segment 0 is one program per sequence. dstate 16, bf16, the inputs of the bench's
Mamba-1 workloads. Each configuration's output is compared with the first one's of its workload (the
hand-over must not change more than rounding), and its time is printed beside the bytes floor at the copy
bandwidth measured here. The picked configurations (forward_config / backward_config) are timed first.
"""

import argparse

import torch
import triton

from benchmarks.tune_selective_scan import copy_bandwidth
from flashssm.bench.workloads import ScanWorkload
from flashssm.ops.selective_scan import scan


def parse(specs):
    out = {}
    for spec in specs:
        shape, knobs = spec.split(":")
        out.setdefault(tuple(int(v) for v in shape.split("x")), []).append(tuple(int(v) for v in knobs.split(",")))
    return out


def rel(a, b) -> float:
    return float((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--forward", nargs="*", default=[])
    ap.add_argument("--backward", nargs="*", default=[])
    ap.add_argument("--dstate", type=int, default=16)
    args = ap.parse_args()
    bw = copy_bandwidth()
    n_sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s, {n_sms} SMs")
    names = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")
    for (batch, seqlen, dim), knobs in parse(args.forward).items():
        w = ScanWorkload(f"{batch}x{seqlen} dim {dim}", batch, seqlen, dim=dim, dstate=args.dstate)
        inp = w.make_inputs("cuda")
        tensors = [inp[k] for k in names]
        floor = w.bytes() / bw * 1e3
        picked = scan.forward_config(batch, dim, args.dstate, 1, n_sms, 2, seqlen)
        print(f"\nforward {w.shape}: floor {floor:.3f} ms, picked {picked}")
        first = None
        cfgs = [picked] + [scan.ForwardConfig(32 * wa // la, la, (k[3] if len(k) > 3 else 8), wa, segment=sg)
                           for k in knobs for la, wa, sg in [k[:3]]]
        for cfg in dict.fromkeys(cfgs):
            try:
                y, _, _ = scan.scan_forward(*tensors, True, config=cfg)
                ms = triton.testing.do_bench(lambda: scan.scan_forward(*tensors, True, config=cfg))
            except Exception as e:
                print(f"  {cfg}: {type(e).__name__}: {str(e)[:100]}")
                continue
            first = y if first is None else first
            mark = "*" if cfg == picked else " "
            print(f" {mark}lanes {cfg.lanes} warps {cfg.num_warps} block_d {cfg.block_d} tile {cfg.tile} "
                  f"segment {cfg.segment}: {ms:.3f} ms  x floor {ms / floor:.2f}  diff {rel(y, first):.1e}",
                  flush=True)
    for (batch, seqlen, dim), knobs in parse(args.backward).items():
        w = ScanWorkload(f"{batch}x{seqlen} dim {dim}", batch, seqlen, dim=dim, dstate=args.dstate)
        inp = w.make_inputs("cuda")
        tensors = [inp[k] for k in names]
        dy = torch.randn_like(inp["u"])
        picked = scan.backward_config(batch, dim, args.dstate, 1, seqlen, n_sms, 2)
        _, _, ckpt = scan.scan_forward(*tensors, True, ckpt_tile=picked.chunk)
        floor = w.bytes() / bw * 1e3
        print(f"\nbackward {w.shape}: forward floor {floor:.3f} ms, picked {picked}")
        first = None
        cfgs = [picked] + [scan.BackwardConfig(32 // la, la, picked.tile, picked.chunk, 1, segment=sg)
                           for la, sg in knobs]
        for cfg in dict.fromkeys(cfgs):
            def run():
                return scan.scan_backward(dy, None, *tensors, True, ckpt=ckpt, ckpt_tile=cfg.chunk, config=cfg)
            try:
                grads = run()
                ms = triton.testing.do_bench(run)
            except Exception as e:
                print(f"  {cfg}: {type(e).__name__}: {str(e)[:100]}")
                continue
            first = grads if first is None else first
            diff = max(rel(g, f) for g, f in zip(grads, first) if g is not None)
            mark = "*" if cfg == picked else " "
            print(f" {mark}lanes {cfg.lanes} block_d {cfg.block_d} segment {cfg.segment}: backward {ms:.3f} ms  "
                  f"(x forward floor {ms / floor:.2f})  max grad diff {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
