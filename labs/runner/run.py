"""A lab run: the student's policy measured against the unchecked baseline and graded
against the lab's reference (the least recomputation any policy reaches within the budget)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# cuBLAS is deterministic only with a fixed workspace; it must be set before its first use.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402

from .measure import measure_step  # noqa: E402
from .models import build_blocks, make_batch  # noqa: E402
from .policies import PolicyError, gettext_noop, parse_policy  # noqa: E402
from .reference import REFERENCE_VERSION, lab_reference  # noqa: E402
from .spec import ModelSpec  # noqa: E402

__all__ = ["RUBRIC", "gradients_match", "grade", "resolve_device", "run_lab"]

RUBRIC = (
    "score = min(1, the least recomputation of any policy that fits the budget / your "
    "recomputation); 0 if your peak is over the budget or your gradients differ from the "
    "unchecked run's. Memory below the budget earns nothing more. Time is reported, never "
    "graded."
)


def resolve_device(requested: str) -> torch.device:
    """``auto`` takes the GPU when there is one; ``cuda`` insists on it."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("CUDA was requested but this machine has no usable GPU")
    if requested not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {requested!r}")
    return torch.device(requested)


def spread(first: list[torch.Tensor], second: list[torch.Tensor]) -> list[float]:
    """Per tensor, how far two runs of the same step differ (0.0 when they are bitwise
    equal)."""
    return [float((a - b).abs().max()) for a, b in zip(first, second, strict=True)]


def gradients_match(
    expected: list[torch.Tensor], actual: list[torch.Tensor], tolerances: list[float] | None = None
) -> bool:
    """Bitwise equal, or within each tensor's tolerance (the baseline's own run-to-run
    spread on a GPU, 0.0 when it is deterministic)."""
    limits = tolerances or [0.0] * len(expected)
    for want, got, limit in zip(expected, actual, limits, strict=True):
        if limit == 0.0:
            if not torch.equal(want, got):
                return False
        elif float((want - got).abs().max()) > limit:
            return False
    return True


def grade(
    *, peak: int, recompute: int, grads_match: bool, budget_bytes: int, optimal: int | None
) -> tuple[float, str]:
    """The score and why: 0 over the budget or with other gradients, else the least
    recomputation within the budget over the student's, capped at 1."""
    if not grads_match:
        return 0.0, "grads_differ"
    if peak > budget_bytes:
        return 0.0, "over_budget"
    if recompute <= 0:
        return 1.0, "no_recompute"
    if optimal is None or recompute < optimal:
        return 1.0, "beats_reference"  # the reference missed this policy: said, not hidden
    if recompute == optimal:
        return 1.0, "optimal"
    return min(1.0, optimal / recompute), "ratio"


def run_lab(
    spec: ModelSpec,
    policy: str | Mapping[str, Any],
    *,
    budget_bytes: int | None = None,
    device: str = "auto",
    repeats: int = 5,
    reference: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Measure the policy and the unchecked baseline on the same model and batch; with a
    budget, grade it against ``reference`` (``lab_reference``; computed here when not
    given). Raises PolicyError (the student's to fix) before anything runs."""
    plan = parse_policy(policy, spec.blocks)
    if budget_bytes is not None and (isinstance(budget_bytes, bool) or budget_bytes < 0):
        raise ValueError("the budget must be a non-negative number of bytes")
    target = resolve_device(device)
    if target.type == "cuda":
        # Checkpointing reruns the same kernels on the same inputs: with deterministic
        # algorithms the gradients are bitwise the baseline's.
        torch.use_deterministic_algorithms(True, warn_only=True)
    blocks = build_blocks(spec, target)
    batch = make_batch(spec, target)
    baseline_plan = parse_policy({"kind": "none"}, spec.blocks)
    baseline = measure_step(blocks, baseline_plan, batch, seed=spec.seed, repeats=repeats)
    tolerances = None
    if target.type == "cuda":
        again = measure_step(blocks, baseline_plan, batch, seed=spec.seed)
        tolerances = spread(baseline.gradients, again.gradients)
    try:
        figures = measure_step(blocks, plan, batch, seed=spec.seed, repeats=repeats)
    except torch.OutOfMemoryError:
        raise  # the device's memory, which other work shares: not the student's to fix
    except RuntimeError as error:
        # The same model ran without checkpointing, so the policy is what failed.
        raise PolicyError(
            gettext_noop("the policy failed while running: %(error)s"), error=str(error)
        ) from error

    element_bytes = batch.element_size()
    unit_bytes = batch.numel() * element_bytes
    grads_match = gradients_match(baseline.gradients, figures.gradients, tolerances)
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
        "recompute_pointwise_ops": max(
            figures.op_calls.get("pointwise", 0) - baseline.op_calls.get("pointwise", 0), 0
        ),
        "op_calls": figures.op_calls,
        "baseline_op_calls": baseline.op_calls,
        "grads_match": grads_match,
        "max_grad_difference": max(spread(baseline.gradients, figures.gradients)),
        "grad_tolerance": max(tolerances) if tolerances else 0.0,
        "time_ms_median": figures.time_ms_median,
        "baseline_time_ms_median": baseline.time_ms_median,
        "timings_ms": figures.timings_ms,
        "baseline_timings_ms": baseline.timings_ms,
    }
    if target.type == "cuda":
        result["cuda_max_memory_allocated_bytes"] = figures.cuda_max_memory_allocated_bytes
        result["baseline_cuda_max_memory_allocated_bytes"] = (
            baseline.cuda_max_memory_allocated_bytes
        )
    if budget_bytes is None:
        return result

    if reference is None:
        reference = lab_reference(spec, budget_bytes, target)
    elif reference.get("budget_bytes") != budget_bytes:
        raise ValueError("the reference was computed for another budget")
    within_budget = figures.peak_activation_bytes <= budget_bytes
    optimal = reference["optimal_recompute_flops"]
    score, reason = grade(
        peak=figures.peak_activation_bytes,
        recompute=recompute_flops,
        grads_match=grads_match,
        budget_bytes=budget_bytes,
        optimal=optimal,
    )
    result.update(
        {
            "budget_bytes": budget_bytes,
            "within_budget": within_budget,
            "optimal_recompute_flops": optimal,
            "score": score,
            "score_reason": reason,
            "scoring_version": REFERENCE_VERSION,
            "rubric": RUBRIC,
            # What the result page shows; the optimal policy's shape stays with the lab.
            "reference": {
                key: reference[key]
                for key in ("method", "sqrt", "frontier", "optimal_peak_activation_bytes")
            },
        }
    )
    return result
