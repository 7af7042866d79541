"""fp16 training's gradients at the 2.7B mixer shape (80 heads x 64, dstate 128, one group; D, dt_bias, softplus)
against float64 (the chunked reference), on the GPU, in whatever flashssm the import path finds first (an A/B of two
trees, as time_ssd_calls.py): per input, the relative L2 error and the cost of rounding the float64 gradient to fp16
(the best a 16-bit gradient can do). Two dt regimes: the usual (softplus of N(-3, 1)) and dt near 0 (softplus of
-14 .. -13, ~1e-6: the states fp16 subnormals, what the tiles' scaled fp16 states are for).

    PYTHONPATH=. python3 benchmarks/fp16_train_accuracy.py [--batch 2 --seqlen 4096] [--deterministic] [--packed]

--deterministic: torch's deterministic mode (the tiles without float atomics; their states recomputed over the state
gradients' buffer), and a second run that must give the same bits. --packed: the batch's rows as one packed batch of
ragged sequences (`cu_seqlens`), the reference run per sequence.
"""

import argparse

import torch

import flashssm
from flashssm.ops.ssd import reference as ref


def rel(a, b):
    return float((a.double() - b).norm() / b.norm())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seqlen", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deterministic", action="store_true")
    ap.add_argument("--packed", action="store_true")
    a = ap.parse_args()
    print(f"flashssm from {flashssm.__file__}" + " deterministic" * a.deterministic + " packed" * a.packed)
    torch.use_deterministic_algorithms(a.deterministic)
    g = torch.Generator(device="cuda").manual_seed(a.seed)
    b, t, h, p, n = a.batch, a.seqlen, 80, 64, 128
    f32 = dict(device="cuda", dtype=torch.float32)
    for regime in ("usual", "dt-near-0"):
        kw = dict(x=torch.randn(b, t, h, p, generator=g, **f32).half(),
                  B=torch.randn(b, t, 1, n, generator=g, **f32).half(),
                  C=torch.randn(b, t, 1, n, generator=g, **f32).half(),
                  A=-torch.exp(torch.rand(h, generator=g, **f32) * 2.5), D=torch.randn(h, generator=g, **f32),
                  dt_bias=torch.randn(h, generator=g, **f32) * 0.5)
        if regime == "usual":
            kw["dt"] = torch.randn(b, t, h, generator=g, **f32) - 3.0
        else:
            kw["dt"] = torch.full((b, t, h), -14.0, **f32) + torch.rand(b, t, h, generator=g, **f32) - kw["dt_bias"]
        dy = torch.randn(b, t, h, p, generator=g, **f32).half()
        cu = None
        if a.packed:  # (the rows as one packed batch: ragged sequences, a one-token one among them)
            for k in ("x", "B", "C", "dt"):
                kw[k] = kw[k].reshape(1, b * t, *kw[k].shape[2:])
            dy = dy.reshape(1, b * t, h, p)
            cuts = sorted({0, b * t, 1, 2, 777, t + 513, b * t - 1000})
            cu = torch.tensor(cuts, device="cuda", dtype=torch.int32)

        def run():
            leaves = {k: v.clone().requires_grad_() for k, v in kw.items()}
            flashssm.ssd_scan(**leaves, chunk_size=256, dt_softplus=True, cu_seqlens=cu).backward(dy)
            return leaves

        leaves = run()
        if a.deterministic:
            again = run()
            same = all(torch.equal(leaves[k].grad, again[k].grad) for k in leaves)
            print(f"{regime:10s} deterministic: two runs the same bits: {same}")
            del again
        want = {k: v.double().requires_grad_() for k, v in kw.items()}
        if cu is None:
            y_ref = ref.ssd_scan_chunked(**want, chunk_size=256, dt_softplus=True)
            y_ref = y_ref[0] if isinstance(y_ref, tuple) else y_ref
            y_ref.backward(dy.double())
        else:  # each sequence alone
            for s0, e0 in zip(cu.tolist(), cu.tolist()[1:]):
                part = {k: (v[:, s0:e0] if k in ("x", "B", "C", "dt") else v) for k, v in want.items()}
                y_ref = ref.ssd_scan_chunked(**part, chunk_size=256, dt_softplus=True)
                y_ref = y_ref[0] if isinstance(y_ref, tuple) else y_ref
                y_ref.backward(dy[:, s0:e0].double())
        parts = []
        for k in ("x", "dt", "A", "B", "C", "D", "dt_bias"):
            got, ref_g = leaves[k].grad, want[k].grad
            floor = rel(ref_g.to(torch.float16 if k in ("x", "B", "C") else torch.float32), ref_g)
            parts.append(f"d{k} {rel(got, ref_g):.2e} (rounding {floor:.1e}, nan {int(got.isnan().sum())})")
        print(f"{regime:10s} " + "  ".join(parts), flush=True)
        del leaves, want, y_ref
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
