"""The lab runner on the CPU: plain PyTorch, measured figures against theory and the
cost model, gradient checks, and strict refusal of bad policies."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from itertools import product

import pytest

torch = pytest.importorskip("torch", reason="the labs extra (torch) is part of make test")

from labs.runner.measure import measure_step  # noqa: E402
from labs.runner.models import build_blocks, make_batch  # noqa: E402
from labs.runner.optimum import chain_cost, chain_optimum  # noqa: E402
from labs.runner.policies import (  # noqa: E402
    Plan,
    PolicyError,
    Segment,
    parse_policy,
    uniform_segments,
)
from labs.runner.run import run_lab  # noqa: E402
from labs.runner.spec import ModelSpec, SpecError  # noqa: E402

# Width and batch differ, so a parameter gradient (width²) is never the size of an
# activation (batch × width) and leaving gradients out of the meter is really tested.
WIDTH, BATCH = 8, 12
UNIT = BATCH * WIDTH * 4
SCALARS = 2 * 4  # the loss and the gradient that seeds the backward pass


def chain(blocks: int) -> ModelSpec:
    return ModelSpec(kind="chain", blocks=blocks, width=WIDTH, batch=BATCH)


def measure(spec: ModelSpec, policy) -> dict:
    return run_lab(spec, policy, device="cpu", repeats=0)


def units(peak_bytes: int) -> float:
    return (peak_bytes - SCALARS) / UNIT


@pytest.mark.parametrize("blocks", [16, 64])
def test_measured_peak_is_the_theory_for_a_chain(blocks):
    root = math.isqrt(blocks)
    expected = {
        json.dumps({"kind": "none"}): blocks + 1,
        json.dumps({"kind": "every_block"}): blocks + 1,  # a Linear+ReLU block saves nothing
        json.dumps({"kind": "sqrt"}): 2 * root,
        **{
            json.dumps({"kind": "segments", "size": k}): blocks // k + k
            for k in (2, 4, 8)
            if blocks % k == 0
        },
    }
    for policy, activations in expected.items():
        result = measure(chain(blocks), policy)
        assert units(result["peak_activation_bytes"]) == activations, policy
        assert result["baseline_peak_activation_bytes"] == (blocks + 1) * UNIT + SCALARS


def test_full_checkpointing_of_a_chain_costs_exactly_one_extra_forward():
    for blocks in (16, 64):
        full = measure(chain(blocks), {"kind": "every_block"})
        assert full["recompute_flops"] == full["forward_flops"] > 0
        assert full["step_flops"] == full["baseline_flops"] + full["forward_flops"]


def test_early_stop_means_recomputation_is_measured_not_inferred():
    """A transformer block ends in a linear layer whose saved input is ready before the
    layer runs, so non-reentrant checkpointing stops recomputing before it: full
    checkpointing costs one forward minus each block's last projection."""
    spec = ModelSpec(kind="transformer", blocks=3, width=16, batch=2, sequence=8, heads=2)
    full = measure(spec, {"kind": "every_block"})
    tokens, hidden = 2 * 8, 4 * 16
    down_projection = 2 * tokens * hidden * 16
    assert full["recompute_flops"] == full["forward_flops"] - 3 * down_projection


def test_selective_policies_land_between_none_and_full():
    spec = ModelSpec(kind="transformer", blocks=3, width=16, batch=2, sequence=8, heads=2)
    none = measure(spec, {"kind": "none"})
    full = measure(spec, {"kind": "every_block"})
    assert none["recompute_flops"] == 0
    for saved in (["attention"], ["matmul"], ["norm", "pointwise"]):
        selective = measure(spec, {"kind": "selective", "save": saved})
        assert 0 <= selective["recompute_flops"] <= full["recompute_flops"], saved
        assert (
            none["peak_activation_bytes"]
            >= selective["peak_activation_bytes"]
            >= full["peak_activation_bytes"]
        ), saved
    # Keeping attention's output recomputes the matmuls only: strictly between.
    attention = measure(spec, {"kind": "selective", "save": ["attention"]})
    assert 0 < attention["recompute_flops"] < full["recompute_flops"]
    # Keeping the matmuls leaves only zero-FLOP work, which the op counts still show.
    matmuls = measure(chain(6), {"kind": "selective", "save": ["matmul"]})
    assert matmuls["recompute_flops"] == 0 and matmuls["recompute_pointwise_ops"] == 6


