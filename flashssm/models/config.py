"""Model configuration: mamba_ssm's MambaConfig fields, named presets for the published shapes, and
the translation from and to the config.json of mamba_ssm and of Hugging Face transformers."""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field

MAMBA2_SSM_KEYS = {"d_state", "d_conv", "conv_init", "expand", "headdim", "d_ssm", "ngroups", "A_init_range",
                   "D_has_hdim", "rmsnorm", "norm_before_gate", "dt_min", "dt_max", "dt_init_floor", "dt_limit", "bias",
                   "conv_bias", "chunk_size", "norm_eps", "norm_group_size"}
MAMBA1_SSM_KEYS = {"d_state", "d_conv", "expand", "dt_rank", "dt_min", "dt_max", "dt_init", "dt_scale",
                   "dt_init_floor", "conv_bias", "bias", "d_inner"}
# mamba_ssm options that only choose its kernels or its tensor parallelism: same model, ignored here
IGNORED_SSM_KEYS = {"use_mem_eff_path", "use_fast_path", "process_group", "sequence_parallel", "layer_idx"}
ATTN_KEYS = {"num_heads", "num_heads_kv", "head_dim", "mlp_dim", "qkv_proj_bias", "out_proj_bias", "softmax_scale",
             "causal", "d_conv", "rotary_emb_dim", "rotary_emb_base", "rotary_emb_interleaved"}
FORMATS = ("mamba_ssm", "hf-mamba2", "hf-mamba")


@dataclass
class ModelConfig:
    """A Mamba language model. The fields are mamba_ssm's MambaConfig (config.json of its
    checkpoints); ssm_cfg["layer"] is "Mamba1" (default) or "Mamba2". norm_epsilon is the block
    norms' eps (mamba_ssm fixes it at 1e-5). source_format records which config.json it came from,
    so save_pretrained writes the same format back."""

    d_model: int = 2560
    n_layer: int = 64
    vocab_size: int = 50277
    d_intermediate: int = 0
    ssm_cfg: dict = field(default_factory=dict)
    attn_layer_idx: list = field(default_factory=list)
    attn_cfg: dict = field(default_factory=dict)
    rms_norm: bool = True
    residual_in_fp32: bool = True
    fused_add_norm: bool = True
    pad_vocab_size_multiple: int = 8
    tie_embeddings: bool = True
    norm_epsilon: float = 1e-5
    source_format: str = "mamba_ssm"

    def __post_init__(self):
        for name in ("d_model", "n_layer", "vocab_size", "pad_vocab_size_multiple"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"config {name} must be a positive int, got {value!r}")
        if self.layer not in ("Mamba1", "Mamba2"):
            raise ValueError(f"config ssm_cfg['layer'] must be 'Mamba1' or 'Mamba2', got {self.layer!r}")
        allowed = (MAMBA2_SSM_KEYS if self.layer == "Mamba2" else MAMBA1_SSM_KEYS) | IGNORED_SSM_KEYS | {"layer"}
        for key in self.ssm_cfg:
            if key not in allowed:
                raise ValueError(f"config ssm_cfg has an unknown key {key!r} for a {self.layer} model")
        for key in self.attn_cfg:
            if key not in ATTN_KEYS:
                raise ValueError(f"config attn_cfg has an unknown key {key!r}")
        bad = [i for i in self.attn_layer_idx if not 0 <= i < self.n_layer]
        if bad:
            raise ValueError(f"config attn_layer_idx must index layers 0..{self.n_layer - 1}, got {bad}")
        if self.attn_layer_idx and "num_heads" not in self.attn_cfg:
            raise ValueError("config attn_cfg must give num_heads when attn_layer_idx is not empty")
        if self.source_format not in FORMATS:
            raise ValueError(f"config source_format must be one of {FORMATS}, got {self.source_format!r}")

    @property
    def layer(self) -> str:
        return self.ssm_cfg.get("layer", "Mamba1")

    @property
    def padded_vocab_size(self) -> int:
        m = self.pad_vocab_size_multiple
        return (self.vocab_size + m - 1) // m * m

    def mixer_kwargs(self) -> dict:
        return {k: v for k, v in self.ssm_cfg.items() if k not in IGNORED_SSM_KEYS and k != "layer"}

    def replace(self, **changes) -> "ModelConfig":
        return dataclasses.replace(copy.deepcopy(self), **changes)


