"""Huge-input checks (issue 9): kernels on inputs whose element counts pass 2^31, against float64
references run in pieces.

    PYTHONPATH=. python3 benchmarks/check_huge.py [ssd-fwd] [ssd-bwd] [scan-fwd] [decode] [--json F]

- ssd-fwd: ssd_scan forward, 2.7B shape (80 heads x 64, dstate 128, 1 group), bf16, 1 x 2M tokens
  by default (x: 1.07e10 elements). The chunked reference runs 64K tokens at a time, each piece
  starting from the state the one before ended with; chunk boundaries fall on the same tokens.
- ssd-bwd: forward and backward of the same shape at 1 x 1M tokens (x 5.4e9 elements; the chunk
  states the backward keeps, 2.7e9). The reference sweeps forward through 8K-token pieces keeping
  the states between them, then backward through them in reverse, each piece's initial-state
  gradient becoming the previous piece's final-state gradient: exact gradients of the whole
  sequence, piece by piece. dA is summed over the pieces.
- scan-fwd: selective_scan forward, Mamba-1 2.8B shape (dim 5120, dstate 16), bf16, softplus,
  D and z, 1 x 512K tokens (u, delta, z: 2.7e9 elements each). Every channel is independent, so the
  reference takes the first 64, 64 random and the last 64 channels (the last ones sit past 2^31 in
  u's layout). It is the SSD chunked reference with one head per (channel, state) pair, headdim 1,
  dstate 1 (a selective scan is exactly that), in pieces with the state handed over, checked first
  against the step-by-step reference on the first 2K tokens.
- decode: ssd_step with a cache of 4096 sequences (state 2.7e9 fp32 elements) read through
  state_batch_indices in reverse order, and selective_scan_step at cache batch 4096, against the
  float64 step in slices of 256 rows.

Each check prints one line (relative errors against float64, NaN count) and fails (exit 1) on a
NaN or an error above its bound; the bounds are what the same shapes meet at small sizes (bf16
inputs: ~2e-3 for y), so an offset that wraps at 2^31 (an error near 1) cannot pass.
`--device cpu` with small sizes runs the script's logic on the CPU (the references stand in for
the bf16 kernels there).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

import flashssm
from flashssm.bench.workloads import ScanStepWorkload, ScanWorkload, SSDStepWorkload, SSDWorkload
from flashssm.ops.selective_scan.reference import (process_delta, selective_scan_reference,
                                                   selective_scan_step_reference)
from flashssm.ops.ssd.reference import ssd_scan_chunked, ssd_step_reference

TWO31 = 2 ** 31
DEVICE = "cuda"


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


class ErrorSum:
    """sqrt(sum |a - b|^2 / sum |b|^2) accumulated over pieces, and the NaN count of the kernel's side."""

    def __init__(self):
        self.num = self.den = 0.0
        self.nan = 0

    def add(self, got: torch.Tensor, ref: torch.Tensor):
        got = got.double()
        self.nan += int(torch.isnan(got).sum())
        self.num += float((got - ref).pow(2).sum())
        self.den += float(ref.pow(2).sum())

    @property
    def rel(self) -> float:
        return (self.num / self.den) ** 0.5 if self.den > 0 else float("nan")


def report(name: str, errors: dict[str, ErrorSum], bounds: dict[str, float], extra: str, results: dict) -> bool:
    ok = True
    parts = []
    for key, err in errors.items():
        good = err.nan == 0 and err.rel < bounds[key]
        ok &= good
        parts.append(f"{key} {err.rel:.3e}" + (f" NaN {err.nan}" if err.nan else "") + ("" if good else " FAIL"))
    print(f"{name}: {extra}; rel err " + ", ".join(parts), flush=True)
    results[name] = dict(extra=extra, ok=ok, **{k: dict(rel=e.rel, nan=e.nan, bound=bounds[k])
                                                  for k, e in errors.items()})
    return ok


def pieces(total: int, size: int):
    return [slice(s, min(s + size, total)) for s in range(0, total, size)]


# ---------------------------------------------------------------------------------------------- SSD

SSD_KEYS = ("x", "dt", "A", "B", "C")


