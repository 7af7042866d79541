"""`flashssm generate`: continue prompts with a model from a local checkpoint directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DESCRIPTION = """\
Load a checkpoint directory (mamba_ssm's format, or transformers' Mamba2 / Mamba format) and
continue one or more prompts. Prompts are text when the directory holds a tokenizer.json (read
with the `tokenizers` library: pip install 'flashssm[text]'), or token ids (--ids "1,2,3",
repeatable) otherwise. Prompts of different lengths are prefilled packed, then decoded one token
per step (CUDA graphs on a GPU). Prints each continuation, then tokens/s. No network access.

  flashssm generate ./mamba2-130m --prompt "The capital of France is" --max-new-tokens 32
  flashssm generate ./ckpt --ids 1,2,3 --ids 4,5 --temperature 0
"""

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="a local checkpoint directory (config.json and weights)")
    parser.add_argument("-p", "--prompt", action="append", default=[], help="a text prompt (repeatable)")
    parser.add_argument("--ids", action="append", default=[], help="a prompt as comma-separated token ids (repeatable)")
    parser.add_argument("-n", "--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0, help="0: greedy (default 1)")
    parser.add_argument("--top-k", type=int, default=0, help="0: off")
    parser.add_argument("--top-p", type=float, default=1.0, help="1: off")
    parser.add_argument("--eos", type=int, action="append", help="an end-of-sequence token id (repeatable; default: "
                        "the tokenizer's or config's eos_token_id, if any)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--dtype", choices=list(DTYPES), default=None, help="default: bf16 on a GPU, fp32 on the CPU")
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--no-cuda-graph", action="store_true", help="decode without CUDA graphs")
    parser.set_defaults(func=main)


def _eos_from_config(directory: Path):
    import json

    for name in ("generation_config.json", "config.json"):
        try:
            value = json.loads((directory / name).read_text()).get("eos_token_id")
        except (OSError, ValueError):
            continue
        if isinstance(value, int) or (isinstance(value, list) and value):
            return value
    return None


def main(args: argparse.Namespace) -> int:
    import torch

    from flashssm.models import MambaLM

    directory = Path(args.checkpoint)
    tokenizer = None
    if (directory / "tokenizer.json").exists():
        try:
            from tokenizers import Tokenizer
        except ImportError:
            print("this checkpoint has a tokenizer.json; text needs the tokenizers library: "
                  "pip install 'flashssm[text]' (or pass --ids)", file=sys.stderr)
            return 2
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    if args.prompt and tokenizer is None:
        print(f"{directory} holds no tokenizer.json: pass prompts as token ids (--ids 1,2,3)", file=sys.stderr)
        return 2
    prompts = []
    try:
        prompts += [tokenizer.encode(p).ids for p in args.prompt]
        prompts += [[int(t) for t in s.split(",") if t.strip()] for s in args.ids]
    except ValueError:
        print(f"--ids takes comma-separated integers, got {args.ids}", file=sys.stderr)
        return 2
    if not prompts:
        print("give at least one prompt: --prompt TEXT or --ids 1,2,3", file=sys.stderr)
        return 2
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = getattr(torch, DTYPES[args.dtype or ("bf16" if device.type == "cuda" else "fp32")])
    try:
        model = MambaLM.from_pretrained(directory, device=device, dtype=dtype).eval()
    except (OSError, ValueError) as err:
        print(f"cannot load {directory}: {err}", file=sys.stderr)
        return 2
    eos = args.eos if args.eos else _eos_from_config(directory)
    try:
        outputs, stats = model.generate(prompts, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                                        top_p=args.top_p, eos_token_id=eos, seed=args.seed,
                                        cuda_graph=False if args.no_cuda_graph else None, progress=True,
                                        return_stats=True)
    except (TypeError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for prompt, out in zip(prompts, outputs):
        if tokenizer is not None:
            print(tokenizer.decode(prompt + out))
        else:
            print(",".join(map(str, out)))
        print("---")
    print(f"{stats.prompt_tokens} prompt tokens in {stats.prefill_seconds:.3f} s; {stats.new_tokens} new tokens, "
          f"decoding at {stats.decode_tokens_per_second:.1f} tokens/s ({len(prompts)} sequences, {device}, "
          f"{str(dtype).replace('torch.', '')})", file=sys.stderr)
    return 0
