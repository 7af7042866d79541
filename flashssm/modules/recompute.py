"""Tensors a backward reads made again when it reads them, rather than kept from the forward.

A mixer's forward marks an intermediate (`Recompute.add`: the tensor and how to make it) and runs the ops that would
save it inside `Recompute.saving()`: what they save of that tensor (itself or a view) is packed as a recipe, and the
tensor dies with the forward's other locals. When the backward unpacks the first such save, the recipe makes the
tensor once (without gradients) and every save of it is rebuilt as the same view of the new one. The maker must give
the same values in the same layout (the kernels here are deterministic forwards). Saves of any other tensor pass
through untouched.

A Recompute made off (`Recompute(False)`), or while gradients are off or torch.compile traces (its partitioner decides
what its graph keeps), marks nothing: `saving()` is then no context at all.

Under a caller's own saved-tensor hooks (`torch.autograd.graph.save_on_cpu`, `torch.utils.checkpoint`) nothing is
remade: those hooks, which the inner ones would replace inside the mixer, keep deciding every save (a recipe would
also keep the maker's inputs on the device, against an offload's intent).
"""

from __future__ import annotations

import contextlib
import os

import torch

# The mixers' `recompute` default (FLASHSSM_RECOMPUTE=1 turns it on; `MambaLM.set_recompute`).
DEFAULT = os.environ.get("FLASHSSM_RECOMPUTE", "0") == "1"


class _Remade:
    """One marked tensor: made again on the first unpack, kept while a packed save holds this."""

    __slots__ = ("make", "value")

    def __init__(self, make):
        self.make, self.value = make, None

    def get(self) -> torch.Tensor:
        if self.value is None:
            with torch.no_grad():
                self.value = self.make()
        return self.value


class _Packed:
    __slots__ = ("remade", "size", "stride", "offset")

    def __init__(self, remade, t: torch.Tensor):
        self.remade, self.size, self.stride, self.offset = remade, t.shape, t.stride(), t.storage_offset()


def _unpack(saved):
    if isinstance(saved, _Packed):
        return saved.remade.get().as_strided(saved.size, saved.stride, saved.offset)
    return saved


class Recompute:
    """The tensors one forward marks for remaking (see the module's docstring)."""

    def __init__(self, on: bool = True):
        self.on = on and torch.is_grad_enabled() and not torch.compiler.is_compiling()
        self._marked: list[tuple[int, torch.device, torch.dtype, _Remade]] = []

    def add(self, tensor: torch.Tensor, make) -> None:
        """Saves of `tensor` (or views of its storage) made inside `saving()` are remade by make() in the backward;
        make() returns a tensor of tensor's shape, strides, storage offset 0 and dtype, with its values. Nothing where
        this Recompute is off."""
        if not self.on:
            return
        if tensor.storage_offset() != 0:
            raise ValueError("a tensor to remake must begin its storage (its views are rebuilt from the remade one)")
        if tensor.untyped_storage().data_ptr() == 0:  # (an empty tensor: nothing to spare, and 0 would match others)
            return
        self._marked.append((tensor.untyped_storage().data_ptr(), tensor.device, tensor.dtype, _Remade(make)))

    def _pack(self, t: torch.Tensor):
        if isinstance(t, torch.Tensor) and not isinstance(t, torch.nn.Parameter):
            ptr = t.untyped_storage().data_ptr()
            for mark_ptr, device, dtype, remade in self._marked:
                if ptr == mark_ptr and t.device == device and t.dtype == dtype:
                    return _Packed(remade, t)
        return t

    def saving(self):
        """The context in which the ops whose saves of the marked tensors are remade run (no change under a caller's
        saved-tensor hooks)."""
        if not self._marked or _outer_hooks():
            return contextlib.nullcontext()
        return torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack)


def _outer_hooks() -> bool:
    """Whether saved-tensor hooks are already in force here (a private query of torch's; False where it is missing)."""
    top = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
    return top is not None and top(False) is not None


__all__ = ["Recompute"]