def ssd_piece(inp: dict, sl: slice, D, state, requires_grad=False):
    """The float64 chunked reference on tokens `sl`, from `state`; returns (leaves, y, final)."""
    leaves = {k: (v[:, sl] if k != "A" else v).double() for k, v in inp.items() if k in SSD_KEYS}
    if requires_grad:
        for v in leaves.values():
            v.requires_grad_()
    y, final = ssd_scan_chunked(**leaves, D=D, chunk_size=256, initial_states=state)
    return leaves, y, final


def check_ssd_forward(tokens: int, results: dict) -> bool:
    w = SSDWorkload("huge", 1, tokens)
    inp = w.make_inputs(DEVICE, seed=3)
    D = torch.randn(w.nheads, device=DEVICE)
    start = time.perf_counter()
    y, final = flashssm.ssd_scan(**inp, chunk_size=256, D=D, return_final_states=True)
    sync()
    kernel_s = time.perf_counter() - start
    errors = {"y": ErrorSum(), "final": ErrorSum()}
    state = None
    for sl in pieces(tokens, 1 << 16):
        _, y_ref, state = ssd_piece(inp, sl, D.double(), state)
        errors["y"].add(y[:, sl], y_ref)
        del y_ref
    errors["final"].add(final, state)
    extra = f"1x{tokens} tokens, x {inp['x'].numel():,} elements ({inp['x'].numel() / TWO31:.1f} x 2^31), kernel {kernel_s:.2f} s"
    return report("ssd_scan forward", errors, {"y": 1e-2, "final": 1e-2}, extra, results)


def check_ssd_backward(tokens: int, piece: int, results: dict) -> bool:
    w = SSDWorkload("huge", 1, tokens)
    inp = w.make_inputs(DEVICE, seed=5)
    D = torch.randn(w.nheads, device=DEVICE)
    gen = torch.Generator(device=DEVICE).manual_seed(6)
    dy = torch.randn(inp["x"].shape, generator=gen, device=DEVICE, dtype=torch.float32).to(inp["x"].dtype)
    leaves = {k: inp[k].requires_grad_() for k in SSD_KEYS}
    start = time.perf_counter()
    y = flashssm.ssd_scan(**leaves, chunk_size=256, D=D)
    grads = dict(zip(SSD_KEYS, torch.autograd.grad(y, list(leaves.values()), dy)))
    sync()
    kernel_s = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / 2 ** 30 if DEVICE == "cuda" else 0.0
    n_chunks = tokens // 256
    state_elems = n_chunks * w.nheads * w.headdim * w.dstate

    errors = {k: ErrorSum() for k in ("y", *("d" + k for k in SSD_KEYS))}
    spans = pieces(tokens, piece)
    entering = [None]  # the state each piece starts from, float64
    for sl in spans:  # forward sweep: y and the states between pieces
        with torch.no_grad():
            _, y_ref, state = ssd_piece(inp, sl, D.double(), entering[-1])
        errors["y"].add(y[:, sl].detach(), y_ref)
        entering.append(state)
    del y
    d_final = None
    dA = torch.zeros(w.nheads, dtype=torch.float64, device=DEVICE)
    for i in reversed(range(len(spans))):  # backward sweep, last piece first
        sl = spans[i]
        init = entering[i].clone().requires_grad_() if entering[i] is not None else None
        ref_leaves, y_ref, final = ssd_piece(inp, sl, D.double(), init, requires_grad=True)
        outs, outgrads = [y_ref], [dy[:, sl].double()]
        if d_final is not None:
            outs.append(final)
            outgrads.append(d_final)
        wrt = list(ref_leaves.values()) + ([init] if init is not None else [])
        g = torch.autograd.grad(outs, wrt, outgrads)
        for k, gk in zip(SSD_KEYS, g):
            if k == "A":
                dA += gk
            else:
                errors["d" + k].add(grads[k][:, sl], gk)
        d_final = g[-1] if init is not None else None
        del ref_leaves, y_ref, final, g
    errors["dA"].add(grads["A"], dA)
    extra = (f"1x{tokens} tokens, x {inp['x'].numel():,} elements ({inp['x'].numel() / TWO31:.1f} x 2^31), "
             f"chunk states {state_elems:,} ({state_elems / TWO31:.2f} x 2^31), forward + backward {kernel_s:.2f} s, "
             f"peak memory {peak:.1f} GiB")
    bounds = {"y": 1e-2, "dx": 1e-2, "ddt": 3e-2, "dA": 5e-2, "dB": 3e-2, "dC": 3e-2}
    return report("ssd_scan backward", errors, bounds, extra, results)


