"""Running the blocks under a plan with ``torch.utils.checkpoint``."""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.utils.checkpoint import (
    CheckpointPolicy,
    checkpoint,
    create_selective_checkpoint_contexts,
)

from .policies import Plan, Segment

__all__ = ["op_kind", "run_blocks"]

aten = torch.ops.aten
# The models' projections are mm/addmm; their attention is written out as two batched
# matmuls and a softmax (labs.runner.models.attention), which is what "attention" names.
_MATMUL = {aten.mm, aten.addmm, aten.matmul, aten.linear}
_ATTENTION = {
    aten.bmm,
    aten.baddbmm,
    aten._softmax,
    aten._scaled_dot_product_flash_attention_for_cpu,
    aten._scaled_dot_product_flash_attention,
    aten._scaled_dot_product_efficient_attention,
    aten._scaled_dot_product_cudnn_attention,
    aten._scaled_dot_product_attention_math,
}
_NORM = {aten.native_layer_norm, aten.layer_norm}


def op_kind(func: torch._ops.OpOverload) -> str | None:
    """The op kind a selective policy names: matmul (the projections), attention (its
    batched matmuls and softmax), norm or pointwise."""
    packet = func.overloadpacket
    if packet in _MATMUL:
        return "matmul"
    if packet in _ATTENTION:
        return "attention"
    if packet in _NORM:
        return "norm"
    if torch.Tag.pointwise in func.tags:
        return "pointwise"
    return None


def _selective_policy(save_ops: frozenset[str], _ctx, func, *args, **kwargs) -> CheckpointPolicy:
    # An op that writes into its input (dropout's in-place bernoulli_) cannot be cached:
    # the cache would hold a tensor that changes after it is saved.
    if op_kind(func) in save_ops and not func._schema.is_mutable:
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def _run_range(
    blocks: nn.ModuleList, segment: Segment, plan: Plan, x: torch.Tensor
) -> torch.Tensor:
    if segment.children:
        return _run_segments(blocks, segment.children, plan, x)
    for index in range(segment.start, segment.end):
        x = blocks[index](x)
    return x


def _run_segments(
    blocks: nn.ModuleList, segments: tuple[Segment, ...], plan: Plan, x: torch.Tensor
) -> torch.Tensor:
    for segment in segments:
        if not segment.checkpoint:
            x = _run_range(blocks, segment, plan, x)
            continue
        options = {}
        if plan.save_ops is not None:
            options["context_fn"] = functools.partial(
                create_selective_checkpoint_contexts,
                functools.partial(_selective_policy, plan.save_ops),
            )
        x = checkpoint(
            _run_range,
            blocks,
            segment,
            plan,
            x,
            use_reentrant=False,
            preserve_rng_state=plan.preserve_rng_state,
            **options,
        )
    return x


def run_blocks(blocks: nn.ModuleList, plan: Plan, x: torch.Tensor) -> torch.Tensor:
    """The forward pass of all blocks, checkpointed as the plan says."""
    return _run_segments(blocks, plan.segments, plan, x)
