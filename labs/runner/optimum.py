"""The cost model of single-level segment policies on a chain, and its optimum.

In units of one activation (batch × width elements), for segments tiling the chain in order,
with the input batch not counted (it exists before the step):

* every segment's output is kept for the backward pass (as the next segment's input, or
  saved by the next block), and a segment that is not checkpointed keeps all its blocks'
  outputs, so before segment j the step holds ``stored_j`` activations: one per earlier
  checkpointed segment and one per earlier unchecked block;
* the backward pass of a segment of k blocks holds ``stored_j + k`` activations (kept or
  recomputed) plus two working buffers (the gradient arriving at its output and the one it
  produces), or one for the last segment, whose arriving gradient is the loss's scalar;
* the step's peak is the largest of these; recomputation is one forward of each
  checkpointed block.

The runner's tests check this model against the meter for random policies, so the optimum
below is the optimum of what the meter measures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .policies import Segment

__all__ = ["ChainOptimum", "chain_cost", "chain_optimum", "chain_frontier", "least_budget"]


def _peak_of_segment(stored: int, length: int, is_last: bool) -> int:
    return stored + length + (1 if is_last else 2)


def chain_cost(segments: Sequence[Segment]) -> tuple[int, int]:
    """(peak activations, recomputed blocks) of a single-level segment policy."""
    peak = stored = recomputed = 0
    for index, segment in enumerate(segments):
        is_last = index == len(segments) - 1
        if segment.checkpoint:
            peak = max(peak, _peak_of_segment(stored, segment.length, is_last))
            recomputed += segment.length
            stored += 1
        else:
            for block in range(segment.length):
                last_block = is_last and block == segment.length - 1
                peak = max(peak, _peak_of_segment(stored, 1, last_block))
                stored += 1
    return peak, recomputed


@dataclass(frozen=True)
class ChainOptimum:
    budget_units: int
    recomputed_blocks: int
    segments: tuple[Segment, ...]


def chain_optimum(blocks: int, budget_units: int) -> ChainOptimum | None:
    """The single-level segment policy with the least recomputation whose peak fits in
    ``budget_units`` activations, or None if none fits. Dynamic programme over (next block,
    segments so far): in this model the activations kept before a segment equal the
    number of segments before it, once unchecked runs are split into single blocks (which
    changes neither memory nor recomputation)."""
    if budget_units < 3:
        return None
    # best[b, j]: least recomputation for blocks b.. with j segments before block b; a
    # segment can only start with j <= budget - 3 (its own block and a working buffer).
    width = min(blocks, budget_units) + 2
    best = np.full((blocks + 1, width), np.inf)
    choice = np.zeros((blocks + 1, width), dtype=np.int64)
    best[blocks, :] = 0
    for start in range(blocks - 1, -1, -1):
        candidates = np.full(width, np.inf)
        chosen = np.zeros(width, dtype=np.int64)
        # One unchecked block (recorded as length -1), then checkpointed segments of 2 or
        # more (a checkpointed single block costs a recompute and saves nothing).
        for length in (-1, *range(2, blocks - start + 1)):
            size = 1 if length == -1 else length
            end = start + size
            most_before = budget_units - _peak_of_segment(0, size, end == blocks)
            if most_before < 0:
                break
            j = slice(0, min(most_before, start, width - 2) + 1)
            cost = best[end, j.start + 1 : j.stop + 1] + (0 if length == -1 else length)
            better = cost < candidates[j]
            candidates[j] = np.where(better, cost, candidates[j])
            chosen[j] = np.where(better, length, chosen[j])
        best[start], choice[start] = candidates, chosen
    if not np.isfinite(best[0, 0]):
        return None
    segments = []
    start = j = 0
    while start < blocks:
        length = int(choice[start, j])
        if length == -1:
            segments.append(Segment(start, start + 1, False))
            start += 1
        else:
            segments.append(Segment(start, start + length, True))
            start += length
        j += 1
    return ChainOptimum(budget_units, int(best[0, 0]), _merge_unchecked(segments))


def least_budget(blocks: int) -> int:
    """The least peak (in activations) any single-level segment policy reaches."""
    low, high = 3, blocks + 1  # no checkpointing always fits in blocks + 1
    while low < high:
        middle = (low + high) // 2
        if chain_optimum(blocks, middle) is None:
            low = middle + 1
        else:
            high = middle
    return low


def _merge_unchecked(segments: list[Segment]) -> tuple[Segment, ...]:
    merged: list[Segment] = []
    for segment in segments:
        if merged and not segment.checkpoint and not merged[-1].checkpoint:
            merged[-1] = Segment(merged[-1].start, segment.end, False)
        else:
            merged.append(segment)
    return tuple(merged)


def chain_frontier(blocks: int, points: int = 16) -> list[ChainOptimum]:
    """Optimal trade-offs from the least memory any segment policy needs up to no
    checkpointing at all (``blocks + 1``), at up to ``points`` budgets."""
    least, most = least_budget(blocks), blocks + 1
    step = max(1, math.ceil((most - least) / max(points - 1, 1)))
    budgets = sorted({*range(least, most, step), most})
    return [optimum for units in budgets if (optimum := chain_optimum(blocks, units))]