# ------------------------------------------------------------------------------------ selective scan

def scan_as_ssd(inp: dict, channels: torch.Tensor, sl: slice, state):
    """The selective scan of `channels` over tokens `sl` in float64, written as an SSD with one head
    per (channel, state index): headdim 1, dstate 1, A = A[d, n], x = u[d], dt = softplus(delta[d] +
    bias[d]), B = B[n], C = C[n]; y[d] = sum over n + D u, then the z gate. Returns (y, state)."""
    u = inp["u"][:, channels, sl].double()  # (b, k, T)
    b, k, t = u.shape
    n = inp["A"].shape[1]
    dlt = process_delta(inp["delta"][:, channels, sl].double(), inp["delta_bias"][channels].double(), True,
                        torch.float64)
    heads = k * n

    def per_head(v):  # (b, k, T) -> (b, T, k * n)
        return v.transpose(1, 2)[..., None].expand(b, t, k, n).reshape(b, t, heads)

    def per_group(v):  # (b, n, T) -> (b, T, k * n, 1)
        return v[:, None].expand(b, k, n, t).permute(0, 3, 1, 2).reshape(b, t, heads, 1).double()

    y, final = ssd_scan_chunked(per_head(u)[..., None], per_head(dlt), inp["A"][channels].double().reshape(heads),
                                per_group(inp["B"][..., sl]), per_group(inp["C"][..., sl]), chunk_size=64,
                                initial_states=state)
    y = y.view(b, t, k, n).sum(-1).transpose(1, 2)
    y = y + inp["D"][channels].double()[:, None] * u
    zz = inp["z"][:, channels, sl].double()
    return y * zz * torch.sigmoid(zz), final


