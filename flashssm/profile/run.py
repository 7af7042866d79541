"""Build a model, run one step of a workload under torch.profiler, and keep what the report needs.

Per kernel set (flashssm, mamba_ssm, reference) the run writes `trace-<kernels>.json` (the Chrome
trace) and adds an entry to `profile.json`: the workload, each module's dims (for the kernels'
byte and FLOP formulas), the measured ceilings, the step's wall time and peak memory.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import platform
import re
import statistics
import time
import warnings

import torch

from flashssm.profile.trace import MODULE_PREFIX, PHASE_PREFIX

KERNELS = ("flashssm", "mamba_ssm", "reference")
MODES = ("train", "prefill", "decode")


def model_config(name: str, layers: int | None = None):
    """The config of a workload model: a preset (`flashssm.models.PRESETS`), the paper's suite
    ('mamba2-2.7b', 'mamba2-hybrid', 'mamba1-2.8b'), or a tiny one for CPU checks ('tiny',
    'tiny-hybrid', 'tiny-mamba1'); `layers` cuts the depth (attention layers past it dropped)."""
    from flashssm.models import ModelConfig, preset
    from flashssm.models.config import PRESETS

    tiny_ssm = {"layer": "Mamba2", "d_state": 16, "headdim": 16, "chunk_size": 32}
    if name == "mamba2-hybrid":
        # The paper's hybrid: 43 % Mamba-2, 7 % attention, 50 % MLP sublayers (Waleffe et al.'s 8B
        # recipe: 24 Mamba-2, 4 attention, 28 MLP) at the 2.7B width: 28 blocks of mixer + gated MLP.
        config = ModelConfig(d_model=2560, n_layer=28, d_intermediate=7168, pad_vocab_size_multiple=16,
                             ssm_cfg={"layer": "Mamba2"}, attn_layer_idx=[3, 10, 17, 24],
                             attn_cfg={"causal": True, "num_heads": 20, "num_heads_kv": 4, "head_dim": 128,
                                       "rotary_emb_dim": 64, "out_proj_bias": False, "qkv_proj_bias": False})
    elif name == "tiny":
        config = ModelConfig(d_model=64, n_layer=2, vocab_size=256, pad_vocab_size_multiple=16, ssm_cfg=tiny_ssm)
    elif name == "tiny-hybrid":
        config = ModelConfig(d_model=64, n_layer=3, vocab_size=256, pad_vocab_size_multiple=16, ssm_cfg=tiny_ssm,
                             d_intermediate=128, attn_layer_idx=[1],
                             attn_cfg={"causal": True, "num_heads": 4, "head_dim": 16, "rotary_emb_dim": 8})
    elif name == "tiny-mamba1":
        config = ModelConfig(d_model=64, n_layer=2, vocab_size=256, pad_vocab_size_multiple=16,
                             ssm_cfg={"layer": "Mamba1", "d_state": 8})
    elif name in PRESETS:
        config = preset(name)
    else:
        raise ValueError(f"--model: expected one of {sorted(PRESETS) + ['mamba2-hybrid', 'tiny', 'tiny-hybrid', 'tiny-mamba1']}, "
                         f"got {name!r}")
    if layers is not None:
        if layers < 1:
            raise ValueError(f"--layers: expected a positive layer count, got {layers}")
        layers = min(layers, config.n_layer)
        config = config.replace(n_layer=layers, attn_layer_idx=[i for i in config.attn_layer_idx if i < layers])
    return config


def module_dims(model: torch.nn.Module) -> dict:
    """Per module path, the dims the kernel formulas need (flashssm's and mamba_ssm's modules
    share the attribute names): Mamba-2 and Mamba-1 mixers, norms, and blocks (mamba_ssm's block
    runs the fused residual add + RMS norm itself)."""
    out = {}
    for path, m in model.named_modules():
        d = None
        if all(hasattr(m, a) for a in ("nheads", "headdim", "ngroups", "d_state", "chunk_size")):
            d_ssm = getattr(m, "d_ssm", None) or m.nheads * m.headdim
            # width / gated: the mixer's own gated RMS norm, when it calls the norm function itself
            d = {"kind": "mamba2", "nheads": m.nheads, "headdim": m.headdim, "ngroups": m.ngroups,
                 "d_state": m.d_state, "chunk_size": m.chunk_size, "d_inner": d_ssm,
                 "conv_dim": d_ssm + 2 * m.ngroups * m.d_state, "conv_width": getattr(m, "d_conv", 4),
                 "width": d_ssm, "gated": True}
        elif hasattr(m, "d_inner") and hasattr(m, "d_state") and hasattr(m, "dt_proj"):
            d = {"kind": "mamba1", "d_inner": m.d_inner, "d_state": m.d_state, "ngroups": 1,
                 "conv_dim": m.d_inner, "conv_width": getattr(m, "d_conv", 4)}
        elif re.search(r"(^|\.)layers\.\d+$", path) and hasattr(m, "norm") and hasattr(m.norm, "weight"):
            d = {"kind": "block", "width": m.norm.weight.numel(), "residual": True}
        elif hasattr(m, "norm_f") and hasattr(m.norm_f, "weight"):   # the backbone's final fused add + norm
            d = {"kind": "block", "width": m.norm_f.weight.numel(), "residual": True}
        elif (type(m).__name__ in ("RMSNorm", "RMSNormGated", "LayerNorm") and getattr(m, "weight", None) is not None
              and m.weight.dim() == 1):
            d = {"kind": "norm", "width": m.weight.numel(), "gated": path.endswith("mixer.norm")}
        if d is not None:
            d["type"] = type(m).__name__
            out[path] = d
    return out


class ModuleRanges:
    """A profiler range (and an NVTX range) named after each module's path around its forward."""

    def __init__(self, model: torch.nn.Module, nvtx: bool):
        self.handles, self.open = [], []
        self.nvtx = nvtx
        for path, m in model.named_modules():
            if not path:
                continue
            self.handles.append(m.register_forward_pre_hook(self._enter(MODULE_PREFIX + path)))
            self.handles.append(m.register_forward_hook(self._exit))

    def _enter(self, name):
        def hook(module, args):
            rf = torch.autograd.profiler.record_function(name)
            rf.__enter__()
            if self.nvtx:
                torch.cuda.nvtx.range_push(name)
            self.open.append(rf)
        return hook

    def _exit(self, module, args, output):
        if self.open:
            if self.nvtx:
                torch.cuda.nvtx.range_pop()
            self.open.pop().__exit__(None, None, None)

    def remove(self):
        for h in self.handles:
            h.remove()