def test_cpu_attention_flops_are_counted():
    spec = ModelSpec(kind="transformer", blocks=1, width=16, batch=2, sequence=8, heads=2)
    result = measure(spec, {"kind": "selective", "save": ["matmul"]})
    # Recomputed: attention only; its formula is 2 batched matmuls of (s × d)·(d × s).
    heads, head_dim = 2, 8
    attention_flops = 2 * (2 * 2 * heads * 8 * 8 * head_dim)
    assert result["recompute_flops"] == attention_flops


def random_segment_policy(blocks: int, rng: random.Random) -> list[Segment]:
    cuts = sorted(rng.sample(range(1, blocks), rng.randint(0, blocks - 1)))
    edges = [0, *cuts, blocks]
    return [Segment(a, b, rng.random() < 0.6) for a, b in zip(edges, edges[1:], strict=False)]


def test_cost_model_predicts_the_measured_figures_of_random_segment_policies():
    rng = random.Random(7)
    blocks = 20
    spec = chain(blocks)
    model = build_blocks(spec, torch.device("cpu"))
    batch = make_batch(spec, torch.device("cpu"))
    baseline = measure_step(model, Plan("none", (Segment(0, blocks, False),)), batch, seed=0)
    block_flops = baseline.forward_flops // blocks
    for _ in range(25):
        segments = tuple(random_segment_policy(blocks, rng))
        figures = measure_step(model, Plan("boundaries", segments), batch, seed=0)
        peak, recomputed = chain_cost(segments)
        assert figures.peak_activation_bytes == peak * UNIT + SCALARS, segments
        assert figures.flops - baseline.flops == recomputed * block_flops, segments


def test_dynamic_programme_finds_the_least_recomputation_for_every_budget():
    """Against brute force over every single-level policy of an 8-block chain."""
    blocks = 8
    best: dict[int, int] = {}
    for cut_mask, marks in product(range(2 ** (blocks - 1)), range(2**blocks)):
        edges = [0, *[i + 1 for i in range(blocks - 1) if cut_mask >> i & 1], blocks]
        segments = [
            Segment(a, b, bool(marks >> index & 1))
            for index, (a, b) in enumerate(zip(edges, edges[1:], strict=False))
        ]
        if marks >> len(segments):
            continue  # each mark pattern once per tiling
        peak, recomputed = chain_cost(segments)
        for budget in range(peak, blocks + 2):
            best[budget] = min(best.get(budget, recomputed), recomputed)
    for budget in range(1, blocks + 2):
        optimum = chain_optimum(blocks, budget)
        if budget not in best:
            assert optimum is None, budget
            continue
        assert optimum.recomputed_blocks == best[budget], budget
        assert chain_cost(optimum.segments) <= (budget, best[budget])


