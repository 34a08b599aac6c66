"""Lab runner figures: the CLI on chains of 64 and 256 blocks under several policies, and
the time the optimum's dynamic programme takes.

    python -m bench.labs [--device cpu|cuda] [--blocks 64 256] [--width 256] [--batch 256]
                         [--dp-only]

Runs `python -m labs.runner` once per policy (as a worker does) and prints a Markdown table:
the exact meter's peak beside CUDA's max_memory_allocated (on a GPU), recomputation, the
gradient check and the median step time. Then, for each chain, the cost model's fit and the
dynamic programme over every segment policy (nested up to 3 deep): the optimum at a budget of
18 activations (the tables for every budget are built by it) and the whole optimal frontier.
docs/benchmarks.md records the output.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time

POLICIES = {
    "none": {"kind": "none"},
    "every block": {"kind": "every_block"},
    "segments of 4": {"kind": "segments", "size": 4},
    "√N": {"kind": "sqrt"},
    "segments of 32": {"kind": "segments", "size": 32},
    "selective: keep matmuls": {"kind": "selective", "save": ["matmul"]},
}


def run(device: str, blocks: int, width: int, batch: int, policy: dict, repeats: int) -> dict:
    command = [
        sys.executable, "-m", "labs.runner", "--model", "chain", "--blocks", str(blocks),
        "--width", str(width), "--batch", str(batch), "--policy", json.dumps(policy),
        "--device", device, "--repeats", str(repeats),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def dp_timings(blocks_list: list[int], width: int, batch: int) -> None:
    from labs.runner.fit import fit_block_costs
    from labs.runner.optimum import Frontiers
    from labs.runner.spec import ModelSpec

    print(
        "| N | fit (s) | optimum at 18 activations (s) | recomputed blocks "
        "| frontier (s) | points |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for blocks in blocks_list:
        spec = ModelSpec(kind="chain", blocks=blocks, width=width, batch=batch)
        started = time.perf_counter()
        costs = fit_block_costs(spec)
        fitted = time.perf_counter()
        frontiers = Frontiers(costs)
        optimum = frontiers.optimum(18 * costs.activation + 2 * costs.scalar_bytes)
        solved = time.perf_counter()
        frontier = frontiers.frontier()
        done = time.perf_counter()
        print(
            f"| {blocks} | {fitted - started:.2f} | {solved - fitted:.2f} | "
            f"{optimum.recompute_flops // costs.flops} | {done - solved:.2f} | {len(frontier)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--blocks", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dp-only", action="store_true", help="only the optimum's timings")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, device {args.device}")
    if args.dp_only:
        dp_timings(args.blocks, args.width, args.batch)
        return
    print(
        "| N | policy | exact peak (MiB) | activations | CUDA max allocated (MiB) | "
        "recomputed (GFLOP) | of one forward | grads | step (ms) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for blocks in args.blocks:
        for name, policy in POLICIES.items():
            result = run(args.device, blocks, args.width, args.batch, policy, args.repeats)
            unit = result["activation_unit_bytes"]
            cuda = result.get("cuda_max_memory_allocated_bytes")
            print(
                f"| {blocks} | {name} | {result['peak_activation_bytes'] / 2**20:.2f} | "
                f"{(result['peak_activation_bytes'] - 8) / unit:g} | "
                f"{'—' if cuda is None else f'{cuda / 2**20:.2f}'} | "
                f"{result['recompute_flops'] / 1e9:.3f} | "
                f"{result['recompute_flops'] / result['forward_flops']:.2f} | "
                f"{'equal' if result['grads_match'] else 'DIFFER'} | "
                f"{result['time_ms_median']:.1f} |"
            )
    print(f"torch {result['torch_version']}")
    print()
    dp_timings(args.blocks, args.width, args.batch)


if __name__ == "__main__":
    main()
