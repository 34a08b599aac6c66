"""Counting work: every op's cost in FLOPs, and op calls by kind.

The cost unit is a FLOP for matrix multiplications (PyTorch's own formulas:
``torch.utils.flop_counter``) and one FLOP per element written for every other op that
writes a tensor (LayerNorm, softmax, activations, additions, dropout's mask and scaling,
copies). Views and bare allocations write nothing and cost nothing. So no recomputed op is
free: a policy that recomputes only LayerNorms or pointwise ops recomputes something, and
the grade sees it.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from .execution import op_kind

__all__ = ["CostCounter", "OpKindCounter", "op_cost"]

aten = torch.ops.aten
# Allocations that write no element.
_WRITES_NOTHING = {aten.empty, aten.empty_like, aten.empty_strided, aten.new_empty}


def op_cost(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object) -> int:
    """FLOPs of one op call: PyTorch's formula for matmuls, else the elements it writes."""
    formula = flop_registry.get(func.overloadpacket)
    if formula is not None:
        return int(formula(*args, **kwargs, out_val=out))
    if func.is_view or func.overloadpacket in _WRITES_NOTHING:
        return 0
    return sum(t.numel() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))


class CostCounter(TorchDispatchMode):
    """The total cost (``op_cost``) of every op run inside the mode."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.total += op_cost(func, args, kwargs, out)
        return out


class OpKindCounter(TorchDispatchMode):
    """Calls of each op kind (matmul, attention, norm, pointwise)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kind = op_kind(func)
        if kind is not None:
            self.calls[kind] += 1
        return func(*args, **(kwargs or {}))
