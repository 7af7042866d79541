"""A model's training step with autograd's backward on its CUDA device thread (PyTorch's default) and on the calling
thread (`torch.autograd.set_multithreading_enabled(False)`), alternating in one process: `flashssm bench model`'s
step (AdamW, bf16 autocast, cross entropy), flashssm's model and, where importable, mamba_ssm's over the same weights.

    PYTHONPATH=. python3 benchmarks/model_step_threads.py [--preset mamba2-130m] [--shape 1x512 ...] [--rounds 5]

Small steps are bound by their host work; a layer's training call measured -15 to -41 % (benchmarks/
autograd_threads.py, seventieth session). This says what a whole model's step gets.
"""

import argparse
import statistics

import torch

from flashssm.bench.model import BUILDERS, Unavailable, _config, _timed, _train_fn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", action="append")
    ap.add_argument("--shape", action="append", help="batch x seqlen, e.g. 1x512")
    ap.add_argument("--impl", action="append")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    from flashssm.models import MambaLM

    device = torch.device(args.device)
    for name in args.preset or ["mamba2-130m", "mamba1-130m"]:
        config = _config(name)
        for shape in args.shape or ["1x512", "4x2048"]:
            batch, seqlen = (int(v) for v in shape.split("x"))
            torch.manual_seed(0)
            with torch.device(device):
                model = MambaLM(config, dtype=torch.float32)
            ids = torch.randint(0, config.vocab_size, (batch, seqlen), device=device)
            for impl in args.impl or ["flashssm", "mamba_ssm"]:
                try:
                    peer = BUILDERS[impl](model, config)
                except Unavailable as err:
                    print(f"{name} {shape} {impl}: unavailable ({err})")
                    continue
                peer.train()
                step = _train_fn(peer, ids, device)

                def calling_thread(step=step):
                    with torch.autograd.set_multithreading_enabled(False):
                        step()

                times = {"device thread": [], "calling thread": []}
                try:
                    for _ in range(args.rounds):
                        times["device thread"].append(_timed(step, device, args.repeat)[0])
                        times["calling thread"].append(_timed(calling_thread, device, args.repeat)[0])
                except Exception as err:  # (a peer failing, e.g. mamba_ssm's Mamba-1 without its CUDA build)
                    print(f"{name} {shape} {impl}: failed ({type(err).__name__}: {str(err).splitlines()[0][:160]})")
                    continue
                a, b = (statistics.median(v) * 1e3 for v in times.values())
                print(f"{name} {shape} {impl}: device thread {a:.2f} ms, calling thread {b:.2f} ms "
                      f"({(b / a - 1) * 100:+.1f} %)", flush=True)
                peer = step = None
            model = None
            if device.type == "cuda":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
