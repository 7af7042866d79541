"""Loading and saving checkpoints from local directories, in mamba_ssm's and transformers' formats.

Nothing here touches the network, and nothing unpickles code: safetensors files are read as
tensors, and `.bin` files through `torch.load(weights_only=True)`, which refuses anything but
tensors and plain containers. Every key is accounted for: a missing or unexpected key, or a shape
that does not match the config, is an error naming it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from flashssm.models.config import config_from_dict, config_to_dict

_EMBED_HF, _EMBED = "backbone.embeddings.weight", "backbone.embedding.weight"


def _read_json(path: Path) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found: a checkpoint directory holds config.json and its weights") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not valid JSON (truncated or corrupted?): {e}") from None


def _read_file(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except (SafetensorError, OSError, ValueError) as e:
            raise ValueError(f"could not read {path} (truncated or corrupted?): {e}") from None
    import pickle

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise ValueError(f"{path} holds more than tensors; flashssm loads .bin files with weights_only=True and "
                         f"never runs pickled code ({str(e).splitlines()[0]})") from None
    except (RuntimeError, EOFError, OSError) as e:
        raise ValueError(f"could not read {path} (truncated or corrupted?): {e}") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise ValueError(f"{path} does not hold a state dict (names to tensors)")
    return state


def read_weights(directory: Path) -> dict[str, torch.Tensor]:
    """The state dict of a checkpoint directory: model.safetensors, pytorch_model.bin, or the shards
    an index file (*.index.json) lists."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        index = directory / f"{name}.index.json"
        if index.exists():
            weight_map = _read_json(index).get("weight_map")
            if not isinstance(weight_map, dict):
                raise ValueError(f"{index} has no weight_map")
            state = {}
            for shard in sorted(set(weight_map.values())):
                state.update(_read_file(directory / shard))
            return state
        if (directory / name).exists():
            return _read_file(directory / name)
    raise FileNotFoundError(f"{directory} holds no weights: expected model.safetensors or pytorch_model.bin "
                            f"(or a sharded *.index.json)")


def _check_keys(state: dict, expected: dict, tied: bool) -> None:
    optional = {"lm_head.weight"} if tied else set()
    missing = sorted(set(expected) - set(state) - optional)
    unexpected = sorted(set(state) - set(expected))
    if missing:
        raise ValueError(f"checkpoint is missing {len(missing)} key(s) the config needs: {', '.join(missing[:5])}"
                         + (" ..." if len(missing) > 5 else ""))
    if unexpected:
        raise ValueError(f"checkpoint has {len(unexpected)} key(s) the config does not: {', '.join(unexpected[:5])}"
                         + (" ..." if len(unexpected) > 5 else "") + " (wrong architecture or config?)")
    for key, t in state.items():
        if tuple(t.shape) != tuple(expected[key].shape):
            raise ValueError(f"checkpoint key {key} has shape {tuple(t.shape)}, the config gives "
                             f"{tuple(expected[key].shape)}")


def load_pretrained(cls, path, device=None, dtype=None, hf_norm_per_group: bool = False):
    """A model from a local checkpoint directory in mamba_ssm's format (config.json with d_model,
    n_layer, ...) or transformers' Mamba2 / Mamba format. device, dtype: where and in what the model
    is built (default: CPU, fp32)."""
    directory = Path(os.fspath(path))
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a directory; from_pretrained reads a local checkpoint "
                                f"directory (flashssm never downloads)")
    config = config_from_dict(_read_json(directory / "config.json"), hf_norm_per_group=hf_norm_per_group)
    state = read_weights(directory)
    if config.source_format != "mamba_ssm" and _EMBED_HF in state:
        state[_EMBED] = state.pop(_EMBED_HF)
    model = cls(config, device=device, dtype=dtype, init_weights=False)
    expected = model.state_dict()
    _check_keys(state, expected, config.tie_embeddings)
    if config.tie_embeddings:
        state.pop("lm_head.weight", None)
        state["lm_head.weight"] = state[_EMBED]
    model.load_state_dict(state, strict=True)
    return model


def save_pretrained(model, path, format: str | None = None) -> None:
    """config.json and model.safetensors, in `format` ("mamba_ssm", "hf-mamba2", "hf-mamba"; default:
    the format the model was loaded from). A tied LM head is stored once, as the embedding."""
    from safetensors.torch import save_file

    config = model.config if format is None else model.config.replace(source_format=format)
    if config.source_format == "hf-mamba2" and config.layer != "Mamba2" or \
            config.source_format == "hf-mamba" and config.layer != "Mamba1" or \
            config.source_format != "mamba_ssm" and (config.attn_layer_idx or config.d_intermediate):
        raise ValueError(f"a {config.layer} model with these layers cannot be saved in format {config.source_format!r}")
    if config.source_format != "mamba_ssm" and config.padded_vocab_size != config.vocab_size:
        config = config.replace(vocab_size=config.padded_vocab_size, pad_vocab_size_multiple=1)
    directory = Path(os.fspath(path))
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if config.tie_embeddings:
        del state["lm_head.weight"]
    if config.source_format != "mamba_ssm":
        state[_EMBED_HF] = state.pop(_EMBED)
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    with open(directory / "config.json", "w") as f:
        json.dump(config_to_dict(config), f, indent=2)