@contextlib.contextmanager
def phase(name: str, nvtx: bool):
    with torch.autograd.profiler.record_function(PHASE_PREFIX + name):
        if nvtx:
            torch.cuda.nvtx.range_push(PHASE_PREFIX + name)
        try:
            yield
        finally:
            if nvtx:
                torch.cuda.nvtx.range_pop()


def build(kernels: str, config, device: torch.device, dtype: torch.dtype, checkpoint: str | None):
    """The model to profile and whether it is mamba_ssm's (its call signature differs)."""
    from flashssm.models import MambaLM

    torch.manual_seed(0)
    if checkpoint:
        model = MambaLM.from_pretrained(checkpoint, device=device, dtype=dtype)
    else:
        with torch.device(device):
            model = MambaLM(config, dtype=dtype)
    if kernels != "mamba_ssm":
        return model, False
    if model.config.layer == "Mamba1":
        raise RuntimeError("mamba_ssm's Mamba-1 runs its CUDA selective_scan extension, which a pure-Python install "
                           "does not build")
    from flashssm.bench.model import Unavailable, _mamba_ssm

    try:
        peer = _mamba_ssm(model, model.config)
    except Unavailable as err:
        raise RuntimeError(f"mamba_ssm kernels unavailable: {err}") from None
    del model
    return peer, True


def make_step(mode: str, model, is_peer: bool, ids: torch.Tensor, nvtx: bool, amp: bool, decode_steps: int):
    """A function running one step of `mode` (a train step: forward, loss, backward, AdamW step;
    a prefill: the whole prompt, last-token logits; decode: `decode_steps` single-token steps after a
    prefill done here, eagerly so that every kernel keeps its operator in the trace)."""
    device = ids.device
    if mode == "train":
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")

        def train_step():
            with phase("forward", nvtx), torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
                out = model(ids)
                logits = out if isinstance(out, torch.Tensor) else out.logits
                loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())
            with phase("backward", nvtx):
                loss.backward()
            with phase("optimizer", nvtx):
                opt.step()
                opt.zero_grad(set_to_none=True)
        return train_step
    model.eval()
    if mode == "prefill":
        last = torch.tensor([ids.shape[1] - 1], device=device)

        @torch.inference_mode()
        def prefill_step():
            with phase("forward", nvtx):
                if is_peer:
                    model(ids, num_last_tokens=1)
                else:
                    model(ids, logits_at=last)
        return prefill_step

    batch, seqlen = ids.shape
    if is_peer:
        from mamba_ssm.utils.generation import InferenceParams

        params = InferenceParams(max_seqlen=seqlen + 4 * decode_steps + 8, max_batch_size=batch)

        @torch.inference_mode()
        def decode_step():
            params.seqlen_offset = 0
            params.key_value_memory_dict.clear()
            tok = model(ids, inference_params=params, num_last_tokens=1).logits[:, -1].argmax(-1)
            params.seqlen_offset = seqlen
            with phase("forward", nvtx):
                for _ in range(decode_steps):
                    tok = model(tok[:, None], inference_params=params, num_last_tokens=1).logits[:, -1].argmax(-1)
                    params.seqlen_offset += 1
        return decode_step

    cache = model.allocate_cache(batch, seqlen + decode_steps + 1)

    @torch.inference_mode()
    def decode_step_flash():
        cache.lengths.zero_()
        tok = model(ids, cache=cache, logits_at=torch.arange(batch, device=device) * seqlen + seqlen - 1).argmax(-1)
        with phase("forward", nvtx):
            for _ in range(decode_steps):
                tok = model.step(tok, cache).argmax(-1)
    return decode_step_flash


