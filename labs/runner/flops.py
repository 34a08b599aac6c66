"""Counting work: FLOPs through ``FlopCounterMode`` and op calls by kind."""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from .execution import op_kind

__all__ = ["OpKindCounter", "flop_counter"]

aten = torch.ops.aten


def _cpu_attention_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query, key, value)


def _cpu_attention_backward_flops(
    grad_out, query, key, value, *args, out_shape=None, **kwargs
) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)


# FlopCounterMode knows the CUDA attention kernels but not the CPU one; the same formulas
# apply, since the kernel does the same two batched matmuls each way.
_CUSTOM_FORMULAS = {
    aten._scaled_dot_product_flash_attention_for_cpu: _cpu_attention_flops,
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_attention_backward_flops,
}


def flop_counter() -> FlopCounterMode:
    return FlopCounterMode(display=False, custom_mapping=_CUSTOM_FORMULAS)


class OpKindCounter(TorchDispatchMode):
    """Calls of each op kind. Pointwise ops count as zero FLOPs, so recomputed pointwise
    work shows only here."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kind = op_kind(func)
        if kind is not None:
            self.calls[kind] += 1
        return func(*args, **(kwargs or {}))
