"""selective_scan's forward under given launch configurations against the one forward_config picks, through the
public path (so a training step's forward, which also stores the backward's states, takes it too), alternating in
one process, medians; ms.

    PYTHONPATH=. python benchmarks/ab_forward_configs.py -w m1-2.8b-8x2K-mixer [-w m1train-2.8b-8x2K-mixer ...]
        [--shape 32x2048-mixer --shape 4x8192-mixer-train ...] [--config 1,8,2,64 --config 1,8,2,64,512,late ...]
        [--rounds 3]

"picked" is forward_config's choice for the inputs' layout; "contiguous's pick" the choice for tokens-contiguous
inputs of the same sizes (the two differ for the mixer's channels-contiguous layout, forty-fourth session).

--config: lanes,tile,warps,block_d[,segment[,late]] (segment 0: the whole sequence; late: hand_late), with the
picked register cap. A training workload (m1train-*) times forward + backward; the backward's configuration is the
picked one in every case. y (and the gradients) are compared with the picked configuration's.
"""

import argparse

import torch
from triton.testing import do_bench

import flashssm
from flashssm.bench.workloads import WORKLOADS, ScanTrainWorkload, ScanWorkload
from flashssm.ops.selective_scan import scan


def parse(spec: str, maxnreg) -> scan.ForwardConfig:
    parts = spec.split(",")
    lanes, tile, warps, block_d = (int(v) for v in parts[:4])
    segment = int(parts[4]) if len(parts) > 4 else 0
    late = len(parts) > 5 and parts[5] == "late"
    return scan.ForwardConfig(block_d, lanes, tile, warps, segment=segment, maxnreg=maxnreg, hand_late=late)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--workload", action="append", default=[])
    ap.add_argument("--shape", action="append", default=[],
                    help="BATCHxSEQLEN[xDIM][-mixer][-train]: a workload made here, the 2.8B shape's dim 5120 unless "
                         "DIM is given (-mixer: the mixer's layout)")
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    picker = scan.forward_config
    made = {}
    for spec in args.shape:
        batch, seqlen, *dim = map(int, spec.split("-")[0].split("x"))
        kind = ScanTrainWorkload if "-train" in spec else ScanWorkload
        made[spec] = kind(spec, batch, seqlen, dim=dim[0] if dim else 5120, mixer_layout="-mixer" in spec)
    for name in args.workload + args.shape:
        w = WORKLOADS.get(name) or made[name]
        inp = w.make_inputs("cuda")
        train = "dy" in inp
        dy = inp.pop("dy", None)
        kw = dict(inp, delta_softplus=True)
        if train:
            # (clones keep a dense tensor's strides: u, delta and z stay in the workload's layout)
            kw = {k: v.detach().clone().requires_grad_() if isinstance(v, torch.Tensor) and v.is_floating_point()
                  else v for k, v in kw.items()}
        sizes = (w.batch, w.dim, w.dstate, 1, torch.cuda.get_device_properties(0).multi_processor_count,
                 inp["u"].element_size(), w.seqlen)
        picked = picker(*sizes, channels_last=scan.channels_contiguous(inp["u"]))
        variants = {"picked": picked, "contiguous's pick": picker(*sizes),
                    **{c: parse(c, picked.maxnreg) for c in args.config}}

        def step():
            """One call (with the backward for a training workload); y and the gradients of u, delta, z, B, C."""
            y = flashssm.selective_scan(**kw)
            if not train:
                return [y]
            y.backward(dy)
            out = [y.detach()] + [kw[k].grad for k in ("u", "delta", "z", "B", "C")]
            for v in kw.values():
                if isinstance(v, torch.Tensor):
                    v.grad = None
            return out

        results, times = {}, {v: [] for v in variants}
        for _ in range(args.rounds):
            for v, cfg in variants.items():
                scan.forward_config = lambda *a, cfg=cfg, **k: cfg
                try:
                    if v not in results:
                        results[v] = step()
                    times[v].append(do_bench(step, warmup=5, rep=100))
                finally:
                    scan.forward_config = picker
        print(f"\n{name} ({'forward + backward' if train else 'forward'}), picked {picked}", flush=True)
        base = sorted(times["picked"])[len(times["picked"]) // 2]
        for v in variants:
            ms = sorted(times[v])[len(times[v]) // 2]
            same = all(torch.equal(a, b) for a, b in zip(results[v], results["picked"]) if a is not None)
            diff = max(((a.float() - b.float()).abs().max().item() for a, b in zip(results[v], results["picked"])
                        if a is not None), default=0.0)
            print(f"  {v:>22}: {ms:.3f} ms ({ms / base:.3f}x the picked)  same bits: {same}, largest difference "
                  f"{diff:.3g}", flush=True)


if __name__ == "__main__":
    main()
