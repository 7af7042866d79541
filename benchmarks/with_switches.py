"""Run a `flashssm` command with module switches set first: an A/B of a switch through the CLI's own workloads
(`flashssm profile`, `flashssm bench model`) in separate processes.

    PYTHONPATH=. python3 benchmarks/with_switches.py flashssm.modules.block.FUSED_ADD_NORM=True -- \
        profile --model mamba2-2.7b --mode train --batch 8 --seqlen 4096 --layers 16 --kernels flashssm --out DIR

Each MODULE.NAME=VALUE (VALUE a Python literal) is set on the imported module before the command runs.
"""

import sys

from benchmarks.train_harness import switch
from flashssm import cli


def main(argv):
    split = argv.index("--") if "--" in argv else len(argv)
    for item in argv[:split]:
        target, literal = item.split("=", 1)
        module, attr, (value,), _ = switch(target, [literal])
        if not hasattr(module, attr):
            raise SystemExit(f"{module.__name__} has no switch {attr}")
        setattr(module, attr, value)
        print(f"{target} = {getattr(module, attr)!r}", flush=True)
    return cli.main(argv[split + 1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
