"""A split whose pieces' gradients land in one buffer: no concatenation in its backward.

Autograd's backward of `torch.split` concatenates the pieces' gradients into a new tensor (a Mamba-2 mixer splits
in_proj's output into z, xBC and dt: in a 2.7B training step those copies are ~5 ms, benchmarks/notes/profile.md).
`split(t, sizes)` gives the same views, and registers t's storage as a sink: the backward of a kernel whose input is
a whole piece (in any view of it: the conv's channels-first transpose, the norm's rows) asks `take(input)` for its
gradient's buffer and writes the gradient there, the same view of one slab shaped like t. The split's backward then
returns the slab itself when every gradient it receives is that piece of it, and copies in (or zeroes) only the
pieces that are not (a piece nobody took, one whose gradients autograd summed, a consumer without a sink).

Safe by construction: a piece is handed out once (a second consumer of it allocates its own gradient, which autograd
then sums: the split copies the sum in); a request must cover exactly one whole piece; a sink lives while its source
tensor does (the pieces, saved for the backward, keep it alive) and ends at the split's backward, so a later tensor at
the same address never meets a stale sink; a tensor split a second time while its sink lives hands out nothing more
(its pieces' consumers could not be told apart); nothing of this runs while torch.compile traces.
"""

from __future__ import annotations

import weakref

import torch

from flashssm import _runtime

_SINKS: dict[int, "_Sink"] = {}  # source storage's data_ptr -> its sink


class _Sink:
    def __init__(self, t: torch.Tensor, sizes: tuple[int, ...]):
        self.key = t.untyped_storage().data_ptr()
        self.source = weakref.ref(t, lambda _, key=self.key: _drop(key, self))
        self.shape, self.width, self.dtype, self.device = t.shape, t.shape[-1], t.dtype, t.device
        self.rows = t.numel() // max(1, self.width)
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        self.pieces = list(zip(starts, sizes))
        self.taken: set[int] = set()
        self.slab: torch.Tensor | None = None
        self.shared = False  # (t split again while this sink lives: no more handouts, see `split`)

    def piece_of(self, x: torch.Tensor) -> int | None:
        """The piece x is a whole view of, or None: x starts at a piece's first column of the first row, its dims
        strided under the width tile the piece's columns densely (strides 1, n1, n1 n2, ...) and the others its rows
        (strides width, width m1, ...): every element of the piece once, none outside it."""
        if x.dtype != self.dtype or x.device != self.device or x.storage_offset() >= self.width:
            return None
        dims = [(s, n) for n, s in zip(x.shape, x.stride()) if n != 1]
        inner = sorted(d for d in dims if d[0] < self.width)
        outer = sorted(d for d in dims if d[0] >= self.width)
        cols, rows = 1, self.width
        for stride, n in inner:
            if stride != cols:
                return None
            cols *= n
        for stride, n in outer:
            if stride != rows:
                return None
            rows *= n
        for i, (start, size) in enumerate(self.pieces):
            if start == x.storage_offset() and size == cols and rows == self.width * self.rows and size > 0:
                return i
        return None


def _drop(key: int, sink: _Sink) -> None:
    if _SINKS.get(key) is sink:
        del _SINKS[key]


def take(x: torch.Tensor) -> torch.Tensor | None:
    """A buffer for the gradient of x (a consumer's saved input) in x's geometry: the same view of its split's slab,
    where x is a whole piece of a live split not yet handed out; else None (allocate as usual). The caller must write
    every element of it."""
    if not _SINKS or torch.compiler.is_compiling():
        return None
    sink = _SINKS.get(x.untyped_storage().data_ptr())
    if sink is None or sink.source() is None or sink.shared:
        return None
    i = sink.piece_of(x)
    if i is None or i in sink.taken:
        return None
    sink.taken.add(i)
    if sink.slab is None:
        sink.slab = _runtime.empty(sink.shape, sink.dtype, sink.device)
    return sink.slab.as_strided(x.shape, x.stride(), x.storage_offset())


class _SplitFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t, sizes):
        pieces = t.split(sizes, dim=-1)  # (first: sizes that do not sum to the width raise before a sink exists)
        sink = _Sink(t, sizes)
        _SINKS[sink.key] = sink
        ctx.sink = sink
        ctx.set_materialize_grads(False)  # (a piece no one used: None, zeroed in the slab, not a zeros tensor)
        return pieces

    @staticmethod
    def backward(ctx, *grads):
        sink = ctx.sink
        _drop(sink.key, sink)
        slab, sink.slab, sink.taken = sink.slab, None, set()
        if slab is None:  # (no consumer wrote into it: the usual concatenation)
            return torch.cat([g if g is not None else torch.zeros((*sink.shape[:-1], size), dtype=sink.dtype,
                                                                   device=sink.device)
                              for g, (_, size) in zip(grads, sink.pieces)], dim=-1), None
        for g, (start, size) in zip(grads, sink.pieces):
            piece = slab.narrow(-1, start, size)
            if g is None:
                piece.zero_()
            elif not (g.data_ptr() == piece.data_ptr() and g.shape == piece.shape and g.stride() == piece.stride()):
                piece.copy_(g)
        return slab, None


def split(t: torch.Tensor, sizes) -> tuple[torch.Tensor, ...]:
    """`t.split(sizes, dim=-1)`, with the pieces' gradients gathered in one buffer (above) where t is a contiguous
    tensor of its own storage that autograd records; else the plain split."""
    sizes = tuple(int(s) for s in sizes)
    if (not torch.is_grad_enabled() or not t.requires_grad or torch.compiler.is_compiling() or not t.is_contiguous()
            or t.storage_offset() != 0 or t.untyped_storage().nbytes() != t.numel() * t.element_size()):
        return t.split(sizes, dim=-1)
    live = _SINKS.get(t.untyped_storage().data_ptr())
    if live is not None and live.source() is not None:
        # t split twice: a consumer could not tell whose piece it holds, and a slab region handed to the other split's
        # consumer could be overwritten by this split's copy. Both split plainly from here on.
        live.shared = True
        return t.split(sizes, dim=-1)
    return _SplitFn.apply(t, sizes)


__all__ = ["split", "take"]
