"""Mamba-1's selective scan (`selective_scan`) and its one-token decoding step (`selective_scan_step`)."""

from __future__ import annotations

from flashssm import _runtime
from flashssm.ops.checks import check_selective_scan, check_selective_scan_step
from flashssm.ops.selective_scan import reference


def selective_scan(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False):
    """Mamba-1's selective scan (shared/SEMANTICS.md), with mamba_ssm's argument names.

    u, delta, z: (batch, dim, seqlen); u and z fp32/fp16/bf16, delta any float
    A: (dim, dstate), real; B, C: (batch, dstate, seqlen) shared by all channels, or
        (batch, ngroups, dstate, seqlen) with channel d reading group d // (dim // ngroups)
    D, delta_bias: (dim,)
    Returns y (batch, dim, seqlen) in u's dtype, or (y, last_state (batch, dim, dstate) fp32).
    """
    check_selective_scan(u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias, delta_softplus=delta_softplus,
                         return_last_state=return_last_state)
    if u.is_cuda:
        _runtime.warn_reference_fallback("selective_scan", "no Triton kernel yet")
    return reference.selective_scan_checked(u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                            delta_softplus=delta_softplus, return_last_state=return_last_state)


def selective_scan_step(state, u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                        state_batch_indices=None, out=None):
    """One decoding step of the selective scan; `state` is updated in place.

    state: (cache_batch, dim, dstate), fp32/fp16/bf16; u, delta, z: (batch, dim); A: (dim, dstate);
    B, C: (batch, dstate) or (batch, ngroups, dstate); D, delta_bias: (dim,)
    state_batch_indices: (batch,) int32/int64 cache row of each batch row; negative marks a padding
        row (state untouched, y zero). Without it, batch == cache_batch. Its values are checked (a
        device synchronisation) except while a CUDA graph is captured.
    out: optional (batch, dim) tensor of u's dtype to write y into.
    Returns y: (batch, dim), dtype of u.

    One Triton launch, CUDA-graph safe (no host synchronisation, no allocation beyond y); the
    reference runs without a GPU or interpreter, and when gradients are needed.
    """
    check_selective_scan_step(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                              delta_softplus=delta_softplus, state_batch_indices=state_batch_indices, out=out)
    from flashssm.ops.ssd import step_blocker

    blocker = step_blocker(u, state.shape[2], state, u, delta, A, B, C, D, z, delta_bias)
    if blocker is None:
        from flashssm.ops.selective_scan.step import selective_scan_step_kernel

        with _runtime.on_device(u.device):
            return selective_scan_step_kernel(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                              delta_softplus=delta_softplus,
                                              state_batch_indices=state_batch_indices, out=out)
    if u.is_cuda:
        _runtime.warn_reference_fallback("selective_scan_step", blocker)
    return reference.selective_scan_step_checked(state, u, delta, A, B, C, D=D, z=z, delta_bias=delta_bias,
                                                 delta_softplus=delta_softplus,
                                                 state_batch_indices=state_batch_indices, out=out)


__all__ = ["selective_scan", "selective_scan_step"]
