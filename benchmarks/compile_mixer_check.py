"""One Mamba-2 mixer of a model's width under bf16 autocast, through torch.compile (inductor) against eager: the input's
and every parameter's gradient (NaN, largest difference relative to eager's largest), with the conv as flashssm's
kernel and as its reference; and the conv alone with the autocast dtypes (x bf16, a column slice; weight and bias
fp32) and its output's gradient in the layout the mixer hands back (channels contiguous).

    PYTHONPATH=. python3 benchmarks/compile_mixer_check.py [--d-model 768] [--seqlen 512] [--form kernel]

--form F: the conv's form while torch.compile traces (`conv.COMPILE_FORM`: reference, the default since the
seventy-first session; custom_op; kernel, its launches traced into the graph, which is what went wrong).

Seventy-first session: the 130M Mamba-2 model trained through torch.compile reached NaN where eager did not, cured by
the conv's reference in the model; the conv alone in the mixer's layout, bf16 throughout, compiled as eager
(compile_conv_check.py). Which context does it take?
"""

import argparse

import torch


def _grads(fn, leaves, dy):
    out = fn(*leaves)
    return [out.detach()] + list(torch.autograd.grad(out, leaves, dy))


def _report(name, eager, comp):
    """One line: each output's (out, then the gradients by number) NaN and largest difference relative to eager's."""
    text = []
    for i, (e, c) in enumerate(zip(eager, comp)):
        top = e.float().abs().max().item()
        d = (c.float() - e.float()).abs().max().item() / max(top, 1e-30)
        text.append(f"{'out' if i == 0 else i}: {'NaN ' if not torch.isfinite(c).all() else ''}{d:.1e}")
    print(f"{name}: {', '.join(text)}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--seqlen", type=int, default=512)
    ap.add_argument("--form", default="kernel", choices=["reference", "custom_op", "kernel"])
    args = ap.parse_args()
    from flashssm import causal_conv1d
    from flashssm.ops.conv1d import conv as conv_module

    conv_module.COMPILE_FORM = args.form
    from flashssm.modules import Mamba2Mixer, mamba2
    from flashssm.ops.conv1d.reference import causal_conv1d_reference

    dev = "cuda"
    d = 2 * args.d_model + 256
    torch.manual_seed(0)
    wide = torch.randn(1, args.seqlen, 2 * d + 40, device=dev, dtype=torch.bfloat16)
    x = wide[..., d:2 * d].transpose(1, 2).detach().requires_grad_()
    w = (torch.randn(d, 4, device=dev) * 0.3).requires_grad_()
    b = torch.randn(d, device=dev).requires_grad_()
    dy = torch.randn(1, args.seqlen, d, device=dev, dtype=torch.bfloat16).transpose(1, 2)
    fn = lambda x, w, b: causal_conv1d(x, w, b, "silu")  # noqa: E731
    eager = _grads(fn, [x, w, b], dy)
    torch._dynamo.reset()
    _report("conv alone, x bf16 slice, w and b fp32, dy channels", eager, _grads(torch.compile(fn), [x, w, b], dy))

    for label, conv in (("kernel", causal_conv1d), ("reference", causal_conv1d_reference)):
        real = mamba2.causal_conv1d
        mamba2.causal_conv1d = conv
        try:
            torch.manual_seed(0)
            mixer = Mamba2Mixer(args.d_model, device=dev)
            h = torch.randn(1, args.seqlen, args.d_model, device=dev).requires_grad_()
            leaves = [h] + [p for p in mixer.parameters()]
            names = ["input"] + [n for n, _ in mixer.named_parameters()]

            def run(m):
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = m(h)
                return [out.detach().float()] + list(torch.autograd.grad(out.float().square().sum(), leaves))

            eager = run(mixer)
            torch._dynamo.reset()
            comp = run(torch.compile(mixer))
            print(f"mixer with the conv's {label}: gradients " + ", ".join(names), flush=True)
            _report(f"mixer with the conv's {label}", eager, comp)
        except Exception as err:
            print(f"mixer with the conv's {label}: failed ({type(err).__name__}: {str(err).splitlines()[0][:160]})")
        finally:
            mamba2.causal_conv1d = real


if __name__ == "__main__":
    main()
