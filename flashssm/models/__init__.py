"""Mamba-2, Mamba-1 and hybrid language models: configs and presets, the causal LM, checkpoints."""

from flashssm.models.config import PRESETS, ModelConfig, config_from_dict, preset
from flashssm.models.lm import MambaLM

__all__ = ["MambaLM", "ModelConfig", "PRESETS", "preset", "config_from_dict"]
