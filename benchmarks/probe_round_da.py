"""dA's error in the chain form's ROUND mode, inline chain against the chain launch, over seeds (test_chain_product_modes' inputs)."""
import functools, sys
import torch
import flashssm
from flashssm.ops.ssd import backward, reference as ref
from tests.helpers import ssd_inputs, rel_err
from tests.ops.test_ssd_backward import gradients

dev = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.bfloat16 if dev == "cuda" else torch.float16
seqlen, chunk = (1500, 256) if dev == "cuda" else (150, 64)
real = backward.ssd_backward
for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
    torch.manual_seed(seed)
    kw = ssd_inputs(2, seqlen, 4, 32, 16, 2, dtype=dtype, device=dev, D="h", z=True, dt_bias=True, dt_softplus=True,
                    initial_states=True)
    dy = torch.randn_like(kw["x"], dtype=torch.float32)
    dfinal = torch.randn(2, 4, 32, 16, device=dev)
    kw64 = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kw.items()}
    _, _, want = gradients(ref.ssd_scan_chunked, kw64, dy.double(), dfinal.double(), chunk_size=chunk)
    out = []
    for mode in ("ROUND", "SPLIT"):
        for ds in (False, True):
            backward.ssd_backward = functools.partial(real, form="chain", mode=getattr(backward, mode), dstates=ds)
            _, _, got = gradients(flashssm.ssd_scan, kw, dy, dfinal, chunk_size=chunk)
            out.append(f"{mode} dstates={ds}: dA {rel_err(got['A'], want['A']):.3e} dt_bias {rel_err(got['dt_bias'], want['dt_bias']):.3e} dx {rel_err(got['x'], want['x']):.2e}")
    backward.ssd_backward = real
    print(f"seed {seed}: " + " | ".join(out), flush=True)
