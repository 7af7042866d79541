"""The split Gluon forward's resources as the GPU compiles them (registers, spills, shared memory, warps) against the
one-warp-group kernel's, on a bench workload's late launch.

    PYTHONPATH=. python3 benchmarks/split_probe.py [--workload 2.7b-8x4K]
"""

import argparse

import torch

from flashssm.bench.workloads import WORKLOADS
from flashssm.ops.checks import check_ssd_scan
from flashssm.ops.ssd import forward_gluon
from flashssm.ops.ssd.forward import launch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="2.7b-8x4K")
    a = p.parse_args()
    inp = WORKLOADS[a.workload].make_inputs("cuda")
    dims = check_ssd_scan(**inp, chunk_size=256)
    props = torch.cuda.get_device_properties(0)
    for split in (False, True):
        forward_gluon.SPLIT = split
        y, h, _, k = launch(dims, **inp, return_final_states=True)
        torch.cuda.synchronize()
        warps = k.metadata.num_warps
        regs_per_program = k.n_regs * 32 * warps
        fit_regs = 65536 // regs_per_program
        fit_smem = (props.shared_memory_per_multiprocessor) // (k.metadata.shared + 1024)
        print(f"SPLIT {split}: {k.metadata.name} registers {k.n_regs} spills {k.n_spills} shared {k.metadata.shared} "
              f"warps {warps}: programs an SM by registers {fit_regs}, by shared memory {fit_smem}", flush=True)


if __name__ == "__main__":
    main()
