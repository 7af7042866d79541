"""The Mamba-1 mixer (2.8B shape: d_model 2560, d_inner 5120, dstate 16; bf16) as flashssm's MambaMixer runs it
(in_proj's (batch, seqlen, 2 d_inner) output, so x, z and delta reach conv1d and the scan channels contiguous) against
the same parameters run the way mamba_ssm's Mamba does (one GEMM W_in @ hidden^T, so x and z are tokens contiguous,
conv1d and the scan read rows along the sequence, delta = W_dt @ dt^T likewise, out_proj reads y transposed):
forward (prefill) and forward + backward, alternating in one process, ms; and the two outputs' difference.

    PYTHONPATH=. python benchmarks/mixer1_tokens_layout.py [--shape 8x2048 --shape 1x16384 ...] [--rounds 3]

What it answers: the scan alone is 15 % (forward) and 12 % (forward + backward) slower in the mixer's layout than
tokens contiguous (benchmarks/notes/selective_scan.md, forty-fourth session); whether a mixer that feeds it tokens
contiguous gains that end to end, or loses it (or more) in the GEMMs, conv1d and the copies autograd makes.
"""

import argparse

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from flashssm.modules.mamba1 import MambaMixer
from flashssm.ops.conv1d import causal_conv1d
from flashssm.ops.selective_scan import selective_scan


def forward_tokens(m: MambaMixer, hidden: torch.Tensor) -> torch.Tensor:
    """MambaMixer.forward (no cache, no cu_seqlens) with x, z and delta tokens contiguous."""
    batch, seqlen, _ = hidden.shape
    xz = m.in_proj.weight @ hidden.reshape(batch * seqlen, -1).t()  # (2 d_inner, batch seqlen), one GEMM
    if m.in_proj.bias is not None:
        xz = xz + m.in_proj.bias[:, None]
    xz = xz.view(2 * m.d_inner, batch, seqlen).transpose(0, 1)  # (batch, 2 d_inner, seqlen), rows along seqlen
    x, z = xz[:, :m.d_inner], xz[:, m.d_inner:]
    x = causal_conv1d(x, m.conv1d.weight.squeeze(1), m.conv1d.bias, "silu")  # keeps x's layout
    x_dbl = F.linear(x.transpose(1, 2).reshape(batch * seqlen, -1), m.x_proj.weight)  # x read transposed
    dt, B, C = torch.split(x_dbl, [m.dt_rank, m.d_state, m.d_state], dim=-1)
    delta = (m.dt_proj.weight @ dt.t()).view(m.d_inner, batch, seqlen).transpose(0, 1)
    B = B.view(batch, seqlen, -1).transpose(1, 2)
    C = C.view(batch, seqlen, -1).transpose(1, 2)
    A, D, delta_bias = m._ssm_params()
    y = selective_scan(x, delta, A, B, C, D=D, z=z, delta_bias=delta_bias, delta_softplus=True)
    return m.out_proj(y.transpose(1, 2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", help="BATCHxSEQLEN (default 8x2048, 8x2047, 1x16384)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    torch.manual_seed(0)
    mixer = MambaMixer(2560, d_state=16, layer_idx=0, device="cuda", dtype=torch.bfloat16)
    forms = {"channels (flashssm)": mixer.forward, "tokens (mamba_ssm's)": lambda h: forward_tokens(mixer, h)}
    for shape in args.shape or ["8x2048", "8x2047", "1x16384"]:
        batch, seqlen = map(int, shape.split("x"))
        hidden = torch.randn(batch, seqlen, 2560, device="cuda", dtype=torch.bfloat16)
        grad = torch.randn_like(hidden)
        leaf = hidden.clone().requires_grad_()
        with torch.no_grad():
            outs = {k: f(hidden).float() for k, f in forms.items()}
        a, b = outs.values()
        print(f"{shape}: outputs differ by {(a - b).abs().max().item():.3g} at most "
              f"(largest output {a.abs().max().item():.3g})", flush=True)
        grads = {}
        for k, f in forms.items():
            f(leaf).backward(grad)
            grads[k] = leaf.grad.float()
            leaf.grad = None
            mixer.zero_grad(set_to_none=True)
        a, b = grads.values()
        print(f"{shape}: input gradients differ by {(a - b).abs().max().item():.3g} at most "
              f"(largest {a.abs().max().item():.3g})", flush=True)
        for name in ("forward", "fwd+bwd"):
            times = {k: [] for k in forms}
            for _ in range(args.rounds):
                for k, f in forms.items():
                    if name == "forward":
                        def run(f=f):
                            with torch.no_grad():
                                f(hidden)
                    else:
                        def run(f=f):
                            f(leaf).backward(grad)
                    times[k].append(do_bench(run, warmup=5, rep=100))
            ms = {k: sorted(t)[len(t) // 2] for k, t in times.items()}
            (ka, ta), (kb, tb) = ms.items()
            print(f"{shape} {name}: {ka} {ta:.3f} ms, {kb} {tb:.3f} ms ({tb / ta:.3f}x)", flush=True)
            mixer.zero_grad(set_to_none=True)
            leaf.grad = None


if __name__ == "__main__":
    main()
