"""Where a training step's memory goes, eager against torch.compile: `flashssm bench model` found the 370m model's 8 x 2K
step at 36900 MiB of peak memory eagerly and 13678 through torch.compile's CUDA graphs (H200, seventy-second session).

For each mode (eager, default, reduce-overhead): the memory the model and optimizer hold between steps, what a forward
leaves held for the backward (activations and logits), and the step's peak, in MiB; eagerly also the tensors autograd
saves, grouped by the flashssm line that saved them (`saved_tensors_hooks`; each storage counted once, a view keeping
its whole storage), in bytes per token and layer. Same weights and batch in every mode; bf16 autocast, AdamW.

    python3 benchmarks/model_memory.py --preset mamba2-370m --shape 8x2048
    python3 benchmarks/model_memory.py --preset mamba2-370m --shape 1x256 --layers 1 --device cpu   # the accounting only
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import traceback

import torch

from flashssm.bench.model import lm_loss, train_step
from flashssm.models import MambaLM, preset

MIB = 2 ** 20


def _allocated(device):
    if device.type != "cuda":
        return 0
    torch.cuda.synchronize(device)
    return torch.cuda.memory_allocated(device)


def _saved_by_line(model, ids, device):
    """{(flashssm file:line, shape, dtype): bytes} of the storages autograd saves in one forward."""
    seen, rows = set(), collections.Counter()

    def pack(t):
        key = t.untyped_storage().data_ptr()
        if key not in seen:
            seen.add(key)
            frames = [f for f in traceback.extract_stack() if "flashssm" in f.filename]
            name = frames[-1].filename if frames else ""
            where = f"{name[name.rindex('flashssm'):]}:{frames[-1].lineno}" if frames else "torch"
            rows[(where, tuple(t.shape), str(t.dtype).replace("torch.", ""))] += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = lm_loss(model, ids, device)
    del loss
    return rows


def _measure(model, mode, ids, device):
    graphs = mode == "reduce-overhead"
    fwd = model if mode == "eager" else torch.compile(model, mode=None if mode == "default" else mode)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")

    def step(hold=None):
        train_step(fwd, opt, ids, device, graphs, None if hold is None else lambda: hold.append(_allocated(device)))

    if device.type == "cuda":  # (from the start: a CUDA graph's pool is allocated while it is recorded)
        torch.cuda.reset_peak_memory_stats(device)
    for _ in range(3):  # the compile, cudagraph trees' warm-up and recording; the optimizer's state
        step()
    base = _allocated(device)
    hold = []
    step(hold)
    if device.type != "cuda":
        return base, hold[0] - base, 0, 0
    return base, hold[0] - base, torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="mamba2-370m")
    ap.add_argument("--shape", default="8x2048", help="batch x seqlen")
    ap.add_argument("--layers", type=int, help="the preset's width with this many layers")
    ap.add_argument("--mode", action="append", help="eager, default, reduce-overhead (default: all three on a GPU)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--top", type=int, default=16, help="rows of the saved-tensor table")
    ap.add_argument("--recompute", action="store_true", help="the Mamba layers remake their conv's (and norm's) "
                    "outputs in the backward (`MambaLM.set_recompute`); no saved-tensor table then: under the table's "
                    "hooks the recompute steps aside")
    args = ap.parse_args()
    device = torch.device(args.device)
    batch, seqlen = (int(v) for v in args.shape.split("x"))
    config = preset(args.preset)
    if args.layers:
        config = dataclasses.replace(config, n_layer=args.layers)
    torch.manual_seed(0)
    base_model = MambaLM(config, device=device, dtype=torch.float32).set_recompute(args.recompute)
    ids = torch.randint(0, config.vocab_size, (batch, seqlen), device=device)
    tokens = batch * seqlen

    if not args.recompute:  # (the recompute steps aside under a caller's saved-tensor hooks, as the table's are)
        rows = _saved_by_line(base_model, ids, device)
        total = sum(rows.values())
        print(f"{args.preset} x{config.n_layer} {args.shape} eager: autograd saves {total / MIB:.1f} MiB "
              f"({total / tokens / config.n_layer:.0f} bytes a token and layer, parameters included where saved)")
        for (where, shape, dtype), nbytes in rows.most_common(args.top):
            print(f"  {nbytes / MIB:10.1f} MiB {nbytes / tokens / config.n_layer:8.0f} B/token-layer  {where} "
                  f"{list(shape)} {dtype}")

    modes = args.mode or (["eager", "default", "reduce-overhead"] if device.type == "cuda" else [])
    for mode in modes:
        torch._dynamo.reset()
        model = copy.deepcopy(base_model)
        try:
            base, held, peak, reserved = _measure(model, mode, ids, device)
            label = f"{mode} (recompute)" if args.recompute else mode
            print(f"{label}: between steps {base / MIB:.0f} MiB; held by the forward {held / MIB:.0f} MiB "
                  f"({held / tokens / config.n_layer:.0f} B a token and layer; under CUDA graphs their pool's "
                  f"memory is not counted here); peak over 4 steps {peak / MIB:.0f} MiB allocated, "
                  f"{reserved / MIB:.0f} reserved", flush=True)
        except Exception as err:  # one mode failing must not hide the others
            print(f"{mode}: failed ({type(err).__name__}: {str(err).splitlines()[0][:200]})", flush=True)
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
