"""Run test_every_option of the SSD backward on the GPU for many random inputs, to tell a flaky case
from a real one (the test suite draws fresh inputs each run).

    PYTHONPATH=. python3 -m benchmarks.repeat_ssd_backward_options [SEEDS] [--old]

--old also runs an older copy of the chain form (benchmarks/_old_backward_chain.py, written with
`git show REV:flashssm/ops/ssd/backward_chain.py`). Prints the number of failing seeds per option set."""

import importlib
import sys

import torch

import tests.ops.test_ssd_backward as T
from flashssm.ops.ssd import backward

# (D, z, dt_bias, dt_softplus, dt_limit, initial_states)
COMBOS = [("hp", False, True, False, True, False), ("h", False, True, False, True, False),
          (None, False, True, False, True, True), ("hp", True, True, True, True, False)]


def main():
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 25
    modules = [("new", backward.backward_chain)]
    if "--old" in sys.argv:
        modules.append(("old", importlib.import_module("benchmarks._old_backward_chain")))
    for label, module in modules:
        backward.backward_chain = module
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
