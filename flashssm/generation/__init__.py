"""Generation: packed prefill into a recurrent cache, then CUDA-graph decoding."""

from flashssm.generation.generate import GenerationStats, StepGraphs, generate, sample

__all__ = ["generate", "sample", "GenerationStats", "StepGraphs"]
