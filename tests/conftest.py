"""Test setup: Triton's interpreter when there is no GPU, NaN-poisoned kernel outputs, the gpu marker.

The interpreter flag must be set before any flashssm kernel module is imported (`@triton.jit`
reads it when a kernel is defined), so it is set here, at collection, before the tests import.
"""

import dataclasses
import inspect
import os
import random
import weakref
import zlib

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ["TRITON_INTERPRET"] = "1"


def _interpreter_to_adjust(switch: str):
    """(triton.language, triton.runtime.interpreter) for the adjustments below, or None: on a GPU (no interpreter),
    where the environment variable `switch` is set (Triton's own behaviour kept), or without Triton."""
    if HAS_GPU or os.environ.get(switch, "") not in ("", "0"):
        return None
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return None
    return tl, interpreter


def _interpreter_without_overflow_checks():
    """Triton's interpreter checks every 32-bit integer add, sub and mul for overflow (a GPU build does only in debug
    mode). At the tests' shapes no index comes near 2^31, so the check cannot fire for the package's index arithmetic,
    and it costs about a third of a kernel test's time (ssd_scan's forward case: 0.77 -> 0.51 s). Offsets past 2^31
    are checked on the GPU (benchmarks/check_huge.py). FLASHSSM_OVERFLOW_CHECKS=1 keeps the checks."""
    found = _interpreter_to_adjust("FLASHSSM_OVERFLOW_CHECKS")
    if found is None:
        return
    builder = getattr(found[1], "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if options is not None and dataclasses.is_dataclass(options) and hasattr(options, "sanitize_overflow"):
        builder.options = dataclasses.replace(options, sanitize_overflow=False)


def _interpreter_patches_language_once_a_launch():
    """Triton's interpreter swaps triton.language's builtins for its own (`_patch_lang`: `inspect.getmembers` over
    tl, tl.tensor, tl.math) when a kernel launches, and again on every call of a `@triton.jit` helper inside it,
    where the language is already swapped: the helper's repeat finds nothing left to swap and its changes are never
    undone (the launch's restore puts the originals back). Reductions' combiners repeat it for every reduction. That
    repeat was a third of the suite's time (the SSD backward's `test_chunk_sizes[16-tiles]` 19 -> 12-14 s; the
    whole run on two workers 1048 -> 694 s, benchmarks/notes/hardening.md). Here a helper's call during a launch
    whose swaps already cover the helper's modules skips it; the launch's own swap and restore are Triton's.
    FLASHSSM_INTERPRETER_REPATCH=1 keeps Triton's behaviour."""
    found = _interpreter_to_adjust("FLASHSSM_INTERPRETER_REPATCH")
    if found is None:
        return
    tl, interpreter = found
    original = getattr(interpreter, "_patch_lang", None)
    executor = getattr(interpreter, "GridExecutor", None)
    scope_type = getattr(interpreter, "_LangPatchScope", None)
    if original is None or executor is None or scope_type is None:
        return  # another Triton's interpreter: leave it as it is
    launch_call = executor.__call__
    # The language modules the launch now running has swapped: empty before its own swap, None outside launches.
    swapped = None
    known = weakref.WeakKeyDictionary()  # a function -> the language modules among its globals

    def modules_of(fn):
        mods = known.get(fn)
        if mods is None:
            mods = known[fn] = frozenset(id(v) for v in fn.__globals__.values()
                                         if inspect.ismodule(v) and v in (tl, tl.core))
        return mods

    def launch(self, *args, **kwargs):
        nonlocal swapped
        outer, swapped = swapped, frozenset()
        try:
            return launch_call(self, *args, **kwargs)
        finally:
            swapped = outer

    def patch_lang(fn):
        nonlocal swapped
        if swapped and modules_of(fn) <= swapped:
            return scope_type()  # a helper inside a launch whose swaps cover it
        scope = original(fn)
        if swapped is not None:  # the launch's own swap, or a helper's from modules it did not cover (Triton's
            swapped = swapped | modules_of(fn)  # reductions' combiners): swapped now
        return scope

    executor.__call__ = launch
    interpreter._patch_lang = patch_lang


def _interpreter_dtype_lookup_cached():
    """The interpreter maps a Triton type to numpy's (`_get_np_dtype`) by building a table of 19 entries on every call:
    about 17 us, some 55 000 calls in one SSD backward kernel test (about 1 s of its 12). Here the answer is kept
    per element type (types hash and compare by name; pointers and blocks of pointers stay uint64, as there).
    FLASHSSM_INTERPRETER_REPATCH=1 keeps Triton's behaviour here too."""
    found = _interpreter_to_adjust("FLASHSSM_INTERPRETER_REPATCH")
    if found is None:
        return
    tl, interpreter = found
    lookup = getattr(interpreter, "_get_np_dtype", None)
    if lookup is None or not hasattr(tl, "block_type") or not hasattr(tl, "pointer_type"):
        return
    known = {}

    def np_dtype(tt_dtype):
        elem = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
        if isinstance(elem, tl.pointer_type):
            return lookup(elem)
        try:
            return known[elem]
        except KeyError:
            known[elem] = answer = lookup(elem)
            return answer
        except TypeError:  # an unhashable type: as Triton does
            return lookup(tt_dtype)

    interpreter._get_np_dtype = np_dtype


_interpreter_without_overflow_checks()
_interpreter_patches_language_once_a_launch()
_interpreter_dtype_lookup_cached()
os.environ["FLASHSSM_POISON_OUTPUTS"] = "1"  # kernel outputs start as NaN: an unwritten element fails

DEVICE = "cuda" if HAS_GPU else "cpu"


def pytest_sessionstart(session):
    if not HAS_GPU:
        from flashssm._runtime import interpreter_blocker

        why = interpreter_blocker()
        if why is not None:  # every kernel test would silently compare the reference with itself
            pytest.exit(f"the kernel tests need Triton's interpreter: {why}", returncode=4)


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="on the CPU, also run the cases marked `full` (a GPU run always takes them)")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # (an xdist worker's reports reach the controller, which prints them)
        _CONFIG[:] = [config]
    config.addinivalue_line("markers", "gpu: real shapes on a CUDA GPU (skipped without one; select with -m gpu)")
    config.addinivalue_line(
        "markers", "full: a further case of a cross product whose other cases the default run covers (more tuning "
                   "forms, layouts or option sets of the same kernel path); on the CPU only with --full or "
                   "FLASHSSM_FULL_TESTS=1, on a GPU always")
    config.addinivalue_line(
        "markers", "compile_ahead: drives compile-ahead's queue and planners itself (on the CPU the planners otherwise "
                   "run as on a GPU: the fixture `_planners_run_as_on_a_gpu`)")


