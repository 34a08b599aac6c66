"""A lab's reference: the least recomputation of any policy a student can submit within the
budget, the policy that achieves it, and the optimal frontier for the chart.

Computed once per lab (``labs.services.ensure_reference`` stores it with the lab) from:

* segment policies, nested or not, of any shape: the dynamic programme of
  ``labs.runner.optimum`` over the cost model fitted on the meter (``labs.runner.fit``);
  the optimum it finds is then measured with the meter, and a lab whose measurement
  disagrees with the model is refused rather than graded against a wrong optimum;
* selective policies: each of the 16 subsets of op kinds, measured.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import torch

from .costmodel import BlockCosts, plan_cost
from .fit import fit_block_costs
from .measure import measure_point, measure_step
from .models import build_blocks, make_batch
from .optimum import Frontiers
from .policies import OP_KINDS, Plan, Segment, parse_policy, sqrt_segment_size, uniform_segments
from .spec import REFERENCE_VERSION, ModelSpec

__all__ = ["REFERENCE_VERSION", "ModelError", "lab_reference", "segments_policy"]


class ModelError(RuntimeError):
    """The cost model does not predict what the meter measures for this lab."""


def segments_policy(segments: tuple[Segment, ...]) -> dict[str, Any]:
    nested = any(segment.children for segment in segments)
    return {
        "kind": "nested" if nested else "boundaries",
        "segments": [segment.as_dict() for segment in segments],
    }


def _point(peak: int, flops: int, **extra: Any) -> dict[str, Any]:
    return {"peak_activation_bytes": peak, "recompute_flops": flops, **extra}


def _pareto(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    points = sorted(points, key=lambda p: (p["peak_activation_bytes"], p["recompute_flops"]))
    frontier: list[dict[str, Any]] = []
    for point in points:
        if not frontier or point["recompute_flops"] < frontier[-1]["recompute_flops"]:
            frontier.append(point)
    return frontier


def lab_reference(
    spec: ModelSpec, budget_bytes: int, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    device = torch.device(device)
    costs: BlockCosts = fit_block_costs(spec, device)
    frontiers = Frontiers(costs)
    blocks = build_blocks(spec, device)
    batch = make_batch(spec, device)
    none = parse_policy({"kind": "none"}, spec.blocks)
    baseline = measure_step(blocks, none, batch, seed=spec.seed)

    def measured(plan: Plan) -> tuple[int, int]:
        peak, flops = measure_point(blocks, plan, batch, seed=spec.seed)
        return peak, flops - baseline.flops

    candidates: list[dict[str, Any]] = []
    best_segments = frontiers.optimum(budget_bytes)
    if best_segments is not None:
        segments = best_segments.segments
        predicted = (best_segments.peak_bytes, best_segments.recompute_flops)
        metered = measured(Plan("nested", segments))
        if metered != predicted:
            raise ModelError(
                f"the cost model predicts (peak, recomputation) {predicted} for the optimal "
                f"policy; the meter measures {metered}"
            )
        candidates.append(_point(*predicted, policy=segments_policy(segments)))
    selective = []
    # Kinds the model does not run change nothing: one subset per set of kinds it runs.
    present = [kind for kind in OP_KINDS if baseline.op_calls.get(kind)]
    for size in range(len(present) + 1):
        for save in combinations(present, size):
            plan = parse_policy({"kind": "selective", "save": list(save)}, spec.blocks)
            point = _point(*measured(plan), policy={"kind": "selective", "save": list(save)})
            selective.append(point)
            if point["peak_activation_bytes"] <= budget_bytes:
                candidates.append(point)
    best = min(
        candidates,
        key=lambda p: (p["recompute_flops"], p["peak_activation_bytes"]),
        default=None,
    )
    sqrt = plan_cost(costs, uniform_segments(spec.blocks, sqrt_segment_size(spec.blocks)))
    frontier = _pareto(
        [_point(o.peak_bytes, o.recompute_flops) for o in frontiers.frontier()]
        + [_point(p["peak_activation_bytes"], p["recompute_flops"]) for p in selective]
    )
    return {
        "version": REFERENCE_VERSION,
        "method": (
            "least recomputation within the budget over every segment policy, nested up to "
            "3 deep (dynamic programme over the cost model fitted on the meter) and every "
            "selective policy (measured)"
        ),
        "budget_bytes": budget_bytes,
        "forward_flops": baseline.forward_flops,
        "baseline_peak_activation_bytes": baseline.peak_activation_bytes,
        "optimal_recompute_flops": None if best is None else best["recompute_flops"],
        "optimal_peak_activation_bytes": None if best is None else best["peak_activation_bytes"],
        "optimal_policy": None if best is None else best["policy"],
        "sqrt": _point(*sqrt),
        "frontier": frontier,
        "selective": selective,
        "block_costs": costs.as_dict(),
    }
