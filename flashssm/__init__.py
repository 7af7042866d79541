"""flashssm: fused Triton kernels for state-space models (Mamba-2's SSD scan, Mamba-1's selective scan).

The public functions validate their inputs, then run a Triton kernel where one exists for the
device (CUDA, or the CPU under TRITON_INTERPRET=1) and the plain-PyTorch reference otherwise.
"""

from flashssm.ops.conv1d import causal_conv1d, causal_conv1d_update
from flashssm.ops.norm import rmsnorm_gated
from flashssm.ops.selective_scan import selective_scan, selective_scan_step
from flashssm.ops.ssd import ssd_scan, ssd_step

__version__ = "0.1.0"

__all__ = ["ssd_scan", "ssd_step", "selective_scan", "selective_scan_step", "causal_conv1d", "causal_conv1d_update",
           "rmsnorm_gated", "__version__"]
