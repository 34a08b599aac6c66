"""The optimum over every segment policy a student can submit, nested included.

A list's peak is the largest, over its items, of (bytes its earlier items keep + the
item's own peak), and its recomputation is a sum. So the least recomputation of a list
of m blocks within a cap P is, over its first item, that item's least recomputation
within P plus the rest's within P minus what the first item keeps: a dynamic programme
over the blocks, with each checkpointed item's cost the same programme over its children
one level deeper (the Revolve/Griewank recursion, on this cost model). All blocks are the
same except the first and the last, so a table depends only on the list's length,
whether it holds the first block, the gradient arriving at the checkpoint it recomputes
(none at the top level, none either when it ends the model) and how deep its checkpoints
may still nest. Tables run over every cap, in units of the greatest common divisor of the
block's byte figures, so one programme gives the optimum at every budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .costmodel import BlockCosts, plan_cost
from .policies import MAX_NESTING, Segment

__all__ = ["MAX_DEPTH", "Frontiers", "Optimum"]

MAX_DEPTH = MAX_NESTING  # segments nest at most 3 deep


@dataclass(frozen=True)
class Optimum:
    peak_bytes: int  # the policy's peak (cost model), at most the budget
    recompute_flops: int
    segments: tuple[Segment, ...]


class Frontiers:
    """Least recomputation of every segment policy (nested up to ``MAX_DEPTH``) under one
    cost model, for every budget up to what no checkpointing needs."""

    def __init__(self, costs: BlockCosts) -> None:
        self.costs = costs
        figures = [
            costs.activation, costs.kept, costs.saved, costs.forward_transient,
            costs.checkpointed_transient, costs.tail_transient, *costs.backward_transient,
        ]  # fmt: skip
        self.unit = math.gcd(*figures)
        self.none_peak = plan_cost(costs, (Segment(0, costs.blocks, False),))[0]
        self.size = self.none_peak // self.unit + 2
        self._memo: dict[tuple, np.ndarray] = {}
        self._filled: dict[tuple, int] = {}  # spans whose first-item rows are in the memo

    def _units(self, value: int) -> int:
        return value // self.unit

    def optimum(self, budget_bytes: int) -> Optimum | None:
        """The policy with the least recomputation whose peak is within the budget."""
        if budget_bytes >= self.none_peak:
            return Optimum(self.none_peak, 0, (Segment(0, self.costs.blocks, False),))
        # The backward pass holds the loss and its seed gradient (two scalars, less than a
        # unit); the forward pass holds neither, so it may use the rest of the budget.
        cap = (budget_bytes - 2 * self.costs.scalar_bytes) // self.unit
        if cap < 0:
            return None
        cap = min(cap, self.size - 1)
        slack = budget_bytes // self.unit - cap
        table = self._suffix(self.costs.blocks, True, None, 0, slack)
        if not np.isfinite(table[cap]):
            return None
        segments = self._policy(self.costs.blocks, True, None, 0, slack, cap, 0)
        peak, flops = plan_cost(self.costs, segments)
        return Optimum(peak, flops, segments)

    def frontier(self) -> list[Optimum]:
        """The optimum at each budget where it changes, from the least that fits up to no
        checkpointing."""
        points: list[Optimum] = []
        scalar = self.costs.scalar_bytes
        table = self._suffix(self.costs.blocks, True, None, 0, 0)
        best = math.inf
        for cap in range(self.size):
            if table[cap] < best:
                best = table[cap]
                found = self.optimum(cap * self.unit + 2 * scalar)
                if found is not None and (
                    not points or found.recompute_flops < points[-1].recompute_flops
                ):
                    points.append(found)
        return points

    def _shift(self, table: np.ndarray, units: int) -> np.ndarray:
        """``table`` seen from ``units`` higher: what fits within cap - units."""
        shifted = np.full(self.size, np.inf)
        shifted[units:] = table[: self.size - units]
        return shifted

    def _rows(self, key: tuple) -> np.ndarray:
        rows = self._memo.get(key)
        if rows is None:
            rows = self._memo[key] = np.full((self.costs.blocks + 1, self.size), np.inf)
        return rows

    # The table of a list: least recomputation at each cap (index, in units).
    def _suffix(self, length, starts, arriving, depth, slack) -> np.ndarray:
        key = (length, starts, arriving, depth, slack)
        table = self._memo.get(key)
        if table is not None:
            return table
        family = (arriving, depth, slack)
        # Rests of every length, shortest first (no deep recursion), each also kept shifted
        # by a checkpointed first item's output, one row per length.
        rests = self._rows(("rests", *family))
        for shorter in range(length):
            if (shorter, False, *family) not in self._memo:
                self._suffix(shorter, False, *family)
        if length == 0:
            table = np.zeros(self.size)
        else:
            rest = self._suffix(length - 1, False, *family)
            table = self._first(0, length, starts, *family) + self._shift(
                rest, self._units(self.costs.kept)
            )
            if depth < MAX_DEPTH:
                # A checkpointed first item of every span at once: row s - 1 of `firsts`
                # is span s (the last one ends the list), row s - 1 of the rests' rows
                # reversed is the rest after it.
                firsts = self._rows(("firsts", starts, *family))
                filled = self._filled.get((starts, *family), 1)
                for span in range(filled, length):
                    firsts[span - 1] = self._first(span, span + 1, starts, *family)
                self._filled[(starts, *family)] = max(filled, length)
                tail = self._first(length, length, starts, *family)
                candidates = np.vstack([firsts[: length - 1], tail[None, :]])
                candidates += rests[length - 1 :: -1]
                table = np.minimum(table, candidates.min(axis=0))
        self._memo[key] = table
        if not starts:
            rests[length] = self._shift(table, self._units(self.costs.activation))
        return table

    def _first(self, span, length, starts, arriving, depth, slack) -> np.ndarray:
        """The first item's least recomputation at each cap: an unchecked block (span 0)
        or a checkpointed segment of ``span`` blocks. It depends on the list's length only
        through whether the item ends the list (or is its last block)."""
        key = ("first", span, span == length, length == 1, starts, arriving, depth, slack)
        table = self._memo.get(key)
        if table is None:
            table = self._memo[key] = self._first_table(
                span, length, starts, arriving, depth, slack
            )
        return table

    def _first_table(self, span, length, starts, arriving, depth, slack) -> np.ndarray:
        costs = self.costs
        table = np.full(self.size, np.inf)
        ends_model = arriving is None or arriving == 0
        if span == 0:
            block = 0 if starts else costs.blocks - 1 if ends_model and length == 1 else 1
            backward = self._units(costs.backward_local(block))
            if arriving is None:
                peak = max(self._units(costs.forward_transient) - slack, backward)
                table[max(peak, 0) :] = 0
                return table
            tail = length == 1  # recomputation stops at its last saved tensor
            forward = costs.tail_transient if tail else costs.forward_transient
            peak = max(self._units(arriving + forward), backward)
            table[peak:] = costs.tail_flops if tail else costs.flops
            return table
        segment_ends = ends_model and span == length
        children = self._suffix(
            span, starts, 0 if segment_ends else costs.activation, depth + 1, slack
        )
        forward = self._units(costs.checkpointed_transient + (costs.activation if span > 1 else 0))
        if arriving is None:
            start = max(forward - slack, 0)
            table[start:] = children[start:]
        elif span == length:
            table = children.copy()  # the last item of a recomputation is not run
        else:
            table[self._units(arriving) + forward :] = (
                children[self._units(arriving) + forward :] + span * costs.flops
            )
        return table

    def _policy(self, length, starts, arriving, depth, slack, cap, start) -> tuple[Segment, ...]:
        """The segments of a list that achieves ``_suffix(...)[cap]``, from block ``start``;
        unchecked blocks merged into runs."""
        segments: list[Segment] = []
        while length:
            target = self._suffix(length, starts, arriving, depth, slack)[cap]
            for span in range(0, length + 1):
                kept = self._units(self.costs.kept if span == 0 else self.costs.activation)
                rest = self._suffix(length - max(span, 1), False, arriving, depth, slack)
                first = self._first(span, length, starts, arriving, depth, slack)
                if cap >= kept and first[cap] + rest[cap - kept] == target:
                    break
            if span == 0:
                if segments and not segments[-1].checkpoint:
                    segments[-1] = Segment(segments[-1].start, start + 1, False)
                else:
                    segments.append(Segment(start, start + 1, False))
            else:
                ends_model = (arriving is None or arriving == 0) and span == length
                children = self._policy(
                    span, starts, 0 if ends_model else self.costs.activation, depth + 1,
                    slack, cap, start,
                )  # fmt: skip
                leaf = all(not child.checkpoint for child in children)
                segments.append(Segment(start, start + span, True, () if leaf else children))
            cap -= kept
            start += max(span, 1)
            length -= max(span, 1)
            starts = False
        return tuple(segments)
