"""`flashssm bench model`: end-to-end model speed against mamba_ssm and transformers, same weights.

Scenarios (random weights, bf16, one GPU):
- prefill: the Mamba-2 2.7B shape at 1×32K and 1×128K, logits of the last token only;
- decode: 2.7B, batch 1 and 64, prompts of 512 tokens, 256 new tokens, greedy; decode tokens/s is
  batch × 255 over (generate time − prefill time), the same rule for every implementation;
- train: the Mamba-2 370m shape at 8×2K, and the 130m shape at 1×512 (a step the host bounds), fp32
  weights under bf16 autocast, forward + cross-entropy + backward + AdamW step; tokens/s.
"flashssm-graphs" is flashssm's model through torch.compile's CUDA graphs (mode="reduce-overhead"; training
scenarios: flashssm's decoding captures its graphs itself), timed after three warm-up steps (the compile,
cudagraph trees' warm-up and recording); its peak memory counts the warm-up steps too (the graphs' pool is
allocated while they are recorded). "flashssm-recompute": flashssm's model with `set_recompute()` (the conv's and
norm's outputs remade in the backward; training scenarios). "flashssm-checkpointing": with
`set_gradient_checkpointing()` (each layer's forward run again in the backward; training scenarios).
Every implementation runs the same weights (flashssm's, copied in). mamba_ssm runs the fallbacks
a pure-Python install has: nn.Conv1d for the conv (its fused conv+scan path needs the
causal_conv1d CUDA extension), its Triton SSD, step and norms, and its CUDA-graph decoding;
transformers runs its own PyTorch path (no network: no hub kernels). Peak memory is
torch.cuda.max_memory_allocated during each measurement.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

import torch

SCENARIOS = {
    "prefill-32K": dict(kind="prefill", preset="mamba2-2.7b", batch=1, seqlen=32768),
    "prefill-128K": dict(kind="prefill", preset="mamba2-2.7b", batch=1, seqlen=131072),
    "decode-b1": dict(kind="decode", preset="mamba2-2.7b", batch=1, seqlen=512, new=256),
    "decode-b64": dict(kind="decode", preset="mamba2-2.7b", batch=64, seqlen=512, new=256),
    "train-370m-8x2K": dict(kind="train", preset="mamba2-370m", batch=8, seqlen=2048),
    "train-130m-1x512": dict(kind="train", preset="mamba2-130m", batch=1, seqlen=512),
}
CPU_SCENARIOS = {
    "cpu-prefill": dict(kind="prefill", preset="tiny", batch=1, seqlen=64),
    "cpu-decode": dict(kind="decode", preset="tiny", batch=2, seqlen=16, new=8),
    "cpu-train": dict(kind="train", preset="tiny", batch=2, seqlen=32),
}
MINE = ("flashssm", "flashssm-graphs", "flashssm-recompute", "flashssm-checkpointing")
PEERS = ("mamba_ssm", "transformers")
IMPLS = MINE + PEERS


class Unavailable(Exception):
    pass


@dataclass
class Result:
    scenario: str
    impl: str
    seconds: float | None = None
    tokens_per_second: float | None = None
    peak_mib: float | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def _config(name: str):
    from flashssm.models import ModelConfig, preset

    if name == "tiny":
        return ModelConfig(d_model=64, n_layer=2, vocab_size=256, pad_vocab_size_multiple=16,
                           ssm_cfg={"layer": "Mamba2", "d_state": 16, "headdim": 16, "chunk_size": 32})
    return preset(name)


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn, device, repeat: int, warmup: int = 1, peak_from_start: bool = False):
    """Median seconds of `repeat` calls after `warmup` calls, and peak MiB over the timed calls (with peak_from_start,
    over the warm-up calls too: a CUDA graph's memory pool is allocated while it is recorded, and its replays
    allocate nothing more, so a peak over the replays alone would leave the pool out)."""
    if device.type == "cuda" and peak_from_start:
        _sync(device)
        torch.cuda.reset_peak_memory_stats(device)
    for _ in range(warmup):
        fn()
    _sync(device)
    if device.type == "cuda" and not peak_from_start:
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t)
    peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    return statistics.median(times), peak


# ---- the three implementations, over the same weights ----

def _flashssm(model, config):
    return model


def _flashssm_graphs(model, config):
    if model.device.type != "cuda":
        raise Unavailable("CUDA graphs need a CUDA GPU")
    if not model.training:
        raise Unavailable("training scenarios only (flashssm's decoding captures CUDA graphs itself)")
    torch._dynamo.reset()
    return torch.compile(model, mode="reduce-overhead")


def _mamba_ssm(model, config):
    from flashssm.bench.impls import Unavailable as ImplUnavailable, import_mamba_ssm
    from flashssm.models.config import config_to_dict

    if model.device.type != "cuda":
        raise Unavailable("mamba_ssm's model needs a CUDA GPU")
    try:
        module = import_mamba_ssm("mamba_ssm.models.mixer_seq_simple")
    except ImplUnavailable as err:
        raise Unavailable(str(err)) from None
    from mamba_ssm.models.config_mamba import MambaConfig

    cfg = config_to_dict(config.replace(source_format="mamba_ssm"))
    cfg["ssm_cfg"] = dict(cfg["ssm_cfg"], use_mem_eff_path=False)  # the fused conv+scan needs causal_conv1d's CUDA build
    peer = module.MambaLMHeadModel(MambaConfig(**cfg), device=model.device, dtype=model.dtype)
    peer.load_state_dict(model.state_dict())
    return peer


def _transformers(model, config):
    try:
        from transformers import Mamba2Config, Mamba2ForCausalLM
    except ImportError as err:
        raise Unavailable(f"transformers is not importable: {err}") from None
    if config.layer != "Mamba2" or config.attn_layer_idx or config.d_intermediate:
        raise Unavailable("transformers' Mamba2 holds only pure Mamba-2 models")
    ssm = config.ssm_cfg
    hf_cfg = Mamba2Config(hidden_size=config.d_model, num_hidden_layers=config.n_layer,
                          vocab_size=config.padded_vocab_size, num_heads=2 * config.d_model // ssm.get("headdim", 64),
                          head_dim=ssm.get("headdim", 64), state_size=ssm.get("d_state", 128),
                          n_groups=ssm.get("ngroups", 1), chunk_size=ssm.get("chunk_size", 256),
                          tie_word_embeddings=config.tie_embeddings, layer_norm_epsilon=config.norm_epsilon)
    with torch.device(model.device):
        peer = Mamba2ForCausalLM(hf_cfg).to(model.dtype)
    state = {k.replace("backbone.embedding.", "backbone.embeddings."): v for k, v in model.state_dict().items()}
    missing, unexpected = peer.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if k != "lm_head.weight"]:
        raise Unavailable(f"transformers' Mamba2 does not take these weights: {missing} {unexpected}")
    return peer.eval()


def _flashssm_recompute(model, config):
    if not model.training:
        raise Unavailable("training scenarios only")
    return model.set_recompute(True)  # (set back after the measurement: run_scenario)


def _flashssm_checkpointing(model, config):
    if not model.training:
        raise Unavailable("training scenarios only")
    return model.set_gradient_checkpointing(True)  # (set back after the measurement: run_scenario)


BUILDERS = {"flashssm": _flashssm, "flashssm-graphs": _flashssm_graphs, "flashssm-recompute": _flashssm_recompute,
            "flashssm-checkpointing": _flashssm_checkpointing, "mamba_ssm": _mamba_ssm, "transformers": _transformers}


def _prefill_fn(impl, peer, ids):
    if impl == "flashssm":
        last = torch.tensor([ids.shape[1] - 1], device=ids.device)
        return lambda: peer(ids, logits_at=last)
    if impl == "mamba_ssm":
        return lambda: peer(ids, num_last_tokens=1)
    return lambda: peer(ids, logits_to_keep=1)


def _generate_fn(impl, peer, ids, new):
    if impl == "flashssm":
        return lambda: peer.generate(ids, new, temperature=0)
    if impl == "mamba_ssm":
        return lambda: peer.generate(ids, max_length=ids.shape[1] + new, cg=True, top_k=1)
    return lambda: peer.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)


def lm_loss(forward, ids, device):
    """A training step's loss: forward(ids) under bf16 autocast on a GPU, next-token cross entropy in fp32."""
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        out = forward(ids)  # flashssm returns the logits, the peers an output holding them
        logits = out if isinstance(out, torch.Tensor) else out.logits
    return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1).float(), ids[:, 1:].flatten())


