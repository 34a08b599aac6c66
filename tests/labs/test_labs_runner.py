"""The lab runner on the CPU: plain PyTorch, measured figures against theory and the
cost model, gradient checks, and strict refusal of bad policies."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from dataclasses import replace
from itertools import product

import pytest

torch = pytest.importorskip("torch", reason="the labs extra (torch) is part of make test")

from labs.runner.costmodel import plan_cost  # noqa: E402
from labs.runner.fit import fit_block_costs  # noqa: E402
from labs.runner.measure import measure_point  # noqa: E402
from labs.runner.models import build_blocks, make_batch  # noqa: E402
from labs.runner.optimum import Frontiers  # noqa: E402
from labs.runner.policies import (  # noqa: E402
    Plan,
    PolicyError,
    Segment,
    parse_policy,
    uniform_segments,
)
from labs.runner.reference import lab_reference  # noqa: E402
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
    residual_add = tokens * 16  # one FLOP per element written
    assert full["recompute_flops"] == full["forward_flops"] - 3 * (down_projection + residual_add)


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


def test_recomputing_only_pointwise_ops_or_norms_is_not_free():
    """Found in review: LayerNorm and pointwise ops counted zero FLOPs, so a policy that
    recomputed only those scored as if it recomputed nothing."""
    matmuls = measure(chain(6), {"kind": "selective", "save": ["matmul"]})
    # Six ReLUs recomputed, one FLOP per element each.
    assert matmuls["recompute_flops"] == 6 * BATCH * WIDTH
    assert matmuls["recompute_pointwise_ops"] == 6
    spec = ModelSpec(kind="transformer", blocks=3, width=16, batch=2, sequence=8, heads=2)
    norms_only = run_lab(
        spec,
        {"kind": "selective", "save": ["matmul", "attention", "pointwise"]},
        budget_bytes=10**9,
        device="cpu",
        repeats=0,
    )
    layer_norms = 2 * 3 * (16 * 16 + 2 * 16)  # output, mean and rstd of 6 LayerNorms
    assert norms_only["op_calls"]["norm"] - norms_only["baseline_op_calls"]["norm"] == 6
    assert norms_only["recompute_flops"] >= layer_norms
    assert norms_only["score_reason"] != "no_recompute"


def test_attention_recomputation_counts_its_matmuls_and_softmax():
    spec = ModelSpec(kind="transformer", blocks=1, width=16, batch=2, sequence=8, heads=2)
    keep_projections = measure(spec, {"kind": "selective", "save": ["matmul"]})
    keep_all = measure(spec, {"kind": "selective", "save": ["matmul", "attention"]})
    heads, head_dim = 2, 8
    score_matmuls = 2 * (2 * 2 * heads * 8 * 8 * head_dim)  # q·kᵀ and weights·v
    softmax = 2 * heads * 8 * 8
    assert keep_projections["recompute_flops"] - keep_all["recompute_flops"] == (
        score_matmuls + softmax
    )


# --- The cost model and the optimum, against the meter and brute force -------------------

TINY = {
    "chain": ModelSpec(kind="chain", blocks=6, width=WIDTH, batch=BATCH),
    "residual": ModelSpec(kind="residual", blocks=6, width=WIDTH, batch=BATCH, dropout=0.3),
    "transformer": ModelSpec(
        kind="transformer", blocks=5, width=16, batch=2, sequence=8, heads=2, dropout=0.1
    ),
}


@pytest.fixture(scope="module")
def fitted():
    """Each tiny model with its fitted cost model and its unchecked baseline's FLOPs."""
    models = {}
    for kind, spec in TINY.items():
        blocks = build_blocks(spec, torch.device("cpu"))
        batch = make_batch(spec, torch.device("cpu"))
        none = Plan("none", (Segment(0, spec.blocks, False),))
        baseline = measure_point(blocks, none, batch, seed=spec.seed)[1]
        models[kind] = (spec, fit_block_costs(spec), blocks, batch, baseline)
    return models


def random_segments(start: int, end: int, depth: int, rng: random.Random) -> tuple:
    """A random tiling of start…end: unchecked and checkpointed segments, nested up to 3
    levels."""
    cuts = sorted(rng.sample(range(start + 1, end), rng.randint(0, min(3, end - start - 1))))
    edges = [start, *cuts, end]
    segments = []
    for a, b in zip(edges, edges[1:], strict=False):
        children = ()
        if depth < 2 and b - a > 1 and rng.random() < 0.5:
            children = random_segments(a, b, depth + 1, rng)
        segments.append(Segment(a, b, rng.random() < 0.6, children))
    return tuple(segments)


