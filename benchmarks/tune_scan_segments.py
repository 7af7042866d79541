"""Time selective_scan's sequence segments (one program per segment, hand-over between them) on the GPU.

    python benchmarks/tune_scan_segments.py [--forward SPEC ...] [--backward SPEC ...]

SPEC is 'batch x seqlen x dim : lanes,warps,segment[,tile[,maxnreg]]' for the forward and
'batch x seqlen x dim : lanes,segment[,maxnreg]' for the backward (chunk 32, one warp, as backward_config),
e.g. '1x32768x5120:1,1,4096'; segment 0 is one program per sequence, a negative segment hands the state on
after the output pass (the forward's hand_late), maxnreg 0 no register cap. Each line
gives the compiled kernel's registers and spills, and the warps that fit an SM by its registers (a Hopper
SM splits its 64K registers between four schedulers: 16K each, in units of 8 registers a thread). dstate 16, bf16, the inputs of the bench's
Mamba-1 workloads. Each configuration's output is compared with the first one's of its workload (the
hand-over must not change more than rounding), and its time is printed beside the bytes floor at the copy
bandwidth measured here. The picked configurations (forward_config / backward_config) are timed first.
"""

import argparse

import torch
import triton

from benchmarks.tune_selective_scan import copy_bandwidth, warm
from flashssm import _runtime
from flashssm.bench.workloads import ScanWorkload
from flashssm.ops.selective_scan import scan


def _warm_one(job):
    """Compile one forward configuration in a worker process (the timing process then finds it in Triton's
    cache): the workload's own shape, whose sizes the kernel is specialised on."""
    (batch, seqlen, dim), cfg, dstate = job
    try:
        w = ScanWorkload("warm", batch, seqlen, dim=dim, dstate=dstate)
        inp = w.make_inputs("cuda")
        scan.scan_forward(*[inp[k] for k in NAMES], True, config=cfg)
        torch.cuda.synchronize()
    except Exception as e:  # reported again when timed
        return f"{cfg}: {type(e).__name__}"
    return None


def _warm_bwd_one(job):
    """Compile one backward configuration in a worker process (~45 s each: they are compiled in parallel first)."""
    (batch, seqlen, dim), cfg, dstate = job
    try:
        w = ScanWorkload("warm", batch, seqlen, dim=dim, dstate=dstate)
        inp = w.make_inputs("cuda")
        tensors = [inp[k] for k in NAMES]
        _, _, ckpt = scan.scan_forward(*tensors, True, ckpt_tile=cfg.chunk)
        scan.scan_backward(torch.randn_like(inp["u"]), None, *tensors, True, ckpt=ckpt, ckpt_tile=cfg.chunk,
                           config=cfg)
        torch.cuda.synchronize()
    except Exception as e:  # reported again when timed
        return f"{cfg}: {type(e).__name__}"
    return None


NAMES = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")


def forward_configs(shape, knobs, dstate, n_sms):
    batch, seqlen, dim = shape
    picked = scan.forward_config(batch, dim, dstate, 1, n_sms, 2, seqlen)
    cfgs = [picked] + [scan.ForwardConfig(32 * wa // la, la, (k[3] if len(k) > 3 else 8), wa, segment=abs(sg),
                                          maxnreg=(k[4] if len(k) > 4 and k[4] else None), hand_late=sg < 0)
                       for k in knobs for la, wa, sg in [k[:3]]]
    return picked, list(dict.fromkeys(cfgs))


