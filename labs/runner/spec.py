"""What model a lab runs, validated without importing PyTorch (the web service uses it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["MODEL_KINDS", "MODEL_OP_KINDS", "REFERENCE_VERSION", "ModelSpec", "SpecError"]

# How runs are graded (labs.runner.reference): stored with each reference and each run's
# result, so results graded another way are known (docs/labs.md, "Runs graded before").
REFERENCE_VERSION = 2

MODEL_KINDS = ("chain", "residual", "transformer")
# The op kinds (labs.runner.policies.OP_KINDS) each model runs: a selective policy naming
# any other kind changes nothing, so the workbench offers only these.
MODEL_OP_KINDS = {
    "chain": ("matmul", "pointwise"),
    "residual": ("matmul", "pointwise"),
    "transformer": ("matmul", "attention", "norm", "pointwise"),
}
# Bounds that keep one lab run within what a single GPU (or a laptop CPU) can do.
MAX_BLOCKS = 1024
MAX_WIDTH = 8192
MAX_BATCH = 4096
MAX_SEQUENCE = 4096
MAX_ACTIVATION_ELEMENTS = 2**31


class SpecError(ValueError):
    """The model description is not one the runner can build."""


@dataclass(frozen=True)
class ModelSpec:
    """``chain``: Linear+ReLU blocks. ``residual``: x + W2·relu(W1·x) blocks.
    ``transformer``: pre-LayerNorm blocks with causal attention (written out: two batched
    matmuls and a softmax) and an MLP, on ``sequence`` tokens per example."""

    kind: str = "chain"
    blocks: int = 16
    width: int = 64
    batch: int = 32
    sequence: int = 1
    heads: int = 1
    dropout: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in MODEL_KINDS:
            raise SpecError(f"unknown model {self.kind!r}; choose one of {', '.join(MODEL_KINDS)}")
        for name, upper in (
            ("blocks", MAX_BLOCKS),
            ("width", MAX_WIDTH),
            ("batch", MAX_BATCH),
            ("sequence", MAX_SEQUENCE),
            ("heads", MAX_WIDTH),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= upper:
                raise SpecError(f"{name} must be a whole number from 1 to {upper}")
        if self.kind != "transformer" and (self.sequence != 1 or self.heads != 1):
            raise SpecError("sequence and heads apply only to the transformer")
        if self.kind == "transformer" and self.width % self.heads:
            raise SpecError("width must be a multiple of heads")
        if not isinstance(self.dropout, int | float) or not 0 <= self.dropout < 1:
            raise SpecError("dropout must be at least 0 and below 1")
        if self.kind == "chain" and self.dropout:
            raise SpecError("the chain model has no dropout")
        if self.blocks * self.batch * self.sequence * self.width > MAX_ACTIVATION_ELEMENTS:
            raise SpecError("the model's activations are too large for one run")

    @property
    def activation_shape(self) -> tuple[int, ...]:
        if self.kind == "transformer":
            return (self.batch, self.sequence, self.width)
        return (self.batch, self.width)

    def as_dict(self) -> dict:
        return asdict(self)
