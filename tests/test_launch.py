"""`_runtime.launch`: a compiled kernel is reused only for calls that Triton would specialise the same way.

Driven with stand-ins for a @triton.jit function and its compiled kernel (the direct path runs on GPUs
only; the GPU tests run every kernel through it)."""

import dataclasses

import pytest
import torch

from flashssm import _runtime
from tests.helpers import CompiledStandIn


class _Jit:
    """Stands in for a JITFunction with tensors x_ptr, y_ptr, scalars n, eps and a constexpr BLOCK."""

    arg_names = ["x_ptr", "y_ptr", "n", "eps", "BLOCK"]

    def __init__(self):
        self.compiles = []

    def __getitem__(self, grid):
        def run(*args, **meta):
            compiled = CompiledStandIn((grid, args, tuple(sorted(meta.items()))))
            self.compiles.append(compiled)
            return compiled
        return run


@pytest.fixture
def clean_cache(monkeypatch):
    monkeypatch.setattr(_runtime, "_compiled", {})
    monkeypatch.setattr(_runtime, "_layouts", {})


def _launch(kernel, x, y, n=64, eps=1e-5, block=32, device=0, grid=(4,)):
    return _runtime.cached_launch(kernel, grid, (x, y, n, eps), device, 7, {"BLOCK": block, "num_warps": 4})


def test_repeated_call_launches_the_compiled_kernel_directly(clean_cache):
    kernel = _Jit()
    x, y = torch.zeros(64), torch.zeros(64)
    first = _launch(kernel, x, y)
    again = _launch(kernel, torch.ones(64), torch.ones(64), grid=(9, 2))  # other tensors, same dtypes, aligned
    assert again is first and len(kernel.compiles) == 1
    grid, args, stream = first.launches[-1]
    assert grid == (9, 2, 1) and stream == 7
    assert args[2:] == (64, 1e-5, 32)  # scalars, then the constexprs in signature order
    assert args[0].data_ptr() != x.data_ptr()  # this call's tensors, not the first call's


class _CudaLooking(torch.Tensor):
    """A CPU tensor that says it is a CUDA one (the direct path's addresses are for CUDA tensors only)."""

    @property
    def is_cuda(self):
        return True


@pytest.mark.parametrize("addresses", [True, False])
def test_direct_launch_passes_cuda_tensors_as_addresses(clean_cache, monkeypatch, addresses):
    """A repeated launch hands the launcher each CUDA tensor's address as an int (it then skips data_ptr() and the
    driver's pointer query per argument); with POINTER_ADDRESSES off, or for a tensor not on CUDA, the tensor itself."""
    monkeypatch.setattr(_runtime, "POINTER_ADDRESSES", addresses)
    kernel = _Jit()
    x, y = torch.zeros(64).as_subclass(_CudaLooking), torch.zeros(64).as_subclass(_CudaLooking)
    first = _launch(kernel, x, y)
    x2, y2 = torch.ones(64).as_subclass(_CudaLooking), torch.ones(64).as_subclass(_CudaLooking)
    assert _launch(kernel, x2, y2) is first
    _, args, _ = first.launches[-1]
    if addresses:
        assert args[:2] == (x2.data_ptr(), y2.data_ptr()) and all(type(a) is int for a in args[:2])
    else:
        assert args[0] is x2 and args[1] is y2
    assert args[2:] == (64, 1e-5, 32)
    plain = torch.ones(64)  # (not on CUDA: the tensors, whatever the switch)
    assert _launch(kernel, x2, plain) is first
    _, args, _ = first.launches[-1]
    assert args[0] is x2 and args[1] is plain


@pytest.mark.parametrize("change", ["dtype", "alignment", "scalar", "constexpr", "option", "device"])
def test_a_call_triton_would_specialise_differently_goes_through_triton(clean_cache, change):
    kernel = _Jit()
    x, y = torch.zeros(64), torch.zeros(64)
    first = _launch(kernel, x, y)
    kw = {}
    if change == "dtype":
        x = x.double()
    elif change == "alignment":
        x = torch.zeros(65)[1:]  # 4 bytes past a 16-byte boundary
    elif change == "scalar":
        kw["n"] = 65
    elif change == "constexpr":
        kw["block"] = 64
    elif change == "device":
        kw["device"] = 1
    if change == "option":
        other = _runtime.cached_launch(kernel, (4,), (x, y, 64, 1e-5), 0, 7, {"BLOCK": 32, "num_warps": 8})
    else:
        other = _launch(kernel, x, y, **kw)
    assert other is not first and len(kernel.compiles) == 2
    assert first.launches == [] and first.runner == []


