"""A lab run: the student's policy measured against the unchecked baseline and graded."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from .measure import StepFigures, measure_step
from .models import build_blocks, make_batch
from .optimum import chain_cost, chain_frontier, chain_optimum
from .policies import Plan, PolicyError, parse_policy, sqrt_segment_size, uniform_segments
from .spec import ModelSpec

__all__ = ["RUBRIC", "gradients_match", "resolve_device", "run_lab"]

RUBRIC = (
    "score = min(1, optimal recomputation at your measured peak / your measured "
    "recomputation); 0 if your peak is over the budget or your gradients differ from the "
    "unchecked run's. Time is reported, never graded."
)
# Gradients on a GPU may differ in the last bits when kernels pick other algorithms.
CUDA_RTOL = 1e-5
CUDA_ATOL = 1e-6


def resolve_device(requested: str) -> torch.device:
    """``auto`` takes the GPU when there is one; ``cuda`` insists on it."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("CUDA was requested but this machine has no usable GPU")
    if requested not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {requested!r}")
    return torch.device(requested)


def gradients_match(expected: list[torch.Tensor], actual: list[torch.Tensor]) -> bool:
    """Bitwise on the CPU (the same kernels run in the same order); tight allclose on a GPU."""
    for want, got in zip(expected, actual, strict=True):
        if want.device.type == "cpu":
            if not torch.equal(want, got):
                return False
        elif not torch.allclose(want, got, rtol=CUDA_RTOL, atol=CUDA_ATOL):
            return False
    return True


def _max_difference(expected: list[torch.Tensor], actual: list[torch.Tensor]) -> float:
    return max(float((want - got).abs().max()) for want, got in zip(expected, actual, strict=True))


def _point(figures: StepFigures, baseline: StepFigures) -> dict[str, int]:
    return {
        "peak_activation_bytes": figures.peak_activation_bytes,
        "recompute_flops": figures.flops - baseline.flops,
    }