def backward_configs(shape, knobs, dstate, n_sms):
    """The picked backward configuration, then one per knob tuple (lanes, segment[, maxnreg])."""
    batch, seqlen, dim = shape
    picked = scan.backward_config(batch, dim, dstate, 1, seqlen, n_sms, 2)
    cfgs = [picked] + [scan.BackwardConfig(max(1, 32 // k[0]), k[0], picked.tile, picked.chunk, 1, segment=k[1],
                                           maxnreg=(k[2] if len(k) > 2 and k[2] else None)) for k in knobs]
    return list(dict.fromkeys(cfgs))


def parse(specs):
    out = {}
    for spec in specs:
        shape, knobs = spec.split(":")
        out.setdefault(tuple(int(v) for v in shape.split("x")), []).append(tuple(int(v) for v in knobs.split(",")))
    return out


def resident(kernel, warps: int) -> str:
    """Registers, spilled bytes and the warps of `warps`-warp programs that fit an SM by registers."""
    if kernel is None:
        return "regs ?"
    return (f"regs {kernel.n_regs:3d} spills {kernel.n_spills:4d} "
            f"resident {_runtime.resident_warps(kernel.n_regs, warps):2d} warps/SM")


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
    fwd = parse(args.forward)
    warm([(shape, cfg, args.dstate) for shape, knobs in fwd.items()
          for cfg in forward_configs(shape, knobs, args.dstate, n_sms)[1]], _warm_one, processes=8)
    for (batch, seqlen, dim), knobs in fwd.items():
        w = ScanWorkload(f"{batch}x{seqlen} dim {dim}", batch, seqlen, dim=dim, dstate=args.dstate)
        inp = w.make_inputs("cuda")
        tensors = [inp[k] for k in NAMES]
        floor = w.bytes() / bw * 1e3
        picked, cfgs = forward_configs((batch, seqlen, dim), knobs, args.dstate, n_sms)
        print(f"\nforward {w.shape}: floor {floor:.3f} ms, picked {picked}")
        first = None
        for cfg in cfgs:
            try:
                y, _, _ = scan.scan_forward(*tensors, True, config=cfg)
                ms = triton.testing.do_bench(lambda: scan.scan_forward(*tensors, True, config=cfg))
            except Exception as e:
                print(f"  {cfg}: {type(e).__name__}: {str(e)[:100]}")
                continue
            first = y if first is None else first
            mark = "*" if cfg == picked else " "
            print(f" {mark}lanes {cfg.lanes} warps {cfg.num_warps} block_d {cfg.block_d} tile {cfg.tile} "
                  f"segment {cfg.segment}{' late' if cfg.hand_late else ''} maxnreg {cfg.maxnreg or '-'}: "
                  f"{ms:.3f} ms  x floor {ms / floor:.2f}  "
                  f"diff {rel(y, first):.1e}  {resident(scan.last_compiled.get('forward'), cfg.num_warps)}",
                  flush=True)
    bwd = parse(args.backward)
    warm([(shape, cfg, args.dstate) for shape, knobs in bwd.items()
          for cfg in backward_configs(shape, knobs, args.dstate, n_sms)], _warm_bwd_one, processes=12)
    for (batch, seqlen, dim), knobs in bwd.items():
        w = ScanWorkload(f"{batch}x{seqlen} dim {dim}", batch, seqlen, dim=dim, dstate=args.dstate)
        inp = w.make_inputs("cuda")
        tensors = [inp[k] for k in NAMES]
        dy = torch.randn_like(inp["u"])
        cfgs = backward_configs((batch, seqlen, dim), knobs, args.dstate, n_sms)
        picked = cfgs[0]
        _, _, ckpt = scan.scan_forward(*tensors, True, ckpt_tile=picked.chunk)
        floor = w.bytes() / bw * 1e3
        print(f"\nbackward {w.shape}: forward floor {floor:.3f} ms, picked {picked}")
        first = None
        for cfg in cfgs:
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
            print(f" {mark}lanes {cfg.lanes} block_d {cfg.block_d} segment {cfg.segment} maxnreg {cfg.maxnreg or '-'}: "
                  f"backward {ms:.3f} ms  (x forward floor {ms / floor:.2f})  max grad diff {diff:.1e}  "
                  f"{resident(scan.last_compiled.get('backward'), cfg.num_warps)}", flush=True)


if __name__ == "__main__":
    main()
