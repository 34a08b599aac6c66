"""Fitting the per-block cost model (``labs.runner.costmodel``) on the meter.

Three blocks of the lab's model (first, middle, last) are run unchecked and with every
block checkpointed; marks in the meter's timeline at each block's forward and backward give
what a block keeps and its transients, and the cost counter gives its FLOPs.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import torch
from torch.utils.checkpoint import checkpoint

from .costmodel import BlockCosts
from .execution import run_blocks
from .flops import CostCounter
from .memory import ActivationMemoryMeter
from .models import build_blocks, make_batch
from .policies import parse_policy
from .spec import ModelSpec

__all__ = ["fit_block_costs"]

FIT_BLOCKS = 3


def _storages(tensors) -> set[int]:
    return {t.untyped_storage()._cdata for t in tensors}


def _note(marks: dict[int, int], index: int, meter: ActivationMemoryMeter, _grad) -> None:
    marks.setdefault(index, meter.mark())


def _step_with_marks(blocks, batch, seed: int, checkpointed: bool):
    """One step with marks around each block's forward and backward."""
    parameters = list(blocks.parameters())
    for parameter in parameters:
        parameter.grad = None
    torch.manual_seed(seed)
    meter = ActivationMemoryMeter(parameters)
    forward_marks: list[tuple[int, int]] = []
    backward_marks: dict[int, int] = {}
    outputs = []
    saved: list[torch.Tensor] = []

    def pack(tensor):
        saved.append(tensor)
        return tensor

    with meter:
        x = batch
        for index, block in enumerate(blocks):
            before = meter.mark()
            if checkpointed:
                x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=True)
            elif index == 1:
                with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                    x = block(x)
            else:
                x = block(x)
            forward_marks.append((before, meter.mark()))
            x.register_hook(functools.partial(_note, backward_marks, index, meter))
            outputs.append(x)
        middle_output_saved = bool(_storages(saved) & _storages([outputs[1]]))
        saved.clear()
        outputs.clear()
        loss = x.sum()
        del x
        loss.backward()
        end = meter.mark()
    return meter, forward_marks, backward_marks, end, middle_output_saved


def fit_block_costs(spec: ModelSpec, device: torch.device | str = "cpu") -> BlockCosts:
    """The cost model of ``spec``'s block, from a three-block model of the same shape."""
    device = torch.device(device)
    small = replace(spec, blocks=FIT_BLOCKS)
    blocks = build_blocks(small, device)
    batch = make_batch(small, device)
    element = batch.element_size()
    activation = batch.numel() * element

    meter, forward, backward, end, output_saved = _step_with_marks(
        blocks, batch, small.seed, checkpointed=False
    )
    start, stop = forward[1]
    kept = meter.live_at(stop) - meter.live_at(start)
    forward_transient = meter.peak_between(start, stop) - meter.live_at(start)
    # Block i's backward runs from the gradient at its output to the one at its input.
    spans = [(backward[0], end), (backward[1], backward[0]), (backward[2], backward[1])]
    backward_transient = tuple(meter.peak_between(a, b) - meter.live_at(a) for a, b in spans)

    meter, forward, backward, _end, _saved = _step_with_marks(
        blocks, batch, small.seed, checkpointed=True
    )
    start, stop = forward[1]
    checkpointed_transient = meter.peak_between(start, stop) - meter.live_at(start)
    # The middle block checkpointed alone: its recomputation (which stops at its last saved
    # tensor) and its backward, above what was alive when the gradient at its output came.
    start, stop = backward[1], backward[0]
    tail_transient = meter.peak_between(start, stop) - meter.live_at(start)

    torch.manual_seed(small.seed)
    with CostCounter() as counter:
        x = batch
        for block in blocks:
            x = block(x)
    flops = counter.total // FIT_BLOCKS
    # Each block checkpointed alone is the tail of its checkpoint: what it recomputes is
    # the tail cost.
    steps = {}
    for kind in ("none", "every_block"):
        for parameter in blocks.parameters():
            parameter.grad = None
        torch.manual_seed(small.seed)
        with CostCounter() as counter:
            run_blocks(blocks, parse_policy({"kind": kind}, FIT_BLOCKS), batch).sum().backward()
        steps[kind] = counter.total
    tail_flops = (steps["every_block"] - steps["none"]) // FIT_BLOCKS
    for parameter in blocks.parameters():
        parameter.grad = None
    return BlockCosts(
        blocks=spec.blocks,
        activation=activation,
        kept=kept,
        saved=kept if output_saved else kept - activation,
        forward_transient=forward_transient,
        checkpointed_transient=checkpointed_transient,
        tail_transient=tail_transient,
        backward_transient=backward_transient,
        flops=flops,
        tail_flops=tail_flops,
        scalar_bytes=element,
    )
