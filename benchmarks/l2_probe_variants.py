"""Write variants of forward_gluon.py that skip some of the output sweep's loads, for timing only (wrong outputs).

    python3 benchmarks/l2_probe_variants.py OUTDIR

The Gluon forward reads, per program and sub-chunk of 64 tokens, x (8 KB), B and C (16 KB each at dstate 128) from
L2, and every head of a group reads the same B and C. If moving those bytes from L2 into shared memory is what the
sweep waits on, a sweep that loads B and C for only every other sub-chunk (the stage keeps the rows of two sub-chunks
before: finite, wrong) runs faster by about the share of those bytes; if it is not, the time stays. Variants:
  same.py     the file unchanged (the control: launched the same way as the others)
  bc_half.py  B and C loaded for even sub-chunks only
  bc_none.py  B and C loaded for the span's first two sub-chunks only
  x_half.py   x loaded for even sub-chunks only
Time them with `benchmarks/ab_gluon_forward.py --before OUTDIR/NAME.py ...`.
"""

import pathlib
import sys

SRC = pathlib.Path(__file__).resolve().parents[1] / "flashssm" / "ops" / "ssd" / "forward_gluon.py"

B_LOAD = "        _async_load(B_st, B_base + t_n[:, None] * stride_B_t + n[None, :], mask=mask_n)\n"
C_LOAD = ("        if LOAD_C:\n"
          "            _async_load(C_st, C_base + t_n[:, None] * stride_C_t + n[None, :], mask=mask_n)\n")
X_LOAD = "        _async_load(x_st, x_base + t_p[:, None] * stride_x_t + p[None, :], mask=(t_p < length)[:, None])\n"


def guarded(block, cond):
    return f"        if {cond}:\n" + "".join("    " + line + "\n" for line in block.splitlines())


def main(out):
    text = SRC.read_text()
    for piece in (B_LOAD, C_LOAD, X_LOAD):
        assert text.count(piece) == 1, piece
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "same.py").write_text(text)
    (out / "bc_half.py").write_text(text.replace(B_LOAD + C_LOAD, guarded(B_LOAD + C_LOAD, "(s0 // SUB) % 2 == 0")))
    (out / "bc_none.py").write_text(text.replace(B_LOAD + C_LOAD, guarded(B_LOAD + C_LOAD, "s0 <= SUB")))
    (out / "x_half.py").write_text(text.replace(X_LOAD, guarded(X_LOAD, "(s0 // SUB) % 2 == 0")))


if __name__ == "__main__":
    main(sys.argv[1])
