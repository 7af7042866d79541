"""Thirty-ninth session, call 8: why the window form of Mamba-1's packed rows (scan_window_call7.py, call 7) was slower
than the reset form (flashssm's scan.py, call 6): both compiled for the packed 8 x 2048 forward of the 2.8B shape,
their registers, spills and vector loads in the PTX, and their times in one process. argv[1]: the window form's
module file (session_thirtyninth_h.sh says how to rebuild it from rows-window-call7.diff)."""
import importlib.util
import re
import sys

import torch

from flashssm.ops.selective_scan import scan as kept
from flashssm.ops.selective_scan.scan import sequence_index

spec = importlib.util.spec_from_file_location("scan_window", sys.argv[1])
window = importlib.util.module_from_spec(spec)
sys.modules["scan_window"] = window  # (its dataclasses look their module up)
spec.loader.exec_module(window)

dim, dstate, n, L = 5120, 16, 8, 2048
g = torch.Generator(device="cuda").manual_seed(0)
u = torch.randn(1, dim, n * L, device="cuda", dtype=torch.bfloat16, generator=g)
delta = torch.randn(1, dim, n * L, device="cuda", dtype=torch.bfloat16, generator=g) * 0.5
z = torch.randn(1, dim, n * L, device="cuda", dtype=torch.bfloat16, generator=g)
A = -torch.rand(dim, dstate, device="cuda").exp()
B = torch.randn(1, dstate, n * L, device="cuda", dtype=torch.bfloat16, generator=g)
C = torch.randn(1, dstate, n * L, device="cuda", dtype=torch.bfloat16, generator=g)
D = torch.randn(dim, device="cuda")
bias = torch.randn(dim, device="cuda")
offsets = tuple(range(0, n * L + 1, L))
cu = torch.tensor(offsets, device="cuda", dtype=torch.int32)
seq = sequence_index(cu, n * L)
for name, mod in (("reset (kept)", kept), ("window (call 7)", window)):
    run = lambda: mod.scan_forward(u, delta, A, B, C, D, z, bias, True, seq_index=seq, num_seqs=n, offsets=offsets)  # noqa: E731
    y = run()[0]
    k = mod.last_compiled["forward"]
    ptx = k.asm["ptx"]
    loads = re.findall(r"ld\.global[^\n;]*", ptx)
    vec = [x for x in loads if re.search(r"\.v[248]\.", x)]
    stores = re.findall(r"st\.global[^\n;]*", ptx)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        run()
    s.record()
    for _ in range(20):
        run()
    e.record()
    torch.cuda.synchronize()
    print(f"{name}: {s.elapsed_time(e) / 20:.3f} ms, regs {k.n_regs}, spills {k.n_spills}, ld.global {len(loads)} "
          f"(vector {len(vec)}), st.global {len(stores)} (vector {sum(bool(re.search(r'.v[248].', x)) for x in stores)})")
    print("   vector loads:", sorted(set(re.sub(r'%\w+', '', x) for x in vec))[:4])
    if name.startswith("reset"):
        y0 = y
    else:
        print("   max |y - y(reset)|:", (y.float() - y0.float()).abs().max().item())