def _reference(
    spec: ModelSpec,
    blocks: Any,
    batch: torch.Tensor,
    baseline: StepFigures,
    student_peak: int,
    unit_bytes: int,
    scalar_bytes: int,
) -> dict[str, Any]:
    """The sqrt(N) schedule, the optimal frontier and the optimum at the student's peak.

    On a chain they come from the cost model (its agreement with the meter is tested); on
    other models the frontier is measured over uniform segment sizes."""
    block_flops = baseline.forward_flops // spec.blocks
    if spec.kind == "chain":

        def to_bytes(units: int) -> int:
            return units * unit_bytes + scalar_bytes

        sqrt_peak, sqrt_blocks = chain_cost(
            uniform_segments(spec.blocks, sqrt_segment_size(spec.blocks))
        )
        frontier = [
            {
                "peak_activation_bytes": to_bytes(o.budget_units),
                "recompute_flops": o.recomputed_blocks * block_flops,
                "segments": [s.as_dict() for s in o.segments],
            }
            for o in chain_frontier(spec.blocks)
        ]
        optimum = chain_optimum(spec.blocks, (student_peak - scalar_bytes) // unit_bytes)
        optimal = None if optimum is None else optimum.recomputed_blocks * block_flops
        return {
            "method": "cost model of single-level segment policies (dynamic programme)",
            "sqrt": {
                "peak_activation_bytes": to_bytes(sqrt_peak),
                "recompute_flops": sqrt_blocks * block_flops,
            },
            "frontier": frontier,
            "optimal_recompute_flops": optimal,
        }
    sizes = sorted(
        {sqrt_segment_size(spec.blocks), *(2**i for i in range(int(math.log2(spec.blocks)) + 1))}
    )
    measured = []
    sqrt_point = None
    for size in sizes:
        plan = Plan("segments", uniform_segments(spec.blocks, size))
        point = _point(measure_step(blocks, plan, batch, seed=spec.seed), baseline)
        point["segments"] = [{"size": size}]
        measured.append(point)
        if size == sqrt_segment_size(spec.blocks):
            sqrt_point = point
    measured.append({**_point(baseline, baseline), "segments": [{"size": spec.blocks}]})
    frontier = [
        p
        for p in measured
        if not any(
            q is not p
            and q["peak_activation_bytes"] <= p["peak_activation_bytes"]
            and q["recompute_flops"] <= p["recompute_flops"]
            and (q["peak_activation_bytes"], q["recompute_flops"])
            != (p["peak_activation_bytes"], p["recompute_flops"])
            for q in measured
        )
    ]
    frontier.sort(key=lambda p: p["peak_activation_bytes"])
    fitting = [p["recompute_flops"] for p in frontier if p["peak_activation_bytes"] <= student_peak]
    return {
        "method": "measured uniform segment policies",
        "sqrt": sqrt_point,
        "frontier": frontier,
        "optimal_recompute_flops": min(fitting) if fitting else None,
    }


def run_lab(
    spec: ModelSpec,
    policy: str | Mapping[str, Any],
    *,
    budget_bytes: int | None = None,
    device: str = "auto",
    repeats: int = 5,
) -> dict[str, Any]:
    """Measure the policy and the unchecked baseline on the same model and batch; with a
    budget, grade it. Raises PolicyError (the student's to fix) before anything runs."""
    plan = parse_policy(policy, spec.blocks)
    if budget_bytes is not None and (isinstance(budget_bytes, bool) or budget_bytes < 0):
        raise ValueError("the budget must be a non-negative number of bytes")
    target = resolve_device(device)
    blocks = build_blocks(spec, target)
    batch = make_batch(spec, target)
    baseline_plan = parse_policy({"kind": "none"}, spec.blocks)
    baseline = measure_step(blocks, baseline_plan, batch, seed=spec.seed, repeats=repeats)
    try:
        figures = measure_step(blocks, plan, batch, seed=spec.seed, repeats=repeats)
    except torch.OutOfMemoryError:
        raise  # the device's memory, which other work shares: not the student's to fix
    except RuntimeError as error:
        # The same model ran without checkpointing, so the policy is what failed.
        raise PolicyError(f"the policy failed while running: {error}") from error

    element_bytes = batch.element_size()
    unit_bytes = batch.numel() * element_bytes
    grads_match = gradients_match(baseline.gradients, figures.gradients)
    recompute_flops = figures.flops - baseline.flops
    result: dict[str, Any] = {
        "model": spec.as_dict(),
        "policy": plan.as_dict(),
        "device": str(target),
        "torch_version": torch.__version__,
        "activation_unit_bytes": unit_bytes,
        "peak_activation_bytes": figures.peak_activation_bytes,
        "baseline_peak_activation_bytes": baseline.peak_activation_bytes,
        "baseline_flops": baseline.flops,
        "forward_flops": baseline.forward_flops,
        "step_flops": figures.flops,
        "recompute_flops": recompute_flops,
        "recompute_pointwise_ops": figures.op_calls.get("pointwise", 0)
        - baseline.op_calls.get("pointwise", 0),
        "op_calls": figures.op_calls,
        "baseline_op_calls": baseline.op_calls,
        "grads_match": grads_match,
        "max_grad_difference": _max_difference(baseline.gradients, figures.gradients),
        "time_ms_median": figures.time_ms_median,
        "baseline_time_ms_median": baseline.time_ms_median,
    }
    if target.type == "cuda":
        result["cuda_max_memory_allocated_bytes"] = figures.cuda_max_memory_allocated_bytes
        result["baseline_cuda_max_memory_allocated_bytes"] = (
            baseline.cuda_max_memory_allocated_bytes
        )
    if budget_bytes is None:
        return result

    # The loss and the gradient that seeds the backward pass: two scalars in every step.
    scalar_bytes = 2 * element_bytes
    reference = _reference(
        spec, blocks, batch, baseline, figures.peak_activation_bytes, unit_bytes, scalar_bytes
    )
    within_budget = figures.peak_activation_bytes <= budget_bytes
    optimal = reference["optimal_recompute_flops"]
    if not grads_match or not within_budget:
        score = 0.0
    elif recompute_flops <= 0 or optimal is None:
        # Nothing recomputed, or a peak below what any single-level policy reaches.
        score = 1.0
    else:
        score = min(1.0, optimal / recompute_flops)
    result.update(
        {
            "budget_bytes": budget_bytes,
            "within_budget": within_budget,
            "optimal_recompute_flops": optimal,
            "score": score,
            "rubric": RUBRIC,
            "reference": reference,
        }
    )
    return result
