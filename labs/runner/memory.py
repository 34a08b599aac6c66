"""An exact, device-independent meter of activation memory.

The meter watches every op through a ``TorchDispatchMode``. Each storage an op creates is
counted from the moment it appears until Python's weak reference to it reports it freed, so
the figure covers what autograd saves, what non-reentrant checkpointing recomputes in the
backward pass, what selective checkpointing keeps, and the working buffers of the backward
pass. Parameters and their gradients are not activations and are left out, as are outputs
that are views of an op's input (they allocate nothing).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

__all__ = ["ActivationMemoryMeter"]


def _storage_key(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage()._cdata


class ActivationMemoryMeter(TorchDispatchMode):
    """Peak bytes of storages created inside the mode and still alive, over the whole step.

    ``parameters`` are the module's parameters: their storages, and the storages that end up
    as their ``.grad``, are not counted. A gradient's storage is only known to be one once
    autograd accumulates it, so the meter keeps a timeline of allocations and frees and
    computes the peak afterwards, without the storages that became gradients.
    """

    def __init__(self, parameters: Iterable[torch.Tensor]) -> None:
        super().__init__()
        self._parameters = list(parameters)
        self._parameter_keys = {_storage_key(p) for p in self._parameters}
        # Storage key -> (allocation token, weak reference) while the storage lives.
        self._alive: dict[int, tuple[int, weakref.ref]] = {}
        # (token, +bytes) for an allocation, (token, -bytes) for a free, in order.
        self._events: list[tuple[int, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {
            _storage_key(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)
        }
        for tensor in tree_flatten(out)[0]:
            if not isinstance(tensor, torch.Tensor):
                continue
            storage = tensor.untyped_storage()
            key = storage._cdata
            if key in inputs or key in self._parameter_keys or key in self._alive:
                continue
            self._track(storage)
        return out

    def _track(self, storage: torch.UntypedStorage) -> None:
        key = storage._cdata
        token = len(self._events)
        nbytes = storage.nbytes()
        self._events.append((token, nbytes))

        def freed(ref: weakref.ref) -> None:
            self._events.append((token, -nbytes))
            if self._alive.get(key, (None, None))[1] is ref:
                del self._alive[key]

        self._alive[key] = (token, weakref.ref(storage, freed))

    def mark(self) -> int:
        """A point in the step's timeline, for :meth:`live_at` and :meth:`peak_between`."""
        return len(self._events)

    def _timeline(self) -> list[int]:
        """Bytes alive after each event, gradients of parameters left out."""
        gradient_keys = {_storage_key(p.grad) for p in self._parameters if p.grad is not None}
        excluded = {self._alive[key][0] for key in gradient_keys if key in self._alive}
        current, alive = 0, []
        for token, delta in self._events:
            if token not in excluded:
                current += delta
            alive.append(current)
        return alive

    def live_at(self, mark: int) -> int:
        timeline = self._timeline()
        return timeline[mark - 1] if mark else 0

    def peak_between(self, start: int, end: int) -> int:
        """The most bytes alive from ``start`` up to ``end`` (marks)."""
        timeline = self._timeline()
        return max([timeline[start - 1] if start else 0, *timeline[start:end]])

    @property
    def peak_bytes(self) -> int:
        """The most bytes alive at once, gradients of parameters left out."""
        return max(self._timeline(), default=0)
