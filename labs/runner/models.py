"""The lab models: chains of identical blocks, built deterministically from a seed.

What a step keeps for backward must not depend on the device, or the same policy would get
another grade on another worker. So the models use no op whose saved tensors differ by
device: dropout is written out (a one-byte mask drawn with ``bernoulli_``, where PyTorch's
own dropout keeps a float mask on the CPU and a one-byte mask from a fused kernel on CUDA),
and attention is written out as two batched matmuls and a softmax (where
``scaled_dot_product_attention`` picks another kernel, saving other tensors, on each device).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .spec import ModelSpec

__all__ = ["attention", "build_blocks", "dropout", "make_batch"]


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout with a one-byte mask, the same ops on every device (autograd keeps
    the mask only)."""
    if not training or p == 0:
        return x
    keep = torch.empty(x.shape, dtype=torch.bool, device=x.device).bernoulli_(1 - p)
    # Out of place: selective checkpointing may cache the first product.
    return x.mul(keep).mul(1 / (1 - p))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: torch.Tensor):
    """Causal attention written out (the math of ``scaled_dot_product_attention``)."""
    scores = torch.matmul(q * q.shape[-1] ** -0.5, k.transpose(-2, -1))
    weights = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    return torch.matmul(weights, v)


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
        return x + dropout(branch, self.dropout, self.training)


class TransformerBlock(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float, sequence: int) -> None:
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        # True above the diagonal: a token attends to itself and the tokens before it.
        causal = torch.ones(sequence, sequence, dtype=torch.bool).triu(1)
        self.register_buffer("causal", causal, persistent=False)
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
        attended = attention(q, k, v, self.causal)
        attended = attended.transpose(1, 2).reshape(batch, sequence, width)
        x = x + dropout(self.projection(attended), self.dropout, self.training)
        branch = self.down(F.gelu(self.up(self.mlp_norm(x))))
        return x + dropout(branch, self.dropout, self.training)


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
                TransformerBlock(spec.width, spec.heads, spec.dropout, spec.sequence)
                for _ in range(spec.blocks)
            ]
    finally:
        torch.random.set_rng_state(generator_state)
    return nn.ModuleList(blocks).to(device).train()


def make_batch(spec: ModelSpec, device: torch.device) -> torch.Tensor:
    generator = torch.Generator().manual_seed(spec.seed + 1)
    return torch.randn(spec.activation_shape, generator=generator).to(device)
