"""What one training forward keeps for the backward, module by module: flashssm's model against
mamba_ssm's on the same weights (the `train-370m-8x2K` scenario of `flashssm bench model`: fp32
weights under bf16 autocast). Every tensor an autograd node saves is caught by a saved-tensors hook
and charged, once per storage, to the innermost module running when it was saved.
Run on the GPU: python benchmarks/train_memory.py [--layers N] [--batch B] [--seqlen L]"""

import argparse
import collections

import torch

from flashssm.bench.model import BUILDERS, _config
from flashssm.models import MambaLM


def saved_by_module(model, ids, device_type):
    """{module path: [(bytes, dtype, shape, op)]} for one forward + loss, storages counted once."""
    stack = ["(top)"]
    seen = set()
    found = collections.defaultdict(list)
    names = {m: n for n, m in model.named_modules()}

    def pre(module, args):
        stack.append(names[module])

    def post(module, args, out):
        stack.pop()

    handles = [m.register_forward_pre_hook(pre) for m in model.modules()]
    handles += [m.register_forward_hook(post) for m in model.modules()]

    def pack(t):
        key = (t.untyped_storage().data_ptr(), t.device)
        if key not in seen and t.untyped_storage().data_ptr() != 0:
            seen.add(key)
            found[stack[-1]].append((t.untyped_storage().nbytes(), t.dtype, tuple(t.shape)))
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            with torch.autocast(device_type, dtype=torch.bfloat16):
                out = model(ids)
                logits = out if isinstance(out, torch.Tensor) else out.logits
            stack.append("(loss)")
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())
    finally:
        for h in handles:
            h.remove()
    return found, loss


def kind(path):
    """A module path with its layer number taken out (layers.7.mixer.in_proj -> layers.*.mixer.in_proj)."""
    return ".".join("*" if p.isdigit() else p for p in path.split("."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seqlen", type=int, default=2048)
    ap.add_argument("--impls", nargs="+", default=["flashssm", "mamba_ssm"])
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    config = _config("mamba2-370m").replace(n_layer=args.layers)
    torch.manual_seed(0)
    device = torch.device(args.device)
    with torch.device(device):
        model = MambaLM(config, dtype=torch.float32)
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seqlen), device=device)
    cuda = device.type == "cuda"
    for impl in args.impls:
        try:
            peer = BUILDERS[impl](model, config)
        except Exception as err:
            print(f"{impl}: unavailable ({type(err).__name__}: {err})")
            continue
        peer.train()
        if cuda:
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        found, loss = saved_by_module(peer, ids, device.type)
        held = peak = float("nan")
        if cuda:
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated() - base
            peak = torch.cuda.max_memory_allocated() - base
        total = sum(b for v in found.values() for b, _, _ in v)
        print(f"\n== {impl}: {args.layers} layers, {args.batch}x{args.seqlen}: saved {total / 2**20:.0f} MiB, "
              f"allocated after the forward {held / 2**20:.0f} MiB, forward peak {peak / 2**20:.0f} MiB")
        by_kind = collections.defaultdict(list)
        for path, items in found.items():
            by_kind[kind(path)].extend(items)
        for k, items in sorted(by_kind.items(), key=lambda kv: -sum(b for b, _, _ in kv[1])):
            mib = sum(b for b, _, _ in items) / 2**20
            what = collections.Counter(f"{str(d).replace('torch.', '')}{list(s)}" for _, d, s in items)
            listing = ", ".join(f"{n}x {w}" if n > 1 else w for w, n in what.most_common(6))
            print(f"  {mib:9.1f} MiB  {k}: {listing}")
        loss.backward()
        del found, loss, peer
        model.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