def _mamba2(d_model, n_layer, **kw):
    return ModelConfig(d_model=d_model, n_layer=n_layer, ssm_cfg={"layer": "Mamba2"}, pad_vocab_size_multiple=16, **kw)


def _mamba1(d_model, n_layer):
    return ModelConfig(d_model=d_model, n_layer=n_layer, ssm_cfg={}, pad_vocab_size_multiple=8)


# The published shapes (state-spaces/mamba-* and mamba2-* on the Hugging Face hub; GPT-NeoX vocab)
PRESETS = {
    "mamba1-130m": _mamba1(768, 24),
    "mamba1-370m": _mamba1(1024, 48),
    "mamba1-790m": _mamba1(1536, 48),
    "mamba1-1.4b": _mamba1(2048, 48),
    "mamba1-2.8b": _mamba1(2560, 64),
    "mamba2-130m": _mamba2(768, 24),
    "mamba2-370m": _mamba2(1024, 48),
    "mamba2-780m": _mamba2(1536, 48),
    "mamba2-1.3b": _mamba2(2048, 48),
    "mamba2-2.7b": _mamba2(2560, 64),
    # mamba2attn-2.7b: a Mamba-2 model with attention at six of its 64 layers
    "mamba2-hybrid-2.7b": _mamba2(2560, 64, attn_layer_idx=[9, 18, 27, 36, 45, 56],
                                  attn_cfg={"causal": True, "d_conv": 4, "head_dim": 128, "num_heads": 30,
                                            "out_proj_bias": False, "qkv_proj_bias": False, "rotary_emb_dim": 64}),
}


def preset(name: str) -> ModelConfig:
    """A copy of a named preset (`PRESETS`)."""
    if name not in PRESETS:
        raise ValueError(f"unknown model preset {name!r}; presets: {', '.join(PRESETS)}")
    return copy.deepcopy(PRESETS[name])


def _fields_of(d: dict, names) -> dict:
    return {k: d[k] for k in names if k in d}


def config_from_dict(d: dict, *, hf_norm_per_group: bool = False) -> ModelConfig:
    """Read a config.json: mamba_ssm's (d_model, n_layer, ...) or transformers' Mamba2 / Mamba
    (model_type "mamba2" / "mamba"). transformers' older Mamba2 normalised the gated norm over the
    whole width (shared/SEMANTICS.md keeps that for its checkpoints); hf_norm_per_group=True
    normalises per group instead, as transformers 5 and mamba_ssm do (identical when n_groups is 1)."""
    if not isinstance(d, dict):
        raise ValueError(f"config.json must hold a JSON object, got {type(d).__name__}")
    model_type = d.get("model_type")
    if "d_model" in d and model_type is None:
        names = [f.name for f in dataclasses.fields(ModelConfig) if f.name != "source_format"]
        unknown = [k for k in d if k not in names]
        if unknown:
            raise ValueError(f"config.json has keys mamba_ssm's MambaConfig does not: {unknown}")
        return ModelConfig(**_fields_of(d, names), source_format="mamba_ssm")
    if model_type == "mamba2":
        return _from_hf_mamba2(d, hf_norm_per_group)
    if model_type == "mamba":
        return _from_hf_mamba(d)
    raise ValueError(f"config.json describes neither a mamba_ssm model (d_model, n_layer, ...) nor a transformers "
                     f"Mamba2 or Mamba model (model_type {model_type!r}): not a model flashssm can load")


def _number(v):
    """A JSON number, or transformers 5's encoding of a non-finite one ({"__float__": "Infinity"})."""
    if isinstance(v, dict) and set(v) == {"__float__"}:
        return float(v["__float__"])
    return v


def _need(d: dict, *names):
    missing = [n for n in names if n not in d]
    if missing:
        raise ValueError(f"config.json lacks {', '.join(missing)}")
    return [d[n] for n in names]


