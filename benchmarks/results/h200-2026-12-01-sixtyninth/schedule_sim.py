"""Sixty-ninth session: the late publish's makespan in sub-chunk iterations (a program's fixed cost c = 1.5 of them,
fitted to the H100 group sweep of ssd_forward.md), for the waves (spans of GROUP chunks, position-major tickets, the
next ticket to the first free slot) against the balanced pieces (McNaughton's wrap-around, a program a slot).
    python3 schedule_sim.py"""
import heapq
def greedy(programs, slots=264, c=1.5):
    # programs: list of (chain, piece_index, its) in ticket order; waits for (chain, piece_index-1)
    fin = {}; free = [0.0]*slots; end = 0
    for ch, k, its in programs:
        t0 = heapq.heappop(free)
        start = max(t0, fin.get((ch, k-1), 0))
        f = start + its + c
        fin[(ch, k)] = f; heapq.heappush(free, f); end = max(end, f)
    return end
def mcnaughton(chains=640, chunk_its=4, chunks=16, slots=264):
    total = chains*chunks
    per = [total//slots + (1 if s < total % slots else 0) for s in range(slots)]
    timelines = [[] for _ in range(slots)]
    s, room = 0, per[0]
    for ch in range(chains):
        left = chunks; k = 0
        pieces = []
        while left:
            take = min(left, room)
            pieces.append((s, take))
            left -= take; room -= take
            if room == 0 and s + 1 < slots:
                s += 1; room = per[s]
        timelines_pieces = pieces
        # McNaughton: the piece on the later slot runs first (prefix at its timeline's start)
        for idx, (sl, take) in enumerate(reversed(pieces)):
            timelines[sl].append((ch, idx, take*chunk_its))
    return timelines
tl = mcnaughton()
# persistent: each slot runs its timeline in order: prefix (piece 0 of its last chain? ) ...
def persistent(tl, c=1.5):
    # each slot: pieces ordered: pieces with index 0 that are prefixes of split chains first, whole next, suffixes last
    fin = {}
    order = []
    for s, pcs in enumerate(tl):
        first = [p for p in pcs if p[1] == 0 and any(q[0] == p[0] and q[1] == 1 for t2 in [tl[s-1]] if s > 0 for q in t2)]
        rest = [p for p in pcs if p not in first]
        order.append(first + sorted(rest, key=lambda p: p[1]))
    # simulate in rounds: event-driven
    t = [0.0]*len(tl); idx = [0]*len(tl); done = 0; total = sum(len(o) for o in order)
    while done < total:
        progressed = False
        for s, o in enumerate(order):
            while idx[s] < len(o):
                ch, k, its = o[idx[s]]
                if k > 0 and (ch, k-1) not in fin:
                    break
                start = max(t[s], fin.get((ch, k-1), 0))
                t[s] = start + its + c; fin[(ch, k)] = t[s]; idx[s] += 1; done += 1; progressed = True
        if not progressed:
            raise RuntimeError("deadlock")
    return max(t), max(len(o) for o in order)
print("persistent McNaughton", persistent(tl))
# non persistent: tickets: all slot timelines' first pieces, then seconds, etc.
progs = []
maxlen = max(len(p) for p in tl)
# ordering: prefixes first (piece 0 of split chains), then whole chains, then suffixes
split = {}
for s, pcs in enumerate(tl):
    for p in pcs: split.setdefault(p[0], []).append(p)
pre = [p for ps in split.values() if len(ps) > 1 for p in ps if p[1] == 0]
whole = [p for ps in split.values() if len(ps) == 1 for p in ps]
suf = [p for ps in split.values() if len(ps) > 1 for p in ps if p[1] == 1]
print(len(pre), len(whole), len(suf))
print("greedy pre+whole+suf", greedy(pre + whole + suf))
print("greedy pre(long first)+whole+suf", greedy(sorted(pre, key=lambda p: -p[2]) + whole + suf))
print("current", greedy([(j, k, 32) for k in range(2) for j in range(640)]))
for chains, chunks, group in ((2560, 8, 8), (640, 16, 8), (1280, 16, 8), (320, 16, 8), (2560, 16, 8), (640, 32, 8)):
    tl = mcnaughton(chains=chains, chunks=chunks)
    cur = greedy([(j, k, group*4) for k in range(chunks // group) for j in range(chains)])
    p = persistent(tl)
    print(chains, chunks, "current", cur, "persistent", p, f"{p[0]/cur-1:+.1%}")