def check_scan_forward(tokens: int, results: dict) -> bool:
    w = ScanWorkload("huge", 1, tokens)
    inp = w.make_inputs(DEVICE, seed=7)
    channels = torch.cat([torch.arange(64), 64 + torch.randperm(w.dim - 128, generator=torch.Generator().manual_seed(8))[:64],
                          torch.arange(w.dim - 64, w.dim)]).to(DEVICE)
    args = [inp[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")]
    start = time.perf_counter()
    y, last = flashssm.selective_scan(*args, delta_softplus=True, return_last_state=True)
    sync()
    kernel_s = time.perf_counter() - start

    # the SSD form against the step-by-step reference, on the first 2K tokens of 16 channels
    few = channels[-16:]
    small = {k: (v[:, few, :2048] if k in ("u", "delta", "z") else v[..., :2048] if k in ("B", "C")
                 else v[few]).double() for k, v in inp.items()}
    seq_y = selective_scan_reference(*(small[k] for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")),
                                     delta_softplus=True)
    ssd_y, _ = scan_as_ssd(inp, few, slice(0, 2048), None)
    form = float((ssd_y - seq_y).norm() / seq_y.norm())
    assert form < 1e-10, f"the SSD form of the selective scan is off: {form:.2e}"

    errors = {"y": ErrorSum(), "last_state": ErrorSum()}
    state = None
    for sl in pieces(tokens, 1 << 14):
        y_ref, state = scan_as_ssd(inp, channels, sl, state)
        errors["y"].add(y[:, channels, sl], y_ref)
    errors["last_state"].add(last[:, channels], state.view(1, len(channels), -1))
    extra = (f"1x{tokens} tokens dim {w.dim} n{w.dstate}, u {inp['u'].numel():,} elements "
             f"({inp['u'].numel() / TWO31:.1f} x 2^31), {len(channels)} channels checked (last 64 past 2^31), "
             f"kernel {kernel_s:.2f} s, SSD form vs step reference {form:.1e}")
    return report("selective_scan forward", errors, {"y": 1e-2, "last_state": 1e-2}, extra, results)


# ------------------------------------------------------------------------------------------- decode

def check_decode(batch: int, results: dict) -> bool:
    ok = True
    w = SSDStepWorkload("huge", batch)
    inp = w.make_inputs(DEVICE, seed=9)
    state0 = inp["state"]
    rows = torch.arange(batch - 1, -1, -1, device=DEVICE)  # row i reads and writes cache row batch-1-i
    kw = {k: inp[k] for k in ("x", "dt", "A", "B", "C")}
    state_ref_src = state0.clone()  # float64 per slice below; fp32 copy of the untouched state
    y = flashssm.ssd_step(state0, **kw, D=inp["D"], dt_bias=inp["dt_bias"], dt_softplus=True,
                          state_batch_indices=rows)
    sync()
    errors = {"y": ErrorSum(), "state": ErrorSum()}
    for sl in pieces(batch, 256):
        cache_rows = rows[sl]
        st = state_ref_src[cache_rows].double()
        y_ref = ssd_step_reference(st, *(kw[k][sl].double() if k != "A" else kw[k].double() for k in kw),
                                   D=inp["D"].double(), dt_bias=inp["dt_bias"].double(), dt_softplus=True)
        errors["y"].add(y[sl], y_ref)
        errors["state"].add(state0[cache_rows], st)
    extra = (f"ssd_step cache batch {batch}, state {state0.numel():,} elements ({state0.numel() / TWO31:.2f} x 2^31), "
             f"rows read in reverse through state_batch_indices")
    ok &= report("ssd_step decode", errors, {"y": 1e-2, "state": 1e-3}, extra, results)
    del state0, state_ref_src

    w = ScanStepWorkload("huge", batch)
    inp = w.make_inputs(DEVICE, seed=10)
    state_before = inp["state"].clone()
    names = ("u", "delta", "A", "B", "C")
    y = flashssm.selective_scan_step(inp["state"], *(inp[k] for k in names), D=inp["D"], z=inp["z"],
                                     delta_bias=inp["delta_bias"], delta_softplus=True)
    errors = {"y": ErrorSum(), "state": ErrorSum()}
    for sl in pieces(batch, 256):
        st = state_before[sl].double()
        y_ref = selective_scan_step_reference(st, *(inp[k][sl].double() if k != "A" else inp[k].double()
                                                    for k in names),
                                              D=inp["D"].double(), z=inp["z"][sl].double(),
                                              delta_bias=inp["delta_bias"].double(), delta_softplus=True)
        errors["y"].add(y[sl], y_ref)
        errors["state"].add(inp["state"][sl], st)
    extra = f"selective_scan_step cache batch {batch}, dim {w.dim}, state {inp['state'].numel():,} elements"
    ok &= report("selective_scan_step decode", errors, {"y": 1e-2, "state": 1e-3}, extra, results)
    return ok


CHECKS = ["ssd-fwd", "ssd-bwd", "scan-fwd", "decode"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checks", nargs="*", choices=[*CHECKS, []], help="default: all")
    parser.add_argument("--ssd-fwd-tokens", type=int, default=1 << 21)
    parser.add_argument("--ssd-bwd-tokens", type=int, default=1 << 20)
    parser.add_argument("--bwd-piece", type=int, default=1 << 13)
    parser.add_argument("--scan-tokens", type=int, default=1 << 19)
    parser.add_argument("--decode-batch", type=int, default=4096)
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU"
    print(f"{name}, torch {torch.__version__}", flush=True)
    results, ok = {}, True
    for check in args.checks or CHECKS:
        start = time.perf_counter()
        if check == "ssd-fwd":
            ok &= check_ssd_forward(args.ssd_fwd_tokens, results)
        elif check == "ssd-bwd":
            ok &= check_ssd_backward(args.ssd_bwd_tokens, args.bwd_piece, results)
        elif check == "scan-fwd":
            ok &= check_scan_forward(args.scan_tokens, results)
        else:
            ok &= check_decode(args.decode_batch, results)
        print(f"  ({check}: {time.perf_counter() - start:.0f} s)", flush=True)
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
