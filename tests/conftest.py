"""Test setup: Triton's interpreter when there is no GPU, NaN-poisoned kernel outputs, the gpu marker.

The interpreter flag must be set before any flashssm kernel module is imported (`@triton.jit`
reads it when a kernel is defined), so it is set here, at collection, before the tests import.
"""

import os
import random
import zlib

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ["TRITON_INTERPRET"] = "1"
os.environ["FLASHSSM_POISON_OUTPUTS"] = "1"  # kernel outputs start as NaN: an unwritten element fails

DEVICE = "cuda" if HAS_GPU else "cpu"


def pytest_sessionstart(session):
    if not HAS_GPU:
        from flashssm._runtime import interpreter_blocker

        why = interpreter_blocker()
        if why is not None:  # every kernel test would silently compare the reference with itself
            pytest.exit(f"the kernel tests need Triton's interpreter: {why}", returncode=4)


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: real shapes on a CUDA GPU (skipped without one; select with -m gpu)")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    return DEVICE


# Fresh inputs every run; FLASHSSM_TEST_SEED=<seed from the report header> replays a run.
SESSION_SEED = int(os.environ.get("FLASHSSM_TEST_SEED", random.SystemRandom().randrange(2**31)))
# pytest-xdist's workers inherit the environment when they start: one seed for the whole run
os.environ["FLASHSSM_TEST_SEED"] = str(SESSION_SEED)
if os.environ.get("PYTEST_XDIST_WORKER") and not HAS_GPU:
    torch.set_num_threads(1)  # one core a worker: the workers share the machine's cores


def pytest_terminal_summary(terminalreporter):
    # (the header is not shown under -q, nor by pytest-xdist's workers: the seed that replays the run, at the end)
    terminalreporter.write_line(f"FLASHSSM_TEST_SEED={SESSION_SEED} replays this run's inputs")


def pytest_report_header(config):
    mode = f"CUDA ({torch.cuda.get_device_name()})" if HAS_GPU else "CPU, Triton interpreter"
    return f"flashssm tests on {mode}; FLASHSSM_TEST_SEED={SESSION_SEED}"


@pytest.fixture(autouse=True)
def _seed_per_test(request):
    torch.manual_seed(SESSION_SEED ^ zlib.crc32(request.node.nodeid.encode()))
