"""Inputs of an ssd_scan training call for the benchmark scripts: the bench's SSD workload inputs (2.7B mixer shape,
bf16, on the GPU) as leaves that require grad, with D, z and dt_bias added for `options`."""

import torch

from flashssm.bench.workloads import SSDWorkload


def train_leaves(spec: str, options: bool) -> tuple[dict, dict, torch.Tensor]:
    """(leaves, ssd_scan's keyword options, an incoming gradient dy) for workload `spec` ("BATCHxSEQLEN")."""
    batch, seqlen = (int(v) for v in spec.split("x"))
    inp = SSDWorkload(spec, batch, seqlen).make_inputs("cuda")
    h = inp["x"].shape[2]
    gen = torch.Generator(device="cuda").manual_seed(0)
    extra = dict(D=torch.randn(h, device="cuda", generator=gen), z=torch.randn_like(inp["x"]),
                 dt_bias=torch.randn(h, device="cuda", generator=gen) * 0.5)
    names = ("x", "dt", "A", "B", "C") + (("D", "z", "dt_bias") if options else ())
    leaves = {k: (inp[k] if k in inp else extra[k]).detach().clone().requires_grad_() for k in names}
    return leaves, dict(chunk_size=256, dt_softplus=options), torch.randn_like(inp["x"])
