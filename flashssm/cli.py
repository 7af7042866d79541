"""The `flashssm` command: `bench` (kernels), `bench model` (end to end), `generate`, `profile`."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["bench", "model"]:
        from flashssm.bench import model as model_bench

        parser = argparse.ArgumentParser(prog="flashssm bench model", description=model_bench.__doc__,
                                         formatter_class=argparse.RawDescriptionHelpFormatter)
        model_bench.add_arguments(parser)
        return model_bench.main(parser.parse_args(argv[2:]))

    from flashssm.bench import cli as bench_cli
    from flashssm.generation import cli as generate_cli
    from flashssm.profile import cli as profile_cli

    parser = argparse.ArgumentParser(prog="flashssm", description="flashssm: fused Triton kernels for state-space "
                                     "models, and the tools to measure them.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    bench = commands.add_parser("bench", help="time the kernels against their peers and the hardware floor "
                                "(`flashssm bench model`: whole models)",
                                description=bench_cli.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_cli.add_arguments(bench)
    generate = commands.add_parser("generate", help="generate text or token ids from a local checkpoint directory",
                                   description=generate_cli.DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    generate_cli.add_arguments(generate)
    profile = commands.add_parser("profile", help="characterise a model workload on the GPU: operator breakdown, "
                                  "roofline, per-kernel table, Chrome trace",
                                  description=profile_cli.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    profile_cli.add_arguments(profile)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
