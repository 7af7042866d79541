"""Inputs, tolerances and comparisons shared by the tests."""

from __future__ import annotations

import itertools

import pytest
import torch

# A further case of a cross product whose other cases the default run covers: on the CPU only with --full (the
# interpreter's time), on a GPU always (tests/conftest.py).
FULL = pytest.mark.full


def full(*values, id=None):
    """A parametrize case that the default CPU run leaves to --full."""
    return pytest.param(*values, marks=FULL, id=id)


def cases(rows, ids, *, full_ids=()):
    """Parametrize cases (tuples of argument values) with these ids; the ones named in full_ids marked `full`."""
    assert set(full_ids) <= set(ids), set(full_ids) - set(ids)
    return [pytest.param(*row, marks=FULL if i in full_ids else (), id=i) for row, i in zip(rows, ids)]


def relaid(t: torch.Tensor, order) -> torch.Tensor:
    """t's values in memory ordered by `order` (outermost first): a dense tensor with t's shape, not contiguous.
    (0, 2, 1) on a (batch, dim, seqlen) tensor: channels contiguous, as the Mamba-1 mixer passes its views."""
    stored = t.permute(*order).contiguous()
    return stored.permute(*[order.index(i) for i in range(t.dim())])


def pairs_of_four(options, ids):
    """Parametrize cases of one argument, a tuple of four two-valued options (each option's first value in `options`
    taken as 0): the default CPU run takes the five that hold every pair of values of every two options (0000, 0111,
    1011, 1101, 1110), --full and a GPU run all of them."""
    firsts = options[0]
    core = {(0, 0, 0, 0), (0, 1, 1, 1), (1, 0, 1, 1), (1, 1, 0, 1), (1, 1, 1, 0)}
    return cases([(o,) for o in options], ids, full_ids=[
        i for o, i in zip(options, ids) if tuple(int(v != f) for v, f in zip(o, firsts)) not in core])


def spread(rows, variants, case_ids, variant_ids=None):
    """Every case (a tuple of argument values in `rows`) with every variant, as parametrize cases of (*case,
    variant). The default CPU run takes a diagonal: case i with variant i mod len(variants) (and variant j with case
    j mod len(rows) where the variants outnumber the cases), so that every case and every variant runs; the other
    pairs are marked `full`."""
    variant_ids = variant_ids or [str(v) for v in variants]
    n, m = len(rows), len(variants)
    out = []
    for i, case in enumerate(rows):
        for j, variant in enumerate(variants):
            core = j == i % m or (j >= n and i == j % n)
            out.append(pytest.param(*case, variant, marks=() if core else FULL, id=f"{case_ids[i]}-{variant_ids[j]}"))
    return out


# ‖out − ref‖ / ‖ref‖ allowed against a float64 reference, by the dtype of the computation's
# inputs and outputs. fp32: fp32 accumulation (tf32 dots on a GPU); fp16/bf16: dominated by
# rounding the inputs and the output (bf16 keeps 8 significant bits: 2^-9 ≈ 2e-3 per element).
TOLERANCES = {
    torch.float64: 1e-10,
    torch.float32: 2e-3,
    torch.float16: 5e-3,
    torch.bfloat16: 3e-2,
}


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, what: str = "output") -> None:
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    assert not torch.isnan(out).any(), f"{what}: NaN in {torch.isnan(out).sum().item()} elements"
    err = rel_err(out, ref)
    assert err <= TOLERANCES[dtype], f"{what}: relative error {err:.3e} > {TOLERANCES[dtype]:.0e} ({dtype})"


def ssd_id(batch, seqlen, nheads, headdim, dstate, ngroups) -> str:
    return f"B{batch}-L{seqlen}-H{nheads}-P{headdim}-N{dstate}-G{ngroups}"


# Every combination of ssd_scan's options: D (none, per head, per head and channel), z, dt_bias,
# dt_softplus, dt_limit, initial_states; with readable ids.
SSD_OPTIONS = list(itertools.product([None, "h", "hp"], [False, True], [False, True], [False, True], [False, True],
                                     [False, True]))
SSD_OPTION_NAMES = "D,z,dt_bias,dt_softplus,dt_limit,initial_states"
SSD_OPTION_IDS = [f"D{d}-z{int(z)}-bias{int(b)}-sp{int(s)}-lim{int(lim)}-init{int(i)}"
                  for d, z, b, s, lim, i in SSD_OPTIONS]


