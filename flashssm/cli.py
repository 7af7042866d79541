"""The `flashssm` command."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from flashssm.bench import cli as bench_cli

    parser = argparse.ArgumentParser(prog="flashssm", description="flashssm: fused Triton kernels for state-space "
                                     "models, and the tools to measure them.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    bench = commands.add_parser("bench", help="time ssd_scan against its peers and the hardware floor",
                                description=bench_cli.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_cli.add_arguments(bench)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
