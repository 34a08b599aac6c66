"""Every preset policy of every shipped lab on the CPU and on CUDA, side by side.

    python -m bench.labs_gpu_check [--labs SLUG ...] [--repeats 1]      (make labs-gpu-check)

For each lab and each preset policy (no checkpointing, every block, √N, segments, the
selective subsets, and the lab's optimal policy) it runs `python -m labs.runner` once per
device, as a worker does, against the lab's reference computed on that device, and prints
both scores, both exact peaks, both recomputations, grads_match and CUDA's
max_memory_allocated over the step. The graded figures (peak, recomputation, score) must be
equal in both columns: a difference is a device dependence the lab must not have, and the
script exits with status 1. On a machine without CUDA it says so and prints the CPU
column alone. It takes a few minutes on one GPU (the CPU column is the slow one).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from labs.content import parse_labs
from labs.execution import runner_command
from labs.runner.policies import policy_text

GRADED = ("peak_activation_bytes", "recompute_flops", "score")
PRESETS = [
    {"kind": "none"},
    {"kind": "every_block"},
    {"kind": "sqrt"},
    {"kind": "segments", "size": 4},
    {"kind": "selective", "save": []},
    {"kind": "selective", "save": ["matmul"]},
    {"kind": "selective", "save": ["attention"]},
    {"kind": "selective", "save": ["norm"]},
    {"kind": "selective", "save": ["pointwise"]},
    {"kind": "selective", "save": ["matmul", "attention"]},
]


def cuda_available() -> bool:
    done = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip() == "True"


def runner(model: dict, policy: str | None, budget: int, device: str, reference=None) -> dict:
    command = runner_command(model, policy, budget, device, repeats=1)
    done = subprocess.run(
        command,
        input=None if reference is None else json.dumps(reference),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(command[:4])}… failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def cell(result: dict | None, key: str, scale: float = 1.0, digits: int = 3) -> str:
    if result is None or result.get(key) is None:
        return "—"
    value = result[key]
    return f"{value / scale:.{digits}f}" if isinstance(value, int | float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--labs", nargs="*", help="slugs (default: every shipped lab)")
    args = parser.parse_args()
    devices = ["cpu", "cuda"] if cuda_available() else ["cpu"]
    if devices == ["cpu"]:
        print("No CUDA device here: printing the CPU column alone.")
    differences = 0
    for lab in parse_labs():
        if args.labs and lab.slug not in args.labs:
            continue
        model, budget = lab.model.as_dict(), lab.budget_bytes
        started = time.perf_counter()
        references = {device: runner(model, None, budget, device) for device in devices}
        seconds = time.perf_counter() - started
        print(f"\n## {lab.slug} (budget {budget} bytes; references in {seconds:.0f} s)")
        for device, reference in references.items():
            print(
                f"- {device}: optimum {reference['optimal_recompute_flops']} FLOPs at "
                f"{reference['optimal_peak_activation_bytes']} bytes: "
                f"{json.dumps(reference['optimal_policy'])}"
            )
        header = ["policy"]
        for device in devices:
            header += [f"{device} score", f"{device} peak (MB)", f"{device} recomputed (GFLOP)"]
        header += ["grads match", "CUDA max allocated (MB)"]
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        optimal = references["cpu"]["optimal_policy"]
        for policy in [*PRESETS, optimal]:
            results = {
                device: runner(model, policy_text(policy), budget, device, references[device])
                for device in devices
            }
            row = [json.dumps(policy, separators=(",", ":"))[:60]]
            for device in devices:
                result = results[device]
                if "error" in result:
                    row += [result["error"][:40], "—", "—"]
                    continue
                row += [
                    cell(result, "score"),
                    cell(result, "peak_activation_bytes", 1e6),
                    cell(result, "recompute_flops", 1e9),
                ]
            row.append(" / ".join(cell(results[d], "grads_match") for d in devices))
            row.append(cell(results.get("cuda"), "cuda_max_memory_allocated_bytes", 1e6))
            print("| " + " | ".join(row) + " |")
            graded = [
                tuple(
                    results[d].get(k) for k in ("peak_activation_bytes", "recompute_flops", "score")
                )
                for d in devices
            ]
            if len(set(graded)) > 1:
                differences += 1
                print(f"  DIFFERENT graded figures on {devices}: {graded}")
    if differences:
        print(f"\n{differences} policies graded differently by device")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
