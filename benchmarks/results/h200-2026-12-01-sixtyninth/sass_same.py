"""Sixty-ninth session: the Gluon forward's SASS before and after the span helper (`_sweep_span`), form by form
(offline, sm_90, triton 3.6: PYTHONPATH=. python sass_same.py)."""
import sys, importlib.util, re
sys.path.insert(0, "/work/main")
from benchmarks import offline_ssd_forward as o
import flashssm.ops.ssd.forward_gluon as new
# the kernel before the refactor: `git show 327fd34:flashssm/ops/ssd/forward_gluon.py > /tmp/forward_gluon_before.py`
spec = importlib.util.spec_from_file_location("fg_before", "/tmp/forward_gluon_before.py")
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
forms = {
    "plain late": dict(has_z=False, has_d=False, extra={}),
    "late TMA": dict(has_z=False, has_d=False, extra={"TMA": True}),
    "train TMA states": dict(has_z=False, has_d=False, extra={"TMA": True, "TMA_STATES": True, "STORE_STATES": True, "STATE_CHUNK": 256}, states_type="*bf16"),
    "layer D": dict(has_z=False, has_d=True, extra={"D_HEAD": True}),
    "z": dict(has_z=True, has_d=True, extra={}),
    "early": dict(has_z=False, has_d=False, extra={"EARLY": True}),
    "fp16 states": dict(has_z=False, has_d=False, extra={"STORE_STATES": True, "STATE_CHUNK": 256}, in_type="*fp16", states_type="*fp16"),
    "varlen": dict(has_z=False, has_d=False, extra={"IS_VARLEN": True}),
}
def strip(sass):
    out = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
        if m:
            out.append(re.sub(r"0x[0-9a-f]+", "X", m.group(1)))
    return out
for name, kw in forms.items():
    res = []
    for mod in (old, new):
        sys.modules["flashssm.ops.ssd.forward_gluon"] = mod
        k = o.compile_gluon_forward(extra=dict(kw["extra"]), **{a: b for a, b in kw.items() if a != "extra"})
        res.append(strip(o.sass_histogram(k.asm["cubin"])[1]))
    same = res[0] == res[1]
    print(name, "same SASS" if same else f"DIFFERENT ({len(res[0])} vs {len(res[1])})", flush=True)
