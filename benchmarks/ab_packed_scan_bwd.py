"""The selective scan's packed backward alone, its forms alternating in one process (medians of rounds), against the
dense batch's backward on the same tokens: the packed row as one batch-1 sequence (`ROWS_BWD` False), the rows of
`varlen_rows` with the per-token sequence index (`WINDOW_BWD` False), in sequence order (`LONGEST_FIRST` 0), with the
window's masks on every chunk (`INNER_CHUNKS_DENSE` False), with every tile of a row's edge chunks
(`EDGE_TILES_BWD` False), as rows also where the configuration has segments
(`ROWS_BWD_SEGMENTS` True: a packing dominated by one long sequence, e.g. --scan 1x16384) and as by default (each row's
boundaries, the longest rows first, the chunks inside a row's tokens by the dense code).
Per form: ms, the kernel's registers and spills, the largest difference of du from the first form's (--forms).

    PYTHONPATH=. python benchmarks/ab_packed_scan_bwd.py [--scan 8x2048] [--ragged] [--rounds 5] [--forward]
        [--dstate 16]

--forward: the forward instead (storing the backward's states, as a training call does), as a dense batch, the packed
row as one batch-1 sequence (`ROWS` False), rows with the per-token sequence index (`WINDOW_FWD` False) and by
default; its column is y.
"""

import argparse
import statistics

import torch
from triton.testing import do_bench

from flashssm.bench.workloads import ScanWorkload, ragged_lengths
from flashssm.ops.selective_scan import scan

FORMS = {"dense": {}, "batch-1 row": {"ROWS_BWD": False}, "rows varlen": {"WINDOW_BWD": False},
         "rows unordered": {"LONGEST_FIRST": 0}, "rows masked": {"INNER_CHUNKS_DENSE": False},
         "rows segments": {"ROWS_BWD_SEGMENTS": True}, "rows untrimmed": {"EDGE_TILES_BWD": False}, "rows": {}}
# --forward: the forward (storing the backward's states, as in training), its forms
FORWARD_FORMS = {"dense": {}, "batch-1 row": {"ROWS": False}, "rows varlen": {"WINDOW_FWD": False}, "rows": {}}
NAMES = ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")


def packed_calls(batch: int, seqlen: int, ragged: bool, forms=tuple(FORMS), forward: bool = False, dstate: int = 16):
    """{form: a call of the backward alone} on the 2.8B shape (dstate 16, or `dstate`), each after its own forward
    (with stored states); with `forward`, {form: a call of that forward} (FORWARD_FORMS)."""
    inp = ScanWorkload("packed", batch, seqlen, dstate=dstate).make_inputs("cuda")
    total = batch * seqlen
    dense = [inp[k] for k in NAMES]
    flat = [v.permute(1, 0, 2).reshape(1, v.shape[1], total).contiguous() if k in ("u", "delta", "z", "B", "C") else v
            for k, v in zip(NAMES, dense)]
    lengths = ragged_lengths(batch, total, multiple=64) if ragged else (seqlen,) * batch
    offsets = tuple([0] + torch.tensor(lengths).cumsum(0).tolist())
    cu = torch.tensor(offsets, dtype=torch.int32, device="cuda")
    seq = scan.sequence_index(cu, total)
    dy = torch.randn_like(dense[0])
    dy_flat = dy.permute(1, 0, 2).reshape(1, dy.shape[1], total).contiguous()
    ckpt_tile = 32
    out = {}
    for form, flags in ((f, (FORWARD_FORMS if forward else FORMS)[f]) for f in forms):
        def call(form=form, flags=flags):
            saved = {k: getattr(scan, k) for k in flags}
            for k, v in flags.items():
                setattr(scan, k, v)
            try:
                if forward:
                    if form == "dense":
                        return scan.scan_forward(*dense, True, ckpt_tile=ckpt_tile)
                    return scan.scan_forward(*flat, True, seq_index=seq, num_seqs=len(lengths), ckpt_tile=ckpt_tile,
                                             offsets=offsets)
                if form == "dense":
                    return scan.scan_backward(dy, None, *dense, True, ckpt=ckpts["dense"], ckpt_tile=ckpt_tile)
                return scan.scan_backward(dy_flat, None, *flat, True, ckpt=ckpts["packed"], ckpt_tile=ckpt_tile,
                                          seq_index=seq, offsets=offsets)
            finally:
                for k, v in saved.items():
                    setattr(scan, k, v)
        out[form] = call
    if forward:
        return out, lengths
    ckpts = {"dense": scan.scan_forward(*dense, True, ckpt_tile=ckpt_tile)[2] if "dense" in forms else None,
             "packed": scan.scan_forward(*flat, True, seq_index=seq, num_seqs=len(lengths), ckpt_tile=ckpt_tile,
                                         offsets=offsets)[2]}
    return out, lengths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scan", action="append", default=None)
    ap.add_argument("--ragged", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--forms", default=None, help="comma-separated, of " + ", ".join(FORMS) + " (--forward: "
                    + ", ".join(FORWARD_FORMS) + ")")
    ap.add_argument("--forward", action="store_true", help="the forward (storing the backward's states) instead")
    ap.add_argument("--dstate", type=int, default=16)
    args = ap.parse_args()
    forms = (args.forms or ",".join(FORWARD_FORMS if args.forward else FORMS)).split(",")
    which = "forward" if args.forward else "backward"
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    for spec in args.scan or ["8x2048"]:
        batch, seqlen = (int(v) for v in spec.split("x"))
        calls, lengths = packed_calls(batch, seqlen, args.ragged, forms, args.forward, args.dstate)
        res = {}
        for form, f in calls.items():
            f()
            c = scan.last_compiled.get(which)
            res[form] = {"times": [], "regs": getattr(c, "n_regs", None), "spills": getattr(c, "n_spills", None),
                         "out": f()[0]}
        for _ in range(args.rounds):
            for form, f in calls.items():
                res[form]["times"].append(do_bench(f, warmup=5, rep=40))
        base = next(iter(res))
        out_base = res[base]["out"]
        if base == "dense":
            out_base = out_base.permute(1, 0, 2).reshape(1, -1, batch * seqlen)
        print(f"{spec}{' ragged' if args.ragged else ''} dstate {args.dstate} (longest {max(lengths)}):")
        for form, r in res.items():
            ms = statistics.median(r["times"])
            diff = ("" if form == base or (args.ragged and base == "dense") else
                    f" {'y' if args.forward else 'du'} max|diff| "
                    f"{(r['out'].float() - out_base.float()).abs().max().item():.2e}")
            print(f"  {form:<14} {ms:8.3f} ms ({ms / statistics.median(res[base]['times']):.2f}x {base})  regs "
                  f"{r['regs']} spills {r['spills']}{diff}")


if __name__ == "__main__":
    main()