def test_a_call_outside_the_layout_always_goes_through_triton(clean_cache):
    kernel = _Jit()
    x = torch.zeros(64)
    for _ in range(2):  # a scalar where a tensor belongs: never keyed, never cached
        _runtime.cached_launch(kernel, (1,), (x, 3, 64, 1e-5), 0, 0, {"BLOCK": 32})
    assert len(kernel.compiles) == 2 and _runtime._compiled == {}


class _SmallGpuJit(_Jit):
    """A kernel whose compile with more than `fits` pipeline stages Triton refuses at its first launch for want of
    shared memory (OutOfResources, raised before it runs), as on a GPU with less of it than Hopper."""

    def __init__(self, fits):
        super().__init__()
        self.fits, self.refused = fits, []

    def __getitem__(self, grid):
        def run(*args, **meta):
            stages = meta.get("num_stages", _runtime.DEFAULT_STAGES)
            if stages > self.fits:
                from triton.runtime.errors import OutOfResources

                self.refused.append(stages)
                raise OutOfResources(40960 * stages, 101376, "shared memory")
            return super(_SmallGpuJit, self).__getitem__(grid)(*args, **meta)
        return run


class _RefusedStandIn(CompiledStandIn):
    """A compile (ahead, unlaunched) that Triton refuses at its first launch for want of shared memory."""

    def run(self, *args):
        from triton.runtime.errors import OutOfResources

        raise OutOfResources(163840, 101376, "shared memory")


def test_a_launch_refused_for_shared_memory_takes_fewer_stages(clean_cache):
    """A launch too large for the GPU's shared memory is compiled again with a stage fewer until it fits; later calls
    with the same options launch that compile directly, with no second refusal and no compile; a compile made ahead
    under the asked options and refused at its launch is replaced by the one that fits."""
    kernel = _SmallGpuJit(fits=1)
    x, y = torch.zeros(64), torch.zeros(64)
    meta = {"BLOCK": 32, "num_warps": 4, "num_stages": 3}
    first = _runtime.cached_launch(kernel, (4,), (x, y, 64, 1e-5), 0, 7, dict(meta))
    assert kernel.refused == [3, 2] and len(kernel.compiles) == 1
    assert dict(first.key[2])["num_stages"] == 1
    again = _runtime.cached_launch(kernel, (4,), (x, y, 64, 1e-5), 0, 7, dict(meta))
    assert again is first and kernel.refused == [3, 2] and len(kernel.compiles) == 1 and len(first.launches) == 1

    kernel = _SmallGpuJit(fits=2)  # the asked options' compile made ahead (`plan_ahead`), refused at its launch
    asked = _runtime._key(kernel, 0, meta, (64, 1e-5), [torch.float32] * 2, [0, 0])
    ahead = _RefusedStandIn()
    _runtime._compiled[asked] = (ahead, (32,))
    fitted = _runtime.cached_launch(kernel, (4,), (x, y, 64, 1e-5), 0, 7, dict(meta))
    assert dict(fitted.key[2])["num_stages"] == 2 and kernel.refused == [] and _runtime._compiled[asked][0] is fitted
    assert _runtime.cached_launch(kernel, (4,), (x, y, 64, 1e-5), 0, 7, dict(meta)) is fitted
    assert len(kernel.compiles) == 1 and len(fitted.launches) == 1

    kernel = _SmallGpuJit(fits=2)  # no stages named: Triton's default, 3
    fitted = _runtime.cached_launch(kernel, (4,), (x, y, 64, 1e-5), 0, 7, {"BLOCK": 32})
    assert kernel.refused == [3] and dict(fitted.key[2])["num_stages"] == 2


