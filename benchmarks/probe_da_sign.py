"""Fuzz case 4057396612 (model shapes) on the GPU: dA came out near minus the float64 reference's (-2.75e-3 against
2.83e-3) with every other gradient right, while the interpreter gets it (fifty-ninth session). The case: bf16, batch 4,
seqlen 1, one head, headdim 128, dstate 128, chunk 256, initial states, D, dt_bias; dA is two sets of terms through
the initial state's decay (6e-6): to y (T_y, 3e-4) and to the final states (T_f, 2.5e-3), with the final states'
incoming gradient one value expanded over every element (strides 0). This varies one thing at a time: that
gradient's layout, the deterministic mode, the backward's form, seqlen, dtype; and prints dA against T_y and T_f.

    python -m benchmarks.probe_da_sign
"""
import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import flashssm  # noqa: E402
from flashssm.ops.ssd import reference as R  # noqa: E402
from tests.fuzz import fuzz  # noqa: E402


def inputs():
    cap = {}

    def diff(out, fn, ref_fn, kw, g, device, **k):
        names = list(kw)
        ref_kw = fuzz.leaves(fuzz.float64(kw), names)
        want = fuzz._named(ref_fn(**ref_kw), k["outputs"])
        cap["incoming"] = {name: fuzz.incoming_layout(fuzz.randn(g, *want[name].shape).to(
            device=device, dtype=kw["x"].dtype if name == "y" else torch.float32), g) for name in k["backprop"]}
        cap["kw"] = kw

    saved = {n: getattr(fuzz, n) for n in ("differential", "repeated_call", "repeated_training_call",
                                            "packed_nan_stays")}
    for n in saved:
        setattr(fuzz, n, lambda *a, **k: None)
    fuzz.differential = diff
    try:
        fuzz.case_ssd_scan(4057396612, torch.device("cuda" if torch.cuda.is_available() else "cpu"), "model")
    finally:
        for n, f in saved.items():
            setattr(fuzz, n, f)
    return cap["kw"], cap["incoming"]


def da_of(kw, dy, df, seqlen=None, dtype=None, deterministic=False, form=None):
    from flashssm.ops.ssd import backward as bw
    kw = dict(kw)
    if dtype is not None:
        for k in ("x", "B", "C"):
            kw[k] = kw[k].to(dtype)
    leaves = {k: v.detach().clone().requires_grad_() for k, v in kw.items()}
    before = bw.DEFAULT_FORM
    if form:
        bw.DEFAULT_FORM = form
    torch.use_deterministic_algorithms(deterministic)
    try:
        y, fin = flashssm.ssd_scan(**leaves, chunk_size=256, return_final_states=True)
        torch.autograd.backward([y, fin], [dy.to(y.dtype), df])
    finally:
        torch.use_deterministic_algorithms(False)
        bw.DEFAULT_FORM = before
    ref = {k: v.detach().double().clone().requires_grad_() for k, v in kw.items()}
    y64, fin64 = R.ssd_scan_chunked(**ref, chunk_size=256)
    torch.autograd.backward([y64, fin64], [dy.double(), df.double()])
    return float(leaves["A"].grad), float(ref["A"].grad)


def main():
    kw, inc = inputs()
    dy, df = inc["y"], inc["final_states"]
    dtp = R.process_dt(kw["dt"].double(), kw["dt_bias"].double(), False, (0.0, math.inf), torch.float64)[:, 0, 0]
    dec = torch.exp(dtp * kw["A"].double())
    h0 = kw["initial_states"].double()[:, 0]
    Ty = float((dtp * dec * torch.einsum("bp,bn,bpn->b", dy.double()[:, 0, 0], kw["C"].double()[:, 0, 0], h0)).sum())
    Tf = float((dtp * dec * torch.einsum("bpn,bpn->b", df.double()[:, 0], h0)).sum())
    print(f"T_y {Ty:.4e}  T_f {Tf:.4e}  dfinal strides {tuple(df.stride())}", flush=True)
    rows = [("as drawn", {}), ("dfinal contiguous", dict(df=df.contiguous())),
            ("dfinal zero", dict(df=torch.zeros_like(df))), ("dy zero", dict(dy=torch.zeros_like(dy))),
            ("deterministic", dict(deterministic=True)), ("parallel form", dict(form="parallel")),
            ("fp32 inputs", dict(dtype=torch.float32)), ("fp16 inputs", dict(dtype=torch.float16))]
    for label, change in rows:
        args = dict(dy=dy, df=df)
        args.update({k: v for k, v in change.items() if k in ("dy", "df")})
        rest = {k: v for k, v in change.items() if k not in ("dy", "df")}
        try:
            got, want = da_of(kw, args["dy"], args["df"], **rest)
            print(f"{label:20s} dA {got: .4e}  want {want: .4e}  ratio {got / want if want else float('nan'): .3f}",
                  flush=True)
        except Exception as err:
            print(f"{label:20s} raised {type(err).__name__}: {str(err).splitlines()[0][:150]}", flush=True)
    # the same inputs with two tokens (the first as drawn, a second with dt 0 contributes nothing)
    kw2 = {k: v for k, v in kw.items()}
    for k in ("x", "B", "C"):
        kw2[k] = torch.cat([kw[k], kw[k]], dim=1)
    kw2["dt"] = torch.cat([kw["dt"], torch.full_like(kw["dt"], -1e9)], dim=1)  # + bias, clamped at 0: dt 0
    dy2 = torch.cat([dy, torch.zeros_like(dy)], dim=1)
    got, want = da_of(kw2, dy2, df)
    print(f"{'two tokens':20s} dA {got: .4e}  want {want: .4e}  ratio {got / want if want else float('nan'): .3f}")


if __name__ == "__main__":
    main()
