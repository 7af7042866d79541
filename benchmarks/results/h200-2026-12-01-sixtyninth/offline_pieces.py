"""Sixty-ninth session: registers, spills and loop sizes of the Gluon forward's forms with and without PIECES
(offline, sm_90, triton 3.6: PYTHONPATH=. python offline_pieces.py [name filters])."""
import sys, importlib
sys.path.insert(0, "/work/main")
from benchmarks import offline_ssd_forward as o
keys = ["BAR", "LDGSTS", "HGMMA", "MUFU"]
forms = {
    "plain late": dict(has_z=False, has_d=False, extra={}),
    "plain late PIECES": dict(has_z=False, has_d=False, extra={"PIECES": True}),
    "late TMA": dict(has_z=False, has_d=False, extra={"TMA": True}),
    "late TMA PIECES": dict(has_z=False, has_d=False, extra={"TMA": True, "PIECES": True}),
    "train TMA states": dict(has_z=False, has_d=False, extra={"TMA": True, "TMA_STATES": True, "STORE_STATES": True, "STATE_CHUNK": 256}, states_type="*bf16"),
    "train TMA states PIECES": dict(has_z=False, has_d=False, extra={"TMA": True, "TMA_STATES": True, "STORE_STATES": True, "STATE_CHUNK": 256, "PIECES": True}, states_type="*bf16"),
    "layer D": dict(has_z=False, has_d=True, extra={"D_HEAD": True}),
    "layer D PIECES": dict(has_z=False, has_d=True, extra={"D_HEAD": True, "PIECES": True}),
    "z": dict(has_z=True, has_d=True, extra={}),
    "z PIECES": dict(has_z=True, has_d=True, extra={"PIECES": True}),
    "fp16 PIECES": dict(has_z=False, has_d=False, extra={"PIECES": True}, in_type="*fp16"),
    "layer TMA D": dict(has_z=False, has_d=True, extra={"D_HEAD": True, "TMA": True}),
    "layer TMA D PIECES": dict(has_z=False, has_d=True, extra={"D_HEAD": True, "TMA": True, "PIECES": True}),
    "fp16 TMA": dict(has_z=False, has_d=False, extra={"TMA": True}, in_type="*fp16"),
    "fp16 TMA PIECES": dict(has_z=False, has_d=False, extra={"TMA": True, "PIECES": True}, in_type="*fp16"),
    "early": dict(has_z=False, has_d=False, extra={"EARLY": True}),
}
only = sys.argv[1:] 
for name, kw in forms.items():
    if only and not any(o_ in name for o_ in only):
        continue
    extra = kw.pop("extra")
    try:
        k = o.compile_gluon_forward(extra=extra, **kw)
        mix, regs, spills = o.resource_report(k, keys, loops=True)
        print(f"== {name}: regs {regs} spills {spills} smem {k.metadata.shared}\n{mix}", flush=True)
    except Exception as e:
        print(f"== {name}: FAILED {type(e).__name__}: {str(e)[:2000]}", flush=True)