def test_a_launch_that_never_fits_says_so(clean_cache):
    kernel = _SmallGpuJit(fits=0)
    x, y = torch.zeros(64), torch.zeros(64)
    with pytest.raises(RuntimeError, match="one pipeline stage already.*99 KB") as info:
        _runtime.cached_launch(kernel, (4,), (x, y, 64, 1e-5), 0, 7, {"BLOCK": 32, "num_stages": 2})
    assert kernel.refused == [2, 1] and type(info.value.__cause__).__name__ == "OutOfResources"

    class _Broken(_Jit):  # any other error is the caller's, unchanged and not retried
        def __getitem__(self, grid):
            def run(*args, **meta):
                self.compiles.append(meta)
                raise ValueError("not shared memory")
            return run

    broken = _Broken()
    with pytest.raises(ValueError, match="not shared memory"):
        _runtime.cached_launch(broken, (4,), (x, y, 64, 1e-5), 0, 7, {"BLOCK": 32, "num_stages": 3})
    assert len(broken.compiles) == 1


def test_a_constexpr_left_to_its_default_keeps_triton_launching(clean_cache):
    kernel = _Jit()
    x, y = torch.zeros(64), torch.zeros(64)
    for _ in range(2):
        _runtime.cached_launch(kernel, (1,), (x, y, 64, 1e-5), 0, 0, {})
    assert len(kernel.compiles) == 2


def test_a_constexpr_left_to_a_default_it_has_is_launched_directly(clean_cache):
    """A constexpr the call leaves out takes its declared default, in the compiled launcher's arguments as in
    Triton's compile: the kernel is still launched directly (the Gluon forward's OWN3 was not, every call)."""
    class _Param:
        def __init__(self, name, default=None):
            self.name, self.has_default, self.default = name, default is not None, default

    class _Defaulted(_Jit):
        arg_names = _Jit.arg_names + ["FLAG"]
        params = [_Param(n) for n in _Jit.arg_names] + [_Param("FLAG", True)]

    kernel = _Defaulted()
    x, y = torch.zeros(64), torch.zeros(64)
    first = _launch(kernel, x, y)
    again = _launch(kernel, x, y)
    assert again is first and len(kernel.compiles) == 1
    assert first.launches[-1][1][2:] == (64, 1e-5, 32, True)


def test_interpreter_results_are_not_cached(clean_cache):
    class _Interpreted(_Jit):
        def __getitem__(self, grid):
            def run(*args, **meta):
                self.compiles.append(None)
            return run

    kernel = _Interpreted()
    x, y = torch.zeros(64), torch.zeros(64)
    for _ in range(2):
        assert _launch(kernel, x, y) is None
    assert len(kernel.compiles) == 2


def test_cpu_tensors_take_triton_launch():
    kernel = _Jit()
    x, y = torch.zeros(64), torch.zeros(64)
    for _ in range(2):
        _runtime.launch(kernel, (1,), (x, y, 64, 1e-5), x.device, BLOCK=32)
    assert len(kernel.compiles) == 2


def test_torch_compile_tracing_takes_triton_launch(clean_cache, monkeypatch):
    """While torch.compile traces, a CUDA launch goes through kernel[grid] (which Dynamo traces as a Triton kernel),
    never the direct path, whose raw-stream read Dynamo cannot trace (a graph break: an error under fullgraph)."""
    kernel = _Jit()
    x, y = torch.zeros(64), torch.zeros(64)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    monkeypatch.setattr(_runtime, "raw_stream", lambda index: pytest.fail("the direct path ran while compiling"))
    for _ in range(2):
        _runtime.launch(kernel, (1,), (x, y, 64, 1e-5), torch.device("cuda", 0), BLOCK=32)
    assert len(kernel.compiles) == 2 and not _runtime._compiled


def test_workspace_keeps_outgrown_buffers(monkeypatch):
    """A grown workspace keeps the buffers it outgrew: a CUDA graph captured before the growth replays launches
    that read and write them, so their memory must not go to another tensor."""
    ws = _runtime._Workspace(torch.device("cpu"))
    _, flags, slots = ws.get(4, 8, torch.float32)
    _, flags2, slots2 = ws.get(64, 8, torch.float32)
    assert flags2.numel() >= 64 and slots2.numel() >= 64 * 8
    assert any(t is flags for t in ws.retired) and any(t is slots for t in ws.retired)
    _, flags3, slots3 = ws.get(16, 8, torch.float32)  # smaller: the same buffers, nothing retired
    assert flags3 is flags2 and slots3 is slots2 and len(ws.retired) == 2