def test_score_is_the_optimal_recomputation_over_the_students():
    blocks = 16
    budget = 10 * UNIT + SCALARS
    sqrt = run_lab(chain(blocks), {"kind": "sqrt"}, budget_bytes=budget, device="cpu", repeats=0)
    assert sqrt["within_budget"] and sqrt["grads_match"]
    optimal = chain_optimum(blocks, 8).recomputed_blocks * (sqrt["forward_flops"] // blocks)
    assert sqrt["optimal_recompute_flops"] == optimal
    assert sqrt["score"] == pytest.approx(min(1, optimal / sqrt["recompute_flops"]))
    assert sqrt["score"] < 1  # the optimum beats √N at the same peak
    over = run_lab(chain(blocks), {"kind": "none"}, budget_bytes=budget, device="cpu", repeats=0)
    assert not over["within_budget"] and over["score"] == 0
    assert sqrt["reference"]["frontier"][-1]["recompute_flops"] == 0


def test_gradients_match_for_every_policy_kind_with_dropout():
    spec = ModelSpec(kind="residual", blocks=8, width=WIDTH, batch=BATCH, dropout=0.3)
    policies = [
        {"kind": "every_block"},
        {"kind": "segments", "size": 3},
        {"kind": "sqrt"},
        {
            "kind": "boundaries",
            "segments": [
                {"start": 0, "end": 2, "checkpoint": False},
                {"start": 2, "end": 8, "checkpoint": True},
            ],
        },
        {
            "kind": "nested",
            "segments": [
                {
                    "start": 0,
                    "end": 6,
                    "checkpoint": True,
                    "segments": [
                        {"start": 0, "end": 3, "checkpoint": True},
                        {"start": 3, "end": 6, "checkpoint": False},
                    ],
                },
                {"start": 6, "end": 8, "checkpoint": True},
            ],
        },
        {"kind": "selective", "save": ["matmul"]},
        {"kind": "selective", "save": ["pointwise", "norm"]},
    ]
    for policy in policies:
        result = measure(spec, policy)
        assert result["grads_match"], policy
        assert result["max_grad_difference"] == 0.0, policy


def test_disabling_rng_preservation_with_dropout_is_caught_and_scores_zero():
    spec = ModelSpec(kind="residual", blocks=4, width=WIDTH, batch=BATCH, dropout=0.5)
    result = run_lab(
        spec,
        {"kind": "every_block", "preserve_rng_state": False},
        budget_bytes=10**9,
        device="cpu",
        repeats=0,
    )
    assert result["grads_match"] is False
    assert result["max_grad_difference"] > 0
    assert result["score"] == 0


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"kind": "magic"}, "unknown policy kind"),
        ('{"kind": "sqrt"', "not valid JSON"),
        ([1, 2], "JSON object"),
        ({"kind": "segments", "size": 0}, "between 1 and 16"),
        ({"kind": "segments", "size": 10**12}, "between 1 and 16"),
        ({"kind": "segments", "size": "4"}, "whole number"),
        ({"kind": "segments", "size": 4, "extra": 1}, "unknown field"),
        ({"kind": "boundaries", "segments": []}, "non-empty list"),
        (
            {"kind": "boundaries", "segments": [{"start": 0, "end": 17, "checkpoint": True}]},
            "between 0 and 16",
        ),
        (
            {
                "kind": "boundaries",
                "segments": [
                    {"start": 0, "end": 8, "checkpoint": True},
                    {"start": 6, "end": 16, "checkpoint": True},
                ],
            },
            "overlaps",
        ),
        ({"kind": "boundaries", "segments": [{"start": 0, "end": 8}]}, "in no segment"),
        (
            {
                "kind": "boundaries",
                "segments": [
                    {
                        "start": 0,
                        "end": 16,
                        "checkpoint": True,
                        "segments": [{"start": 0, "end": 16}],
                    }
                ],
            },
            "cannot be nested",
        ),
        ({"kind": "selective", "save": ["everything"]}, "unknown op kind"),
        ({"kind": "none", "preserve_rng_state": "no"}, "true or false"),
    ],
)
def test_bad_policies_are_refused_with_a_reason(policy, message):
    with pytest.raises(PolicyError, match=message):
        parse_policy(policy, 16)


def test_absurd_models_are_refused():
    for fields in (
        {"blocks": 0},
        {"width": 10**6},
        {"kind": "rnn"},
        {"blocks": 1024, "width": 8192, "batch": 4096},
    ):
        with pytest.raises(SpecError):
            ModelSpec(**fields)


def test_uniform_segments_cover_every_block_once():
    for blocks, size in ((10, 3), (16, 4), (7, 7)):
        segments = uniform_segments(blocks, size)
        assert [s.start for s in segments] == list(range(0, blocks, size))
        assert segments[-1].end == blocks


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "labs.runner", *args], capture_output=True, text=True, check=False
    )


def test_cli_prints_one_json_object_and_imports_no_django():
    done = run_cli(
        "--model", "chain", "--blocks", "16", "--width", "16", "--batch", "8",
        "--policy", '{"kind": "segments", "size": 4}', "--budget-bytes", "100000",
        "--device", "cpu", "--repeats", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for key in (
        "peak_activation_bytes", "baseline_peak_activation_bytes", "recompute_flops",
        "baseline_flops", "grads_match", "time_ms_median", "device", "torch_version",
        "optimal_recompute_flops", "score",
    ):  # fmt: skip
        assert key in result, key
    assert result["device"] == "cpu" and result["torch_version"] == torch.__version__
    assert result["time_ms_median"] > 0
    imported = subprocess.run(
        [sys.executable, "-c", "import sys, labs.runner.__main__, labs.runner.run; "
         "print(any(m == 'django' or m.startswith('django.') for m in sys.modules))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert imported.stdout.strip() == "False"


def test_cli_refuses_a_bad_policy_with_exit_status_2():
    done = run_cli("--blocks", "8", "--policy", '{"kind": "segments", "size": 9}')
    assert done.returncode == 2
    assert "between 1 and 8" in json.loads(done.stdout)["error"]