def full_run(config) -> bool:
    """Whether a CPU run takes the `full` cases (the interpreter takes ~6 more minutes on two cores for them); a GPU
    run always does (they cost seconds there: the collection hook marks nothing there)."""
    return config.getoption("--full") or os.environ.get("FLASHSSM_FULL_TESTS", "") not in ("", "0")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    skip_full = pytest.mark.skip(reason="a further case of a cross product the default run covers: --full runs it")
    full = full_run(config)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
        elif "full" in item.keywords and not full:
            item.add_marker(skip_full)


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(autouse=True)
def _planners_run_as_on_a_gpu(request, monkeypatch):
    """Without a GPU, compile-ahead's planners (`_runtime.plan_ahead`) run as on one: at a training forward's first
    launch its backward runs on meta tensors for a GPU of 132 SMs and capability 9.0, and what it would compile is
    dropped. On a GPU every backward's choices are made twice, once in that dry run, and a planner that fails there is
    silent (the backward just compiles late): here a failing planner fails the test with its own traceback, and a
    test that counts a backward's choices, or a dry run that leaves state behind, shows on the CPU (the forty-ninth
    session found both kinds on the GPU only). Not on a GPU, where the planners run for real, nor for tests marked
    `compile_ahead`, which drive that machinery themselves."""
    if HAS_GPU or "compile_ahead" in request.keywords:
        yield
        return
    from flashssm import _runtime

    monkeypatch.setattr(_runtime, "_can_plan", lambda device: _runtime.compile_ahead
                        and not torch.compiler.is_compiling())
    monkeypatch.setattr(_runtime, "_cuda_sm_count", lambda index: 132)
    monkeypatch.setattr(_runtime, "_cuda_shared_memory", lambda index: 227 * 1024)
    monkeypatch.setattr(_runtime, "cuda_capability", lambda index: (9, 0))
    monkeypatch.setattr(_runtime, "_compile_ahead", lambda *args, **kwargs: None)
    real_launch = _runtime.launch

    def launch(kernel, grid, args, device, **meta):
        if device.type == "cpu" and _runtime._planner is not None:  # (as `cached_launch` before a compile)
            failed = _runtime.ahead_stats["planner_failed"]
            _runtime._run_planner(_runtime._planner)
            if _runtime.ahead_stats["planner_failed"] != failed:  # (swallowed there: raised here, with its traceback)
                raise AssertionError("compile-ahead's planner failed") from _runtime.ahead_errors[0]
        return real_launch(kernel, grid, args, device, **meta)

    monkeypatch.setattr(_runtime, "launch", launch)
    yield


