"""One training step under a plan, measured: memory, FLOPs, op calls, time, gradients."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch
from torch import nn

from .execution import run_blocks
from .flops import CostCounter, OpKindCounter
from .memory import ActivationMemoryMeter
from .policies import Plan

__all__ = ["StepFigures", "measure_point", "measure_step"]


@dataclass
class StepFigures:
    peak_activation_bytes: int
    flops: int
    forward_flops: int
    op_calls: dict[str, int]
    gradients: list[torch.Tensor]
    time_ms_median: float | None = None
    timings_ms: list[float] | None = None  # every timed step, for the spread beside the median
    cuda_max_memory_allocated_bytes: int | None = None


def _step(blocks: nn.ModuleList, plan: Plan, batch: torch.Tensor) -> None:
    output = run_blocks(blocks, plan, batch)
    loss = output.sum()
    del output  # the loss's backward needs none of it; holding it would skew the peak
    loss.backward()


def _fresh(blocks: nn.ModuleList, seed: int) -> None:
    """Gradients cleared and the RNG reseeded, so every step draws the same dropout masks."""
    for parameter in blocks.parameters():
        parameter.grad = None
    torch.manual_seed(seed)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _metered(blocks: nn.ModuleList, plan: Plan, batch: torch.Tensor, seed: int):
    parameters = list(blocks.parameters())
    _fresh(blocks, seed)
    meter = ActivationMemoryMeter(parameters)
    with meter:
        _step(blocks, plan, batch)
    return meter.peak_bytes, [p.grad.detach().clone() for p in parameters]


def _costed(blocks: nn.ModuleList, plan: Plan, batch: torch.Tensor, seed: int):
    _fresh(blocks, seed)
    with CostCounter() as step_cost, OpKindCounter() as ops:
        _step(blocks, plan, batch)
    return step_cost.total, dict(ops.calls)


def measure_point(
    blocks: nn.ModuleList, plan: Plan, batch: torch.Tensor, *, seed: int
) -> tuple[int, int]:
    """(peak activation bytes, step FLOPs) of the plan: the two graded figures only."""
    peak, _gradients = _metered(blocks, plan, batch, seed)
    flops, _calls = _costed(blocks, plan, batch, seed)
    for parameter in blocks.parameters():
        parameter.grad = None
    return peak, flops


def measure_step(
    blocks: nn.ModuleList, plan: Plan, batch: torch.Tensor, *, seed: int, repeats: int = 0
) -> StepFigures:
    """Each figure comes from its own step, so no meter sees another's overhead; with
    ``repeats`` the step is also timed (after a warm-up) and, on CUDA, measured by the
    allocator."""
    parameters = list(blocks.parameters())
    device = batch.device

    peak, gradients = _metered(blocks, plan, batch, seed)
    flops, calls = _costed(blocks, plan, batch, seed)

    _fresh(blocks, seed)
    with CostCounter() as forward_flops:
        run_blocks(blocks, plan, batch)

    figures = StepFigures(
        peak_activation_bytes=peak,
        flops=flops,
        forward_flops=forward_flops.total,
        op_calls=calls,
        gradients=gradients,
    )
    if repeats:
        _fresh(blocks, seed)
        _step(blocks, plan, batch)  # warm-up: kernels chosen, allocator caches filled
        if device.type == "cuda":
            _fresh(blocks, seed)
            _synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_allocated(device)
            _step(blocks, plan, batch)
            _synchronize(device)
            figures.cuda_max_memory_allocated_bytes = (
                torch.cuda.max_memory_allocated(device) - before
            )
        timings = []
        for _ in range(repeats):
            _fresh(blocks, seed)
            _synchronize(device)
            started = time.perf_counter()
            _step(blocks, plan, batch)
            _synchronize(device)
            timings.append((time.perf_counter() - started) * 1000)
        figures.time_ms_median = statistics.median(timings)
        figures.timings_ms = [round(timing, 3) for timing in timings]
    for parameter in parameters:
        parameter.grad = None
    return figures
