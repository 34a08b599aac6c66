"""Running the lab runner in a child process: one run, one process.

The child is ``python -m labs.runner``, the same command a person runs by hand. A process
of its own gives each run a hard time limit and a memory cap, and a crash or an
out-of-memory kill takes down the run, not the worker. The outcome says whose failure it
was: the policy's (the runner refused it, exit status 2) or the infrastructure's
(anything else), which is retried and never graded.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

EXIT_INVALID = 2  # labs.runner.__main__.EXIT_INVALID, without importing torch here
PROJECT_ROOT = Path(__file__).resolve().parent.parent


class OutcomeKind(StrEnum):
    MEASURED = "measured"  # with the figures
    REJECTED = "rejected"  # the policy is at fault: with the runner's reason
    INFRASTRUCTURE = "infrastructure"  # the machine is at fault: with what went wrong


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    result: dict[str, Any] | None = None
    message: str = ""
    # A policy's refusal as the runner's template and the values that fill it (``template``,
    # ``params``), which the service says in the reader's language; None for other reasons.
    refusal: dict[str, Any] | None = None


def _refusal(answer: Any) -> dict[str, Any] | None:
    template, params = answer.get("template"), answer.get("params")
    if isinstance(template, str) and isinstance(params, dict):
        return {"template": template, "params": params}
    return None


def runner_command(
    model: dict[str, Any], policy: Any, budget_bytes: int, device: str, repeats: int
) -> list[str]:
    """The runner's command for a run (``policy``: the text the service validated, given
    as it is) or, with ``policy`` None, for the lab's reference."""
    command = [sys.executable, "-m", "labs.runner", "--model", model["kind"]]
    for name in ("blocks", "width", "batch", "sequence", "heads", "dropout", "seed"):
        command += [f"--{name}", str(model[name])]
    command += ["--budget-bytes", str(budget_bytes), "--device", device]
    if policy is None:
        return [*command, "--reference-only"]
    return [*command, "--policy", policy, "--reference", "-", "--repeats", str(repeats)]


def _limit_memory(cap_bytes: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    return apply


def _on_cpu(device: str) -> bool:
    """CUDA maps far more address space than it uses, so the cap applies to CPU runs only."""
    return device == "cpu" or (device == "auto" and not Path("/dev/nvidiactl").exists())


def _tail(text: str, limit: int = 2000) -> str:
    return text[-limit:].strip()


def execute(
    model: dict[str, Any],
    policy: str | None,
    budget_bytes: int,
    *,
    device: str,
    repeats: int,
    timeout_seconds: float,
    memory_cap_bytes: int | None,
    reference: dict[str, Any] | None = None,
) -> Outcome:
    """Run ``policy`` (its text) graded against ``reference``, or with ``policy`` None
    compute the lab's reference."""
    command = runner_command(model, policy, budget_bytes, device, repeats)
    limit = _limit_memory(memory_cap_bytes) if memory_cap_bytes and _on_cpu(device) else None
    try:
        finished = subprocess.run(
            command,
            input=None if policy is None else json.dumps(reference),
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_seconds,
            preexec_fn=limit,  # noqa: PLW1509 (no threads touch the child before exec)
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return Outcome(
            OutcomeKind.INFRASTRUCTURE, message=f"the run took longer than {timeout_seconds:g} s"
        )
    except OSError as error:
        return Outcome(OutcomeKind.INFRASTRUCTURE, message=f"the runner could not start: {error}")
    if finished.returncode == EXIT_INVALID:
        try:
            answer = json.loads(finished.stdout)
            reason = answer["error"]
        except (ValueError, KeyError, TypeError):
            return Outcome(
                OutcomeKind.INFRASTRUCTURE, message=_tail(finished.stderr or finished.stdout)
            )
        return Outcome(OutcomeKind.REJECTED, message=str(reason), refusal=_refusal(answer))
    if finished.returncode != 0:
        how = (
            f"killed by signal {-finished.returncode}"
            if finished.returncode < 0
            else f"exit status {finished.returncode}"
        )
        return Outcome(OutcomeKind.INFRASTRUCTURE, message=f"{how}: {_tail(finished.stderr)}")
    try:
        result = json.loads(finished.stdout)
    except ValueError:
        return Outcome(OutcomeKind.INFRASTRUCTURE, message="the runner printed no result")
    return Outcome(OutcomeKind.MEASURED, result=result)
