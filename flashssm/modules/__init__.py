"""nn.Modules over flashssm's ops: the Mamba-2 and Mamba-1 mixers, attention for hybrids, the
residual block, and the recurrent cache they decode from."""

from flashssm.modules.attention import Attention
from flashssm.modules.block import Block, GatedMLP
from flashssm.modules.cache import AttentionState, InferenceCache, MambaState
from flashssm.modules.mamba1 import MambaMixer
from flashssm.modules.mamba2 import Mamba2Mixer
from flashssm.modules.norm import RMSNorm

__all__ = ["Attention", "Block", "GatedMLP", "InferenceCache", "MambaState", "AttentionState", "MambaMixer",
           "Mamba2Mixer", "RMSNorm"]