def test_workspace_buffers_are_made_through_kept(monkeypatch):
    """Every buffer a workspace makes goes through `_runtime._kept` (which makes it off the calling thread where
    WORKSPACE_OFF_THREAD: out of a CUDA graph pool that thread allocates to), growth included."""
    made = []
    real = _runtime._kept
    monkeypatch.setattr(_runtime, "_kept", lambda device, make: made.append(device) or real(device, make))
    ws = _runtime._Workspace(torch.device("cpu"))
    ws.get(4, 8, torch.float32)
    ws.get(64, 8, torch.float32)
    assert len(made) == 5  # (counter; flags and slots; both again, grown)
    assert not ws.counter.any() and not ws.flags.any()


def test_off_thread_runs_elsewhere_and_raises_here():
    """`off_thread` runs its callable on another thread, returns its result and raises its exception in the caller."""
    import threading

    seen = []
    out = _runtime.off_thread(torch.device("cpu"), lambda: seen.append(threading.current_thread()) or torch.zeros(3))
    assert torch.equal(out, torch.zeros(3)) and seen and seen[0] is not threading.current_thread()
    with pytest.raises(ValueError, match="planted"):
        _runtime.off_thread(torch.device("cpu"), lambda: (_ for _ in ()).throw(ValueError("planted")))


@pytest.mark.gpu
def test_gpu_workspace_made_off_thread(monkeypatch):
    """With WORKSPACE_OFF_THREAD, a new stream's workspace is made on another thread: its counter and flags zeroed and
    seen so by this thread's stream, and an ssd_scan forward on that stream gives the same bits as on the default
    stream's workspace."""
    import flashssm
    from tests.helpers import ssd_inputs

    monkeypatch.setattr(_runtime, "WORKSPACE_OFF_THREAD", True)
    monkeypatch.setattr(_runtime, "PREPARED", False)
    monkeypatch.setattr(_runtime, "_workspaces", {})  # (every stream's workspace made anew in this test)
    made = []
    real = _runtime.off_thread
    monkeypatch.setattr(_runtime, "off_thread", lambda device, make: made.append(device) or real(device, make))
    kw = ssd_inputs(2, 300, 4, 64, 128, 1, dtype=torch.bfloat16, device="cuda", D="h")
    want = flashssm.ssd_scan(**kw, chunk_size=256)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        ws = _runtime.workspace(torch.device("cuda"))
        assert not ws.counter.any()
        got = flashssm.ssd_scan(**kw, chunk_size=256)
    torch.cuda.current_stream().wait_stream(stream)
    assert made and torch.equal(got, want)


def test_poisoned_outputs_not_filled_while_compiling(monkeypatch):
    """Kernel outputs are NaN-filled in the tests (FLASHSSM_POISON_OUTPUTS), but not while torch.compile traces: after
    that in-place fill, Inductor's compiled backward of the traced autograd.Functions came out all zeros on the GPU
    (torch 2.11; benchmarks/check_compiled_grads.py --functions)."""
    assert _runtime.poison_outputs()
    assert _runtime.empty((3,), torch.float32, "cpu").isnan().all()
    filled = []
    monkeypatch.setattr(torch.Tensor, "fill_", lambda self, value: filled.append(value) or self)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    _runtime.empty((3,), torch.float32, "cpu")
    _runtime.empty_like(torch.zeros(2, 3))
    assert filled == []
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: False)
    _runtime.empty((3,), torch.float32, "cpu")
    assert len(filled) == 1


@dataclasses.dataclass
class TensorDescriptor:
    """Stands in for Triton's (Gluon's) tensor descriptor, its fields in its order (`_runtime` tells one by its class
    name)."""

    base: torch.Tensor
    shape: list
    strides: list
    block_shape: list
    layout: str = "L"
    padding: str = "zero"


def _desc(t, block):
    return TensorDescriptor(t, list(t.shape), list(t.stride()), block)


class _DescJit(_Jit):
    """A stand-in whose scalar `desc` may be a tensor descriptor (or 0)."""

    arg_names = ["x_ptr", "y_ptr", "n", "desc", "BLOCK"]