def weights(args, device: torch.device) -> tuple[torch.dtype, bool]:
    """The weights' dtype and whether a train step runs under bf16 autocast, from --dtype (on the CPU:
    fp32, no autocast: bf16 under the interpreter is unreliable, and a CPU run is a check)."""
    if device.type == "cpu":
        return torch.float32, False
    dtype = {"amp": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    return dtype, args.mode == "train" and args.dtype == "amp"


def profile_one(kernels: str, args, out_dir: str, device: torch.device) -> dict:
    """Profile one step with one kernel set; write its trace; return its run entry."""
    from flashssm import _runtime

    from flashssm.bench.model import _sync

    config = model_config(args.model, args.layers)
    dtype, amp = weights(args, device)
    ref = _runtime.use_reference() if kernels == "reference" else contextlib.nullcontext()
    with ref, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        model, is_peer = build(kernels, config, device, dtype, args.checkpoint)
        vocab = config.vocab_size
        gen = torch.Generator(device="cpu").manual_seed(0)
        ids = torch.randint(0, vocab, (args.batch, args.seqlen), generator=gen).to(device)
        nvtx = device.type == "cuda"
        step = make_step(args.mode, model, is_peer, ids, nvtx, amp, args.decode_steps)
        for _ in range(args.warmup):
            step()
        _sync(device)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            step()
            _sync(device)
            times.append(time.perf_counter() - t)
        peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
        ranges = ModuleRanges(model, nvtx)
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
            step()
            _sync(device)
        ranges.remove()
        trace = os.path.join(out_dir, f"trace-{kernels}.json")
        prof.export_chrome_trace(trace)
        entry = {"kernels": kernels, "trace": os.path.basename(trace), "modules": module_dims(model),
                 "step_ms": 1e3 * statistics.median(times), "peak_mib": peak,
                 "parameters": sum(p.numel() for p in model.parameters()), "layers": config.n_layer,
                 "dtype": args.dtype if device.type == "cuda" else "fp32",
                 "elem_bytes": 2 if (amp or dtype in (torch.bfloat16, torch.float16)) else 4}
    del model, step, prof
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return entry


def run(args, out_dir: str) -> dict:
    """Profile every requested kernel set; write profile.json; return the meta dict."""
    from flashssm.bench.measure import measure_ceilings
    from flashssm.bench.run import versions

    os.makedirs(out_dir, exist_ok=True)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    meta = {"workload": {"model": args.model, "mode": args.mode, "batch": args.batch, "seqlen": args.seqlen,
                         "layers": args.layers, "dtype": args.dtype, "decode_steps": args.decode_steps,
                         "checkpoint": args.checkpoint},
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.machine()})",
            "versions": ", ".join(f"{k} {v}" for k, v in versions().items() if v), "runs": {}, "errors": {}}
    meta["ceilings"] = vars(measure_ceilings(device)) if device.type == "cuda" else None
    for kernels in args.kernels:
        try:
            meta["runs"][kernels] = profile_one(kernels, args, out_dir, device)
            print(f"profiled {kernels}: step {meta['runs'][kernels]['step_ms']:.2f} ms", flush=True)
        except Exception as err:   # one kernel set failing (a peer's missing extension) must not lose the others
            if isinstance(err, torch.OutOfMemoryError):
                msg = "out of memory (try --layers, a smaller --batch or --seqlen)"
            else:
                msg = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
            meta["errors"][kernels] = msg
            print(f"{kernels}: {msg}", flush=True)
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
    with open(os.path.join(out_dir, "profile.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta
