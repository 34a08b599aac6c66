"""The per-block cost model: what any segment policy, nested or not, keeps, peaks at and
recomputes, from a few figures of one block fitted on the meter (``labs.runner.fit``).

All blocks of a lab model are identical, so a block is described by:

* ``activation``: bytes of its output, the next block's input (A);
* ``kept``: bytes an unchecked block adds to the step until its backward (what autograd
  saves beyond its input, and its output); ``saved``: the part still alive during its own
  backward (its output, when no op of the block saves it, is gone by then);
* ``forward_transient`` / ``checkpointed_transient``: the most bytes above what was alive
  before it while the block runs unchecked / inside a checkpoint;
* ``tail_transient``: the most bytes above what is alive when the gradient reaches a block
  checkpointed alone, over its recomputation (which stops early) and its backward;
* ``backward_transient``: the most bytes above what is alive when its backward starts (its
  saved tensors, the gradient arriving at its output), for the first block (which computes
  no gradient for the batch), a middle block and the last (whose arriving gradient is a view
  of the loss's);
* ``flops``: the cost of its forward pass; ``tail_flops``: the cost when recomputation stops
  early at the block's last saved tensor (non-reentrant checkpointing stops there).

Torch's rules for non-reentrant checkpoints, nested or not, give the rest: a checkpointed
segment keeps only its output for the next one (its input is the previous one's); when the
backward pass reaches it, it recomputes its children (unchecked ones saving, checkpointed
ones keeping only their outputs) up to the last saved tensor it needs (a checkpointed last
child is not run at all), then runs their backward in reverse, each checkpointed child
recomputing in turn. A block inside d checkpointed segments is recomputed up to d times.

``plan_cost`` evaluates a policy; the tests check it against the meter on random nested
policies of every model, exactly. ``labs.runner.optimum`` finds the best policy under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .policies import Segment

__all__ = ["BlockCosts", "Checkpointed", "items_of", "plan_cost"]


@dataclass(frozen=True)
class BlockCosts:
    blocks: int
    activation: int
    kept: int
    saved: int
    forward_transient: int
    checkpointed_transient: int
    tail_transient: int
    backward_transient: tuple[int, int, int]  # first, middle, last block
    flops: int
    tail_flops: int
    scalar_bytes: int  # the loss and the gradient that seeds the backward pass, each

    def backward_local(self, block: int) -> int:
        """Bytes above what came before an unchecked block, at its backward's peak."""
        first, middle, last = self.backward_transient
        arriving = 0 if block == self.blocks - 1 else self.activation
        transient = first if block == 0 else last if block == self.blocks - 1 else middle
        return self.saved + arriving + transient

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["backward_transient"] = list(self.backward_transient)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlockCosts:
        return cls(**{**data, "backward_transient": tuple(data["backward_transient"])})


@dataclass(frozen=True)
class Checkpointed:
    """A checkpointed segment as the cost model sees it: its blocks and its children
    (unchecked blocks, as ints, and checkpointed segments)."""

    start: int
    end: int
    children: tuple[int | Checkpointed, ...]


Item = int | Checkpointed


def items_of(segments: Sequence[Segment]) -> tuple[Item, ...]:
    """A plan's segments as items: unchecked blocks (an unchecked segment's children run as
    if they were its siblings) and checkpointed segments."""
    items: list[Item] = []
    for segment in segments:
        if segment.checkpoint:
            children = (
                items_of(segment.children)
                if segment.children
                else tuple(range(segment.start, segment.end))
            )
            items.append(Checkpointed(segment.start, segment.end, children))
        elif segment.children:
            items.extend(items_of(segment.children))
        else:
            items.extend(range(segment.start, segment.end))
    return tuple(items)


@dataclass(frozen=True)
class ListCost:
    forward: int  # peak while the list runs forward, above what was alive before it
    backward: int  # peak during its backward, above what was alive before its forward
    recompute: int
    kept: int  # bytes it leaves alive after its forward


def checkpointed_local(costs: BlockCosts, end: int, children: ListCost) -> int:
    """A checkpointed segment's backward: its children recomputed while the gradient at its
    output waits, then their backward."""
    arriving = 0 if end == costs.blocks else costs.activation
    return max(arriving + children.forward, children.backward)


def list_cost(costs: BlockCosts, items: Sequence[Item], recompute: bool) -> ListCost:
    """A run of items, forward then backward; ``recompute``: run as a checkpoint's
    recomputation (blocks cost FLOPs, and it stops at the last item's last saved tensor)."""
    held = forward = backward = flops = 0
    for index, item in enumerate(items):
        tail = recompute and index == len(items) - 1
        if isinstance(item, int):
            transient = costs.tail_transient if tail else costs.forward_transient
            forward = max(forward, held + transient)
            backward = max(backward, held + costs.backward_local(item))
            if recompute:
                flops += costs.tail_flops if tail else costs.flops
            held += costs.kept
            continue
        if not tail:
            length = item.end - item.start
            forward = max(
                forward,
                held + costs.checkpointed_transient + (costs.activation if length > 1 else 0),
            )
            if recompute:
                flops += length * costs.flops
        inner = list_cost(costs, item.children, True)
        backward = max(backward, held + checkpointed_local(costs, item.end, inner))
        flops += inner.recompute
        held += costs.activation
    return ListCost(forward, backward, flops, held)


def step_peak(costs: BlockCosts, top: ListCost) -> int:
    """The step's peak from its top-level list: the forward pass, the loss while the output
    still exists, then the backward pass with the loss and its seed gradient."""
    return max(
        top.forward,
        top.kept + costs.scalar_bytes,
        top.backward + 2 * costs.scalar_bytes,
    )


def plan_cost(costs: BlockCosts, segments: Sequence[Segment]) -> tuple[int, int]:
    """(peak activation bytes, recomputed FLOPs) of a segment policy."""
    top = list_cost(costs, items_of(segments), False)
    return step_peak(costs, top), top.recompute
