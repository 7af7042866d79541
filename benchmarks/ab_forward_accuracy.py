"""y's error against float64 for each value of a forward module switch, on the bench's accuracy workload and the
2.7B shape at 1 x 2K (or --workload), as the bench's accuracy check reports it (`flashssm.bench.measure.accuracy`).
The gradients' errors for a switch: `grad_error_switch.py`.

    PYTHONPATH=. python3 benchmarks/ab_forward_accuracy.py flashssm.ops.ssd.forward_gluon.M_SPLIT --value 2 --value 1
"""

import argparse

import flashssm
from benchmarks.train_harness import switch
from flashssm.bench.measure import accuracy
from flashssm.bench.workloads import WORKLOADS


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("switch")
    parser.add_argument("--value", action="append")
    parser.add_argument("--workload", action="append")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    module, name, values, saved = switch(args.switch, args.value)
    try:
        for wname in args.workload or ["accuracy-2x1K", "2.7b-1x2K"]:
            w = WORKLOADS[wname]
            for seed in range(args.seeds):
                inp = w.make_inputs("cuda", seed=seed)
                want = w.reference(inp)
                opts = w.options(*(inp.pop(k) for k in w.extra_inputs)) if w.layer else {}
                for v in values:
                    setattr(module, name, v)
                    y = flashssm.ssd_scan(**inp, **opts, chunk_size=w.chunk_size)
                    a = accuracy(y, want, y.dtype)
                    print(f"{wname} seed {seed} {name}={v!r}: rel err {a.rel_err:.3e}, within 1e-3 "
                          f"{100 * a.within_1e3:.1f} %, within 1 % {100 * a.within_1pct:.3f} %, NaN {a.nan}")
    finally:
        setattr(module, name, saved)


if __name__ == "__main__":
    main()