def train_step(forward, opt, ids, device, graphs: bool = False, after_forward=None) -> torch.Tensor:
    """One training step: `lm_loss`, its backward, opt's step; graphs: through torch.compile's CUDA graphs (a new step
    marked first: the graphs may overwrite the last step's outputs); after_forward(): called between the loss and its
    backward. Returns the loss."""
    if graphs:
        torch.compiler.cudagraph_mark_step_begin()
    loss = lm_loss(forward, ids, device)
    if after_forward is not None:
        after_forward()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def _train_fn(peer, ids, device, graphs=False):
    opt = torch.optim.AdamW(peer.parameters(), lr=1e-4, fused=device.type == "cuda")
    return lambda: train_step(peer, opt, ids, device, graphs)


def run_scenario(name: str, spec: dict, impls, device, repeat: int) -> list[Result]:
    from flashssm.models import MambaLM

    config = _config(spec["preset"])
    kind = spec["kind"]
    train = kind == "train"
    dtype = torch.float32 if train or device.type == "cpu" else torch.bfloat16
    torch.manual_seed(0)
    with torch.device(device):
        model = MambaLM(config, dtype=dtype)
    if not train:
        model.eval()
    else:
        model.train()
    ids = torch.randint(0, config.vocab_size, (spec["batch"], spec["seqlen"]), device=device)
    results = []
    for impl in impls:
        res = Result(name, impl)
        try:
            peer = BUILDERS[impl](model, config)
            if impl in PEERS and not train:
                with torch.inference_mode():  # same weights, same logits (to bf16 rounding)?
                    want = model(ids[:1, :256])[0, -1].float()
                    got = peer(ids[:1, :256]).logits[0, -1, :config.vocab_size].float()
                res.extra["logit_error_vs_flashssm"] = float((got - want).norm() / want.norm())
            if kind == "prefill":
                with torch.inference_mode():
                    res.seconds, res.peak_mib = _timed(_prefill_fn(impl, peer, ids), device, repeat)
                res.tokens_per_second = ids.numel() / res.seconds
            elif kind == "decode":
                with torch.inference_mode():
                    pre, _ = _timed(_prefill_fn(impl, peer, ids), device, repeat)
                    total, res.peak_mib = _timed(_generate_fn(impl, peer, ids, spec["new"]), device,
                                                 1 if impl == "transformers" else repeat)
                res.seconds = total
                res.extra["prefill_seconds"] = pre
                if total > pre:
                    res.tokens_per_second = spec["batch"] * (spec["new"] - 1) / (total - pre)
                else:  # (timing noise larger than the decoding: no rate rather than an absurd one)
                    res.note = "generate timed no slower than its prefill: no decoding rate"
            else:
                peer.train()
                graphs = impl == "flashssm-graphs"
                res.seconds, res.peak_mib = _timed(_train_fn(peer, ids, device, graphs), device, repeat,
                                                   3 if graphs else 1, peak_from_start=graphs)
                res.tokens_per_second = ids.numel() / res.seconds
        except Unavailable as err:
            res.note = f"unavailable: {err}"
        except torch.OutOfMemoryError:
            res.note = "out of memory"
        except Exception as err:  # a peer failing must not stop the table
            res.note = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
        finally:
            peer = None
            model.set_recompute(False).set_gradient_checkpointing(False)
            if device.type == "cuda":
                torch.cuda.empty_cache()
        results.append(res)
        print(_row(res), flush=True)
    return results