def test_declared_descriptors_launch_directly_keyed_by_their_specialisation(clean_cache, monkeypatch):
    """A kernel's declared descriptor argument (`descriptor_arguments`): a call with a descriptor over another tensor of
    the same dtype and block launches the compiled kernel directly with this call's descriptor (not the first call's);
    another block shape or dtype, or a placeholder 0, is another compile; an undeclared descriptor keeps Triton's
    launch for the kernel."""
    monkeypatch.setattr(_runtime, "_descriptor_args", {})
    kernel = _DescJit()
    _runtime.descriptor_arguments(kernel, "desc")
    x, y = torch.zeros(64), torch.zeros(64)

    def call(desc):
        return _runtime.cached_launch(kernel, (4,), (x, y, 64, desc), 0, 7, {"BLOCK": 32, "num_warps": 4})

    first = call(_desc(torch.zeros(8, 8), [4, 8]))
    desc = _desc(torch.ones(8, 8), [4, 8])
    assert call(desc) is first and len(kernel.compiles) == 1
    assert first.launches[-1][1][3] is desc  # (this call's descriptor)
    call(_desc(torch.zeros(8, 8), [8, 8]))
    call(_desc(torch.zeros(8, 8, dtype=torch.float64), [4, 8]))
    call(0)
    assert len(kernel.compiles) == 4
    undeclared = _DescJit()
    _runtime.cached_launch(undeclared, (4,), (x, y, 64, desc), 0, 7, {"BLOCK": 32, "num_warps": 4})
    assert _runtime._layouts[id(undeclared)] == -1  # (Triton's launch, every call)


class _RunsStandIn(_DescJit):
    """A stand-in whose launches are kept (Triton's launch: the replay of a recording without a compiled kernel)."""

    def __init__(self):
        super().__init__()
        self.runs = []

    def __getitem__(self, grid):
        return lambda *args, **meta: self.runs.append(args)


def test_a_prepared_call_rebuilds_its_descriptors_over_the_replay_tensors(monkeypatch):
    """A recorded launch with a tensor descriptor among its scalars: the replay hands the kernel a descriptor of the
    same class and fields over the replay's tensor in the described one's place (an input, or a tensor a step made),
    never the recorded one (which holds the first call's address); a descriptor over a tensor no step made leaves the
    call unprepared."""
    monkeypatch.setattr(_runtime, "_prepared", {})
    kernel = _RunsStandIn()

    def call(x, key):
        with _runtime.Recording(key, (x,), lambda: ()) as rec:
            made = _runtime.empty((8, 8), torch.float32, x.device)
            _runtime.launch(kernel, (1,), (x, made, 4, _desc(x, [4, 8])), x.device, BLOCK=8)
            _runtime.launch(kernel, (1,), (x, made, 4, _desc(made, [8, 8])), x.device, BLOCK=8)
            rec.outputs = (made,)
        return made

    x = torch.zeros(8, 8)
    call(x, ("desc",))
    plan = _runtime._prepared[("desc",)]
    assert type(plan) is _runtime.Prepared
    x2 = torch.ones(8, 8)
    kernel.runs.clear()
    (made2,) = plan.run((x2,))
    (_, _, _, d1), (_, _, _, d2) = kernel.runs
    assert type(d1) is TensorDescriptor and d1.base is x2 and d1.block_shape == [4, 8] and d1.strides == [8, 1]
    assert d2.base is made2 and d2.block_shape == [8, 8]
    with _runtime.Recording(("stray",), (x,), lambda: ()) as rec:
        stray = torch.zeros(8, 8)  # (not an input, not made by a step)
        _runtime.launch(kernel, (1,), (x, x, 4, _desc(stray, [4, 8])), x.device, BLOCK=8)
        assert not rec.ok
        rec.outputs = (x,)


def test_cached_helpers_are_traced_without_lru_cache_warnings():
    """`_runtime.cached`: the host path's pure helpers keep a cache in eager calls, and torch.compile traces the
    function itself with no warning (an lru_cache wrapper makes Dynamo warn once for each: eight on a Mamba-2 layer's
    compile on the GPU), giving the same values."""
    import warnings

    calls = []

    @_runtime.cached(maxsize=8)
    def blocks(n: int, wide: bool) -> tuple[int, int]:
        calls.append(n)
        return (n * 2, 64 if wide else 32)

    def step(x):
        rows, width = blocks(x.shape[0], x.shape[1] > 4)
        return x * rows + width

    x = torch.randn(3, 5)
    assert blocks(3, True) == (6, 64) and blocks(3, True) == (6, 64) and calls == [3]
    assert blocks.cache_info().hits == 1
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(step, fullgraph=True, backend="eager")(x)
    torch.testing.assert_close(got, x * 6 + 64)
    assert not [w for w in caught if "lru_cache" in str(w.message)], [str(w.message)[:200] for w in caught]
    blocks.cache_clear()
    assert blocks.cache_info().currsize == 0
