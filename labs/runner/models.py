"""The lab models: chains of identical blocks, built deterministically from a seed."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .spec import ModelSpec

__all__ = ["build_blocks", "make_batch"]


class ChainBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


class ResidualBlock(nn.Module):
    def __init__(self, width: int, dropout: float) -> None:
        super().__init__()
        self.up = nn.Linear(width, width)
        self.down = nn.Linear(width, width)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        branch = self.down(torch.relu(self.up(x)))
        return x + F.dropout(branch, self.dropout, self.training)


class TransformerBlock(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.attention_norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.projection = nn.Linear(width, width)
        self.mlp_norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, sequence, width = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).chunk(3, dim=-1)
        q, k, v = (
            t.reshape(batch, sequence, self.heads, width // self.heads).transpose(1, 2)
            for t in (q, k, v)
        )
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        attended = attended.transpose(1, 2).reshape(batch, sequence, width)
        x = x + F.dropout(self.projection(attended), self.dropout, self.training)
        branch = self.down(F.gelu(self.up(self.mlp_norm(x))))
        return x + F.dropout(branch, self.dropout, self.training)


def build_blocks(spec: ModelSpec, device: torch.device) -> nn.ModuleList:
    """The model's blocks with weights drawn from ``spec.seed``: the same spec gives the
    same weights on every machine and every run."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(spec.seed)
    try:
        if spec.kind == "chain":
            blocks = [ChainBlock(spec.width) for _ in range(spec.blocks)]
        elif spec.kind == "residual":
            blocks = [ResidualBlock(spec.width, spec.dropout) for _ in range(spec.blocks)]
        else:
            blocks = [
                TransformerBlock(spec.width, spec.heads, spec.dropout) for _ in range(spec.blocks)
            ]
    finally:
        torch.random.set_rng_state(generator_state)
    return nn.ModuleList(blocks).to(device).train()


def make_batch(spec: ModelSpec, device: torch.device) -> torch.Tensor:
    generator = torch.Generator().manual_seed(spec.seed + 1)
    return torch.randn(spec.activation_shape, generator=generator).to(device)