def _row(r: Result) -> str:
    if r.seconds is None:
        return f"{r.scenario:18s} {r.impl:22s} {r.note}"
    extra = " ".join(f"{k}={v:.3g}" for k, v in r.extra.items())
    peak = f"{r.peak_mib:9.0f} MiB" if r.peak_mib is not None else "        - MiB"
    rate = f"{r.tokens_per_second:12.1f}" if r.tokens_per_second is not None else f"{'-':>12s}"
    return f"{r.scenario:18s} {r.impl:22s} {r.seconds * 1e3:11.2f} ms {rate} tok/s {peak}  {extra} {r.note}".rstrip()


def ratios(results: list[Result]) -> list[str]:
    lines = []
    by = {(r.scenario, r.impl): r for r in results}
    for scenario in dict.fromkeys(r.scenario for r in results):
        for i, name in enumerate(MINE):
            mine = by.get((scenario, name))
            if mine is None or mine.tokens_per_second is None:
                continue
            for impl in MINE[:i] + PEERS:
                peer = by.get((scenario, impl))
                if peer is not None and peer.tokens_per_second:
                    lines.append(f"{scenario:18s} {name} / {impl}: "
                                 f"{mine.tokens_per_second / peer.tokens_per_second:.2f}x")
    return lines


def add_arguments(parser) -> None:
    parser.add_argument("-s", "--scenario", action="append", metavar="NAME",
                        help=f"a scenario (repeatable): {', '.join(SCENARIOS)}; default: all on a GPU, "
                             f"{', '.join(CPU_SCENARIOS)} without one")
    parser.add_argument("-i", "--impl", action="append", metavar="NAME", help=f"{', '.join(IMPLS)} (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions per measurement (median)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")


def main(args) -> int:
    has_gpu = torch.cuda.is_available()
    device = torch.device("cuda" if has_gpu else "cpu")
    table = {**SCENARIOS, **CPU_SCENARIOS}
    names = args.scenario or list(SCENARIOS if has_gpu else CPU_SCENARIOS)
    unknown = [n for n in names if n not in table]
    if unknown or (not has_gpu and any(n in SCENARIOS for n in names)):
        print(f"unknown or GPU-only scenario(s) {names}; here: {', '.join(table if has_gpu else CPU_SCENARIOS)}",
              file=sys.stderr)
        return 2
    impls = args.impl or list(IMPLS)
    if [i for i in impls if i not in IMPLS]:
        print(f"unknown implementation in {impls}; known: {', '.join(IMPLS)}", file=sys.stderr)
        return 2
    if not has_gpu:
        print("No CUDA GPU: tiny CPU scenarios through the references; the times say nothing about speed.",
              file=sys.stderr)
    print(f"device: {torch.cuda.get_device_name() if has_gpu else 'cpu'}; torch {torch.__version__}", flush=True)
    results = []
    for name in names:
        results += run_scenario(name, table[name], impls, device, args.repeat)
    for line in ratios(results):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in results], f, indent=2)
    return 0
