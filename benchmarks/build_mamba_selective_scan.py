"""Build mamba_ssm's CUDA selective scan (the extension `selective_scan_cuda`) from its source distribution, on the
GPU machine, so that `flashssm bench` can time it beside flashssm's Triton scan (the `mamba_ssm` implementation of
the selective_scan workloads).

Only what the bench runs is compiled: sm_90 only, and real weights only. The source's three complex-weight backward
files are left out, and the complex branch of its weight-type dispatch is cut. The compiler flags are the source's
setup.py's own. The extension is built with torch's JIT builder (ninja, MAX_JOBS jobs), into --build. Then put
--build on PYTHONPATH for the bench.

    python3 benchmarks/build_mamba_selective_scan.py [--sdist .whl/mamba_ssm-2.3.2.post1.tar.gz] [--build DIR]

The sdist comes from the package index, fetched on a machine that has it:
    MAMBA_SKIP_CUDA_BUILD=TRUE pip download --no-deps --no-build-isolation --no-binary :all: mamba-ssm==2.3.2.post1 -d .whl
"""

import argparse
import os
import tarfile
import time
from pathlib import Path

SOURCES = ["selective_scan.cpp", "selective_scan_fwd_fp32.cu", "selective_scan_fwd_fp16.cu",
           "selective_scan_fwd_bf16.cu", "selective_scan_bwd_fp32_real.cu", "selective_scan_bwd_fp16_real.cu",
           "selective_scan_bwd_bf16_real.cu"]

COMPLEX_BRANCH = """    } else if (WTYPE == at::ScalarType::ComplexFloat) {                              \\
        using weight_t = c10::complex<float>;                                        \\
        __VA_ARGS__();                                                               \\
"""

NVCC_FLAGS = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
              "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
              "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__", "--expt-relaxed-constexpr",
              "--expt-extended-lambda", "--use_fast_math", "-lineinfo", "--threads", "4",
              "-gencode", "arch=compute_90,code=sm_90"]


def extract(sdist: Path, dest: Path) -> Path:
    """The sdist's csrc/selective_scan folder, extracted into dest, its dispatch cut to real weights."""
    if not sdist.is_file():
        raise SystemExit(f"{sdist}: no such file (fetch it as this script's docstring says, and carry it)")
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if "/csrc/selective_scan/" in m.name and m.isfile()]
        if not members:
            raise SystemExit(f"{sdist}: no csrc/selective_scan in it")
        for m in members:
            m.name = Path(m.name).name
            tar.extract(m, dest)
    cpp = dest / "selective_scan.cpp"
    text = cpp.read_text()
    if COMPLEX_BRANCH not in text:
        raise SystemExit("selective_scan.cpp: the complex-weight dispatch branch was not found (another version?)")
    cpp.write_text(text.replace(COMPLEX_BRANCH, ""))
    return dest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdist", default=".whl/mamba_ssm-2.3.2.post1.tar.gz")
    ap.add_argument("--build", default="/tmp/selective_scan_cuda")
    ap.add_argument("--jobs", default=str(os.cpu_count() or 8))
    a = ap.parse_args()
    from torch.utils.cpp_extension import load

    build = Path(a.build)
    src = extract(Path(a.sdist), build / "src")
    os.environ["MAX_JOBS"] = a.jobs
    start = time.time()
    load("selective_scan_cuda", [str(src / s) for s in SOURCES], extra_cflags=["-O3", "-std=c++17"],
         extra_cuda_cflags=NVCC_FLAGS, build_directory=str(build), verbose=False)
    print(f"built selective_scan_cuda in {time.time() - start:.0f} s into {build}", flush=True)


if __name__ == "__main__":
    main()