# Fresh inputs every run; FLASHSSM_TEST_SEED=<seed from the report header> replays a run.
SESSION_SEED = int(os.environ.get("FLASHSSM_TEST_SEED", random.SystemRandom().randrange(2**31)))
# pytest-xdist's workers inherit the environment when they start: one seed for the whole run
os.environ["FLASHSSM_TEST_SEED"] = str(SESSION_SEED)
if os.environ.get("PYTEST_XDIST_WORKER") and not HAS_GPU:
    torch.set_num_threads(1)  # one core a worker: the workers share the machine's cores


def pytest_terminal_summary(terminalreporter):
    # (the header is not shown under -q, nor by pytest-xdist's workers: the seed that replays the run, at the end)
    terminalreporter.write_line(f"FLASHSSM_TEST_SEED={SESSION_SEED} replays this run's inputs")


_CONFIG = []  # (the session's config, in the process that reports: not an xdist worker)


def pytest_sessionfinish(session):
    _CONFIG.clear()


def pytest_runtest_logreport(report):
    """A failure named the moment it is reported, with the seed that replays it: a run stopped by a time limit never
    prints its summary, and quiet output (-q) shows a failure as an F alone (a GPU session lost a failing test's name
    that way). Under pytest-xdist the controller prints it as each worker's report arrives."""
    if report.failed and _CONFIG:
        terminal = _CONFIG[0].pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(f"\nFAILED {report.nodeid} ({report.when}), FLASHSSM_TEST_SEED={SESSION_SEED}")


def pytest_report_header(config):
    mode = f"CUDA ({torch.cuda.get_device_name()})" if HAS_GPU else "CPU, Triton interpreter"
    return f"flashssm tests on {mode}; FLASHSSM_TEST_SEED={SESSION_SEED}"


@pytest.fixture(autouse=True)
def _no_prepared_calls_across_tests():
    """Each test starts and ends with no prepared call (`_runtime.Prepared`): a test that patches a function of a
    call's path (a resident-program count, a spy) then sees its own calls recorded, not another test's replayed."""
    from flashssm import _runtime

    _runtime.clear_prepared()
    yield
    _runtime.clear_prepared()


@pytest.fixture(autouse=True)
def _seed_per_test(request):
    torch.manual_seed(SESSION_SEED ^ zlib.crc32(request.node.nodeid.encode()))