@pytest.mark.parametrize("kind", list(TINY))
def test_cost_model_predicts_the_meter_for_random_nested_policies(fitted, kind):
    """Peak and recomputation, exactly, for per-block patterns nested up to 3 levels."""
    spec, costs, blocks, batch, baseline = fitted[kind]
    rng = random.Random(kind)
    count = 12 if kind == "transformer" else 25  # the transformer's steps are the slow ones
    policies = [random_segments(0, spec.blocks, 0, rng) for _ in range(count)]
    policies += [uniform_segments(spec.blocks, 1), (Segment(0, spec.blocks, False),)]
    for segments in policies:
        peak, flops = measure_point(blocks, Plan("nested", segments), batch, seed=spec.seed)
        assert plan_cost(costs, segments) == (peak, flops - baseline), segments


def every_segment_policy(start: int, end: int, depth: int = 0):
    """Every tiling of start…end into unchecked and checkpointed segments, a checkpointed
    one holding any such tiling one level deeper (3 levels at most)."""
    if start == end:
        yield ()
        return
    for stop in range(start + 1, end + 1):
        heads = [Segment(start, stop, False), Segment(start, stop, True)]
        if depth < 2:
            heads += [
                Segment(start, stop, True, children)
                for children in every_segment_policy(start, stop, depth + 1)
                if any(child.checkpoint for child in children)
            ]
        for head in heads:
            for rest in every_segment_policy(stop, end, depth):
                yield (head, *rest)


@pytest.mark.parametrize("kind", list(TINY))
def test_optimum_is_the_least_recomputation_of_every_nested_policy_at_every_budget(fitted, kind):
    """The dynamic programme against brute force over all 19,167 policies of 5 blocks
    (nested up to 3 levels) under the fitted cost model."""
    costs = replace(fitted[kind][1], blocks=5)
    points = sorted(plan_cost(costs, segments) for segments in every_segment_policy(0, 5))
    assert len(points) == 19167
    frontiers = Frontiers(costs)
    within: dict[int, int] = {}  # peak -> least recomputation of a policy within it
    for peak, flops in points:
        within[peak] = min(flops, *within.values()) if within else flops
    previous = None
    for peak, least in within.items():
        below = frontiers.optimum(peak - 1)
        assert (None if below is None else below.recompute_flops) == previous, peak
        optimum = frontiers.optimum(peak)
        assert optimum.recompute_flops == least, peak
        assert optimum.peak_bytes <= peak, peak
        assert plan_cost(costs, optimum.segments) == (optimum.peak_bytes, least)
        previous = least


@pytest.mark.parametrize("kind", ["chain", "transformer"])
def test_reference_is_the_best_measured_policy_of_any_kind(kind):
    """Brute force with the meter itself on a 3-block model: every segment policy (nested
    ones included) and every selective policy measured; the reference's optimum is the
    least recomputation among those within the budget."""
    spec = ModelSpec(**{**TINY[kind].as_dict(), "blocks": 3})
    blocks = build_blocks(spec, torch.device("cpu"))
    batch = make_batch(spec, torch.device("cpu"))
    plans = [Plan("nested", segments) for segments in every_segment_policy(0, 3)]
    plans += [
        parse_policy({"kind": "selective", "save": [op for op in saved if op]}, 3)
        for saved in product(*[(op, None) for op in ("matmul", "attention", "norm", "pointwise")])
    ]
    baseline = measure_point(blocks, Plan("none", (Segment(0, 3, False),)), batch, seed=0)[1]
    points = []
    for plan in plans:
        peak, flops = measure_point(blocks, plan, batch, seed=spec.seed)
        points.append((peak, flops - baseline))
    peaks = sorted({peak for peak, _ in points})
    for budget in (peaks[len(peaks) // 3], peaks[-2]):  # each budget: a reference
        reference = lab_reference(spec, budget)
        best = min(flops for peak, flops in points if peak <= budget)
        assert reference["optimal_recompute_flops"] == best, budget
        assert reference["optimal_peak_activation_bytes"] <= budget


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
        (
            {"kind": "boundaries", "segments": [{"start": 0, "end": 8, "checkpoint": True}]},
            "in no segment",
        ),
        # Found in review: these were accepted (a missing checkpoint silently became false).
        ({"kind": "boundaries", "segments": [{"start": 0, "end": 16}]}, "needs 'checkpoint'"),
        ({"kind": "selective", "save": ["norm", "norm"]}, "'norm' named twice"),
        ('{"kind": "sqrt", "kind": "none"}', "'kind' appears twice"),
        (
            '{"kind": "boundaries", "segments": [{"start": 0, "end": 16, "checkpoint": true,'
            ' "checkpoint": false}]}',
            "'checkpoint' appears twice",
        ),
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
    assert result["device"] == "cpu"
    assert result["torch_version"] == torch.__version__
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
