"""A Mamba-2 model's gradients through torch.compile against eager's, parameter by parameter, with each of flashssm's
kernels in turn swapped for its plain-PyTorch reference in the model (both runs), to find which one a compiled
training step gets wrong.

    PYTHONPATH=. python3 benchmarks/compiled_grads_check.py [--preset mamba2-130m] [--layers 2] [--shape 1x512]
        [--swap none --swap norm --swap ssd --swap conv] [--steps 3]

Seventy-first session: the 130M Mamba-2 model's training step through torch.compile (inductor) reached NaN losses
within six steps where eager's did not; the Mamba-1 model's did not (benchmarks/model_step_compiled.py). Each swap
prints, per step, the loss each way and the parameters whose compiled gradient has a NaN or differs from eager's by
more than --tol of its largest value.
"""

import argparse
import copy
import dataclasses

import torch

from flashssm.bench.model import _config, lm_loss


def _swaps():
    from flashssm.modules import mamba2
    from flashssm.ops.conv1d.reference import causal_conv1d_reference
    from flashssm.ops.norm.reference import rmsnorm_gated_reference
    from flashssm.ops.ssd.reference import ssd_scan_chunked

    def ssd_ref(*a, return_final_states=False, **k):
        y, final = ssd_scan_chunked(*a, **k)
        return (y, final) if return_final_states else y

    return {"none": {}, "norm": {(mamba2, "rmsnorm_gated"): rmsnorm_gated_reference},
            "ssd": {(mamba2, "ssd_scan"): ssd_ref}, "conv": {(mamba2, "causal_conv1d"): causal_conv1d_reference}}


def _step(model, fwd, opt, ids, device):
    loss = lm_loss(fwd, ids, device)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach()), grads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="mamba2-130m")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--shape", default="1x512")
    ap.add_argument("--swap", action="append")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--tol", type=float, default=5e-2)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    from flashssm.models import MambaLM

    device = torch.device(args.device)
    config = dataclasses.replace(_config(args.preset), n_layer=args.layers)
    batch, seqlen = (int(v) for v in args.shape.split("x"))
    gen = torch.Generator(device="cpu").manual_seed(1)
    batches = [torch.randint(0, config.vocab_size, (batch, seqlen), generator=gen).to(device)
               for _ in range(args.steps)]
    swaps = _swaps()
    for name in args.swap or list(swaps):
        saved = {k: getattr(*k) for k in swaps[name]}
        for (mod, attr), fn in swaps[name].items():
            setattr(mod, attr, fn)
        try:
            torch.manual_seed(0)
            with torch.device(device):
                base = MambaLM(config, dtype=torch.float32)
            runs = {}
            for mode in ("eager", "compiled"):
                model = copy.deepcopy(base).train()
                fwd = model if mode == "eager" else torch.compile(model, backend=args.backend)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
                runs[mode] = [_step(model, fwd, opt, ids, device) for ids in batches]
            for i, ((le, ge), (lc, gc)) in enumerate(zip(runs["eager"], runs["compiled"])):
                bad = []
                for n, g in ge.items():
                    c = gc.get(n)
                    if c is None:
                        bad.append(f"{n}: no gradient")
                        continue
                    top = g.abs().max().item()
                    d = (c - g).abs().max().item() / max(top, 1e-30)
                    if not torch.isfinite(c).all() or d > args.tol:
                        bad.append(f"{n}: {'NaN/inf ' if not torch.isfinite(c).all() else ''}{d:.1e}")
                print(f"swap {name} step {i}: loss eager {le:.5f} compiled {lc:.5f}; {len(bad)} of {len(ge)} "
                      f"gradients off" + ("".join(f"\n    {b}" for b in bad[:12]) if bad else ""), flush=True)
        except Exception as err:
            print(f"swap {name}: failed ({type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''})",
                  flush=True)
        finally:
            for (mod, attr), fn in saved.items():
                setattr(mod, attr, fn)
            torch._dynamo.reset()


if __name__ == "__main__":
    main()