def _pairwise(rows: list[tuple]) -> list[tuple]:
    """A subset of `rows` (a full product) holding every pair of values of every two options:
    greedy, deterministic. The CPU runs it where the full product is too slow under the interpreter."""
    def pairs(r):
        return {(i, r[i], j, r[j]) for i in range(len(r)) for j in range(i + 1, len(r))}
    todo = set().union(*(pairs(r) for r in rows))
    chosen = []
    while todo:
        best = max(rows, key=lambda r: len(pairs(r) & todo))
        chosen.append(best)
        todo -= pairs(best)
    return chosen


SSD_OPTIONS_PAIRWISE = _pairwise(SSD_OPTIONS)
SSD_OPTION_IDS_PAIRWISE = [SSD_OPTION_IDS[SSD_OPTIONS.index(r)] for r in SSD_OPTIONS_PAIRWISE]

# Packed sequence lengths: single tokens, empty sequences, chunk-aligned and ragged ones.
VARLEN_PACKS = [[1], [5, 1, 40], [0, 17, 1, 0, 33], [64, 64], [1, 1, 1], [130, 3, 0]]
VARLEN_IDS = ["-".join(map(str, p)) for p in VARLEN_PACKS]


def ssd_inputs(batch, seqlen, nheads, headdim, dstate, ngroups, *, dtype=torch.float64, device="cpu",
               D=None, z=False, dt_bias=False, dt_softplus=False, initial_states=False, num_seqs=None):
    """Random SSD inputs with realistic magnitudes: decays exp(dt A) spread over (0, 1).

    D: None, "h" for (nheads,) or "hp" for (nheads, headdim). Returns the keyword arguments of
    ssd_scan (x, dt, A, B, C and the options asked for).
    """
    f32 = dict(device=device, dtype=torch.float32)
    kw = dict(
        x=torch.randn(batch, seqlen, nheads, headdim, device=device, dtype=dtype),
        B=torch.randn(batch, seqlen, ngroups, dstate, device=device, dtype=dtype),
        C=torch.randn(batch, seqlen, ngroups, dstate, device=device, dtype=dtype),
        A=-torch.exp(torch.rand(nheads, **f32) * 2.5),  # -1 .. -12
    )
    if dt_softplus:
        kw["dt"] = torch.randn(batch, seqlen, nheads, **f32) - 3.0
        kw["dt_softplus"] = True
    else:
        kw["dt"] = torch.exp(torch.rand(batch, seqlen, nheads, **f32) * 4.6 - 6.9)  # 0.001 .. 0.1
    if D == "h":
        kw["D"] = torch.randn(nheads, **f32)
    elif D == "hp":
        kw["D"] = torch.randn(nheads, headdim, **f32)
    if z:
        kw["z"] = torch.randn(batch, seqlen, nheads, headdim, device=device, dtype=dtype)
    if dt_bias:
        kw["dt_bias"] = torch.randn(nheads, **f32) * 0.5
    if initial_states:
        kw["initial_states"] = torch.randn(num_seqs or batch, nheads, headdim, dstate, **f32)
    return kw


def to_float64(kw: dict) -> dict:
    """The same inputs upcast to float64, for the reference."""
    return {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in kw.items()}


def scan_inputs(batch, dim, seqlen, dstate, *, ngroups=None, dtype=torch.float64, device="cpu", D=False, z=False,
                delta_bias=False, delta_softplus=False):
    """Random selective-scan inputs; ngroups None gives shared B, C (batch, dstate, seqlen)."""
    f32 = dict(device=device, dtype=torch.float32)
    bc_shape = (batch, dstate, seqlen) if ngroups is None else (batch, ngroups, dstate, seqlen)
    kw = dict(
        u=torch.randn(batch, dim, seqlen, device=device, dtype=dtype),
        A=-torch.exp(torch.rand(dim, dstate, **f32) * 2.5),
        B=torch.randn(*bc_shape, device=device, dtype=dtype),
        C=torch.randn(*bc_shape, device=device, dtype=dtype),
    )
    if delta_softplus:
        kw["delta"] = (torch.randn(batch, dim, seqlen, **f32) - 3.0).to(dtype)
        kw["delta_softplus"] = True
    else:
        kw["delta"] = torch.exp(torch.rand(batch, dim, seqlen, **f32) * 4.6 - 6.9).to(dtype)
    if D:
        kw["D"] = torch.randn(dim, **f32)
    if z:
        kw["z"] = torch.randn(batch, dim, seqlen, device=device, dtype=dtype)
    if delta_bias:
        kw["delta_bias"] = torch.randn(dim, **f32) * 0.5
    return kw


def assert_workspace_clean() -> None:
    """Every workspace's ticket counter and hand-over flags are back at zero (the kernels leave them so: no launch
    needs a memset)."""
    from flashssm._runtime import _workspaces

    for ws in _workspaces.values():
        assert ws.counter.tolist() == [0]
        assert int(ws.flags.abs().sum()) == 0


