"""Instruction mix of the longest loop in a SASS listing (the span of the backward branch that covers most
instructions): how many barriers, products, exps, shared-memory trips and spills one iteration of a kernel's main
sweep costs. The listing comes from `offline_ssd_forward.py --sass F` (or cuobjdump -sass).

    python benchmarks/loop_stats.py F [F ...]
"""
import collections
import re
import sys


def loop(path):
    """(instructions in the loop, the counts of a few opcodes)."""
    lines=open(path).read().splitlines()
    best=None
    for i,l in enumerate(lines):
        m=re.search(r"/\*([0-9a-f]+)\*/\s+(?:@!?P\w+\s+)?BRA\s+0x([0-9a-f]+)",l)
        if m:
            a,b=int(m.group(1),16),int(m.group(2),16)
            if b<a and (best is None or a-b>best[0]-best[1]): best=(a,b)
    a,b=best
    body=[l for l in lines if (m:=re.match(r"\s*/\*([0-9a-f]+)\*/",l)) and b<=int(m.group(1),16)<=a]
    c=collections.Counter()
    for l in body:
        m=re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)",l)
        if m: c[m.group(1)]+=1
    return len(body), " ".join(f"{k} {c[k]}" for k in ["BAR","HGMMA","MUFU","LDS","STS","SHFL","LDL","STL","LDGSTS"])
if __name__ == "__main__":
    for f in sys.argv[1:]:
        print(f, *loop(f))
