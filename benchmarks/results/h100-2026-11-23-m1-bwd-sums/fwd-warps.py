import torch, triton
from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.selective_scan import scan
for name in ("m1-2.8b-1x32K", "m1-2.8b-8x2K"):
    w = WORKLOADS[name]; inp = w.make_inputs("cuda")
    t = [inp[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")]
    for lanes, warps in ((4, 1), (4, 2), (4, 4), (4, 8), (2, 2), (2, 4), (8, 4), (1, 2), (1, 4)):
        cfg = scan.ForwardConfig(32 * warps // lanes, lanes, 8, warps)
        ms = triton.testing.do_bench(lambda: scan.scan_forward(*t, True, config=cfg))
        print(f"{name} lanes {lanes} warps {warps}: {ms:.3f} ms", flush=True)