def in_dry_run() -> bool:
    """Whether this runs inside compile-ahead's dry run of a backward (`_runtime.plan_ahead`: a training forward on a
    GPU runs its backward on meta tensors to queue its compiles; nothing launches, nothing is allocated). A spy that
    counts what a backward chose or allocated leaves those calls out: on a GPU a backward's choices are made twice."""
    from flashssm import _runtime

    return _runtime._planning_device() is not None


def record_calls(monkeypatch, owner, name: str, what=lambda *args, **kwargs: 1, seen: list | None = None) -> list:
    """owner.name wrapped: each call outside a dry run (`in_dry_run`) appends what(*args, **kwargs) to `seen` (a new
    list unless given), returned, then runs the real one."""
    seen = [] if seen is None else seen
    real = getattr(owner, name)

    def spy(*args, **kwargs):
        if not in_dry_run():
            seen.append(what(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen


def filled_allocations(call) -> tuple[list[str], int]:
    """Runs call() under torch.use_deterministic_algorithms(True) (torch's fill of new tensors with NaN on, as by
    default) and returns the places in flashssm's code that called torch.empty, torch.empty_like or Tensor.new_empty
    while that fill was on, and how many such calls flashssm made in all. Checks that the fill switch is left on."""
    import sys

    import pytest
    from torch.utils import deterministic

    filled, total = [], [0]

    def spy(real):
        def allocate(*args, **kwargs):
            frame = sys._getframe(1)
            if frame.f_code.co_name == "__torch_function__":  # (a recording's torch-function mode: its caller's)
                frame = frame.f_back
            caller = frame.f_code.co_filename
            if "/flashssm/" in caller and not in_dry_run():  # (a dry run's meta tensors: no memory, nothing filled)
                total[0] += 1
                if deterministic.fill_uninitialized_memory:
                    filled.append(f"{caller.split('/flashssm/')[-1]}:{frame.f_lineno}")
            return real(*args, **kwargs)
        return allocate

    previous = torch.are_deterministic_algorithms_enabled()
    with pytest.MonkeyPatch.context() as spies:
        for owner, name in ((torch, "empty"), (torch, "empty_like"), (torch.Tensor, "new_empty")):
            spies.setattr(owner, name, spy(getattr(owner, name)))
        torch.use_deterministic_algorithms(True)
        try:
            assert deterministic.fill_uninitialized_memory
            call()
            assert deterministic.fill_uninitialized_memory, "the fill switch was left off"
        finally:
            deterministic.fill_uninitialized_memory = True
            torch.use_deterministic_algorithms(previous)
    return filled, total[0]


class CompiledStandIn:
    """Stands in for triton's CompiledKernel: its launcher (`run`, which a direct launch calls itself where no launch
    hook is set) records each launch in `launches`, its runner (`[grid]`, Triton's own path, taken with launch hooks
    set) in `runner`. `key`: what the stand-in JIT function compiled it for."""

    def __init__(self, key=None):
        self.key = key
        self.function, self.packed_metadata = object(), ()
        self.launches, self.runner = [], []

    def __getitem__(self, grid):
        def runner(*args, stream=None):
            self.runner.append((grid, args, stream))
        return runner

    def run(self, grid_x, grid_y, grid_z, stream, function, metadata, launch_metadata, enter_hook, exit_hook, *args):
        assert function is self.function and metadata is self.packed_metadata
        assert launch_metadata is None and enter_hook is None and exit_hook is None
        self.launches.append(((grid_x, grid_y, grid_z), args, stream))


def same_model_gradient(got: torch.Tensor, want: torch.Tensor) -> bool:
    """A model's gradient against another run's of the same math: bit for bit on the CPU; on a GPU within 1e-4 of the
    largest value: the SSD backward's float atomics (dB, dC, and the decay's shares) sum in an order that varies from
    run to run, which moves A_log's gradient by up to 3.6e-6 of its largest between two plain runs and 6.4e-6 under
    save_on_cpu (`benchmarks/hooks_grad_spread.py`, seventy-third session; 1e-5 failed once); a wrong gradient is
    off by far more."""
    if got.device.type == "cpu":
        return torch.equal(got, want)
    return bool((got - want).abs().max() <= 1e-4 * want.abs().max())


def lm_grads(model, ids: torch.Tensor, cu_seqlens: torch.Tensor | None = None):
    """A language model's next-token cross-entropy on ids, backpropagated: (the loss, {name: its gradient})."""
    logits = model(ids, cu_seqlens=cu_seqlens)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}
