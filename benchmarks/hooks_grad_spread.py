"""How far a small model's gradients move between runs, and under save_on_cpu (the backward on contiguous copies of
the strided x, B and C): the spread `tests/models/test_recompute.py`'s hooks test must allow on a GPU (seventy-third
session: A_log's gradient off by more than 1e-5 of its largest value there once, not another time).

    python3 benchmarks/hooks_grad_spread.py
"""

import contextlib
import copy

import torch

from tests.helpers import lm_grads
from tests.models.test_models import VOCAB, make


def grads(model, ids, hooks):
    with torch.autograd.graph.save_on_cpu() if hooks else contextlib.nullcontext():
        return lm_grads(copy.deepcopy(model), ids)[1]


def main():
    model = make("mamba2")
    ids = torch.randint(0, VOCAB, (2, 21), device="cuda")
    base = grads(model, ids, False)
    for label, hooks in (("again", False), ("again", False), ("save_on_cpu", True), ("save_on_cpu", True)):
        got = grads(model, ids, hooks)
        worst = sorted(((float((got[k] - g).abs().max() / g.abs().max()), k) for k, g in base.items()), reverse=True)
        print(label, " ".join(f"{k}={v:.1e}" for v, k in worst[:5]))


if __name__ == "__main__":
    main()