def _from_hf_mamba2(d: dict, per_group: bool) -> ModelConfig:
    hidden, n_layer, vocab, heads, head_dim, state = _need(d, "hidden_size", "num_hidden_layers", "vocab_size",
                                                           "num_heads", "head_dim", "state_size")
    expand, groups = d.get("expand", 2), d.get("n_groups", 8)
    if hidden * expand != heads * head_dim:
        raise ValueError(f"config.json: hidden_size · expand ({hidden * expand}) must equal num_heads · head_dim "
                         f"({heads * head_dim})")
    eps = d.get("layer_norm_epsilon", 1e-5)
    ssm = {"layer": "Mamba2", "d_state": state, "d_conv": d.get("conv_kernel", 4), "expand": expand,
           "headdim": head_dim, "ngroups": groups, "chunk_size": d.get("chunk_size", 256),
           "bias": d.get("use_bias", False), "conv_bias": d.get("use_conv_bias", True), "norm_eps": eps,
           "dt_limit": tuple(_number(v) for v in d.get("time_step_limit", (0.0, math.inf)))}
    if not per_group:
        ssm["norm_group_size"] = hidden * expand
    return ModelConfig(d_model=hidden, n_layer=n_layer, vocab_size=vocab, ssm_cfg=ssm, rms_norm=True,
                       residual_in_fp32=d.get("residual_in_fp32", True), pad_vocab_size_multiple=1,
                       tie_embeddings=d.get("tie_word_embeddings", False), norm_epsilon=eps, source_format="hf-mamba2")


def _from_hf_mamba(d: dict) -> ModelConfig:
    hidden, n_layer, vocab = _need(d, "hidden_size", "num_hidden_layers", "vocab_size")
    inner = d.get("intermediate_size", 2 * hidden)
    rank = d.get("time_step_rank", "auto")
    ssm = {"layer": "Mamba1", "d_state": d.get("state_size", 16), "d_conv": d.get("conv_kernel", 4), "d_inner": inner,
           "dt_rank": math.ceil(hidden / 16) if rank == "auto" else rank, "bias": d.get("use_bias", False),
           "conv_bias": d.get("use_conv_bias", True)}
    return ModelConfig(d_model=hidden, n_layer=n_layer, vocab_size=vocab, ssm_cfg=ssm, rms_norm=True,
                       residual_in_fp32=d.get("residual_in_fp32", True), pad_vocab_size_multiple=1,
                       tie_embeddings=d.get("tie_word_embeddings", True), norm_epsilon=d.get("layer_norm_epsilon", 1e-5),
                       source_format="hf-mamba")


def config_to_dict(config: ModelConfig) -> dict:
    """The config.json of config.source_format."""
    ssm = config.ssm_cfg
    if config.source_format == "mamba_ssm":
        out = dataclasses.asdict(config)
        del out["source_format"], out["norm_epsilon"]
        return out
    if config.source_format == "hf-mamba2":
        inner = config.d_model * ssm.get("expand", 2)
        out = {"model_type": "mamba2", "architectures": ["Mamba2ForCausalLM"], "hidden_size": config.d_model,
               "num_hidden_layers": config.n_layer, "vocab_size": config.vocab_size,
               "num_heads": inner // ssm.get("headdim", 64), "head_dim": ssm.get("headdim", 64),
               "state_size": ssm.get("d_state", 128), "n_groups": ssm.get("ngroups", 1),
               "expand": ssm.get("expand", 2), "conv_kernel": ssm.get("d_conv", 4),
               "chunk_size": ssm.get("chunk_size", 256), "use_bias": ssm.get("bias", False),
               "use_conv_bias": ssm.get("conv_bias", True), "layer_norm_epsilon": config.norm_epsilon,
               "residual_in_fp32": config.residual_in_fp32, "tie_word_embeddings": config.tie_embeddings,
               "time_step_limit": list(ssm.get("dt_limit", (0.0, math.inf)))}
        return out
    return {"model_type": "mamba", "architectures": ["MambaForCausalLM"], "hidden_size": config.d_model,
            "num_hidden_layers": config.n_layer, "vocab_size": config.vocab_size, "state_size": ssm.get("d_state", 16),
            "intermediate_size": ssm.get("d_inner", 2 * config.d_model), "conv_kernel": ssm.get("d_conv", 4),
            "time_step_rank": ssm.get("dt_rank", math.ceil(config.d_model / 16)), "use_bias": ssm.get("bias", False),
            "use_conv_bias": ssm.get("conv_bias", True), "layer_norm_epsilon": config.norm_epsilon,
            "residual_in_fp32": config.residual_in_fp32, "tie_word_embeddings": config.tie_embeddings}
