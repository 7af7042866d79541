"""One call of a bench workload (forward, or forward + backward for a train-* workload) with the CUDA profiler
started for its second run only, for `ncu --profile-from-start off` (every kernel of that call is profiled).

    ncu --profile-from-start off ... python3 benchmarks/l2_profile.py WORKLOAD
"""

import sys

import torch

import flashssm
from flashssm.bench.workloads import WORKLOADS


def main(name):
    w = WORKLOADS[name]
    inp = w.make_inputs("cuda")
    dy = inp.pop("dy", None)
    if dy is not None:
        inp = {k: (v.detach().requires_grad_() if torch.is_tensor(v) and v.is_floating_point() else v)
               for k, v in inp.items()}
    for i in range(2):  # the first compiles outside the profiled range
        if i == 1:
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
        y = flashssm.ssd_scan(**inp, chunk_size=w.chunk_size)
        if dy is not None:  # (not .backward: a second call would add into .grad, an x-sized kernel the bench has not)
            torch.autograd.grad(y, [v for v in inp.values() if torch.is_tensor(v) and v.requires_grad], dy)
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main(sys.argv[1])
