"""Run test_every_option of the SSD backward on the GPU for many random inputs, to tell a flaky case
from a real one (the test suite draws fresh inputs each run).

    PYTHONPATH=. python3 -m benchmarks.repeat_ssd_backward_options [SEEDS] [--old] [--states]

--old also runs an older copy of the chain form (benchmarks/_old_backward_chain.py, written with
`git show REV:flashssm/ops/ssd/backward_chain.py`); --states runs the chain form twice, with the entering states
stored by the forward and recomputed (backward_chain.STATES_FROM_FORWARD). Prints the number of failing seeds per
option set, and the first failures' seeds and messages."""

import importlib
import sys

import torch

import tests.ops.test_ssd_backward as T
from flashssm.ops.ssd import backward

# (D, z, dt_bias, dt_softplus, dt_limit, initial_states)
COMBOS = [("hp", False, True, False, True, False), ("h", False, True, False, True, False),
          (None, False, True, False, True, True), ("hp", True, True, True, True, False),
          (None, True, True, False, True, False)]


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 25
    modules = [("new", backward.backward_chain)]
    if "--old" in sys.argv:
        modules.append(("old", importlib.import_module("benchmarks._old_backward_chain")))
    runs = [(label, module, None) for label, module in modules]
    if "--states" in sys.argv:
        runs = [("stored", backward.backward_chain, True), ("recomputed", backward.backward_chain, False)]
    for label, module, stored in runs:
        backward.backward_chain = module
        if stored is not None:
            module.STATES_FROM_FORWARD = stored
        for combo in COMBOS:
            fails = []
            for seed in range(seeds):
                torch.manual_seed(seed)
                try:
                    T.test_every_option(*combo, "cuda")
                except AssertionError as e:
                    fails.append((seed, " ".join(str(e).split())[:300]))
            print(label, combo, "fails", len(fails), flush=True)
            for f in fails[:3]:
                print("   ", f, flush=True)


if __name__ == "__main__":
    main()
