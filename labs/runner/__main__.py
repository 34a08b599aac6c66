"""``python -m labs.runner``: measure one checkpointing policy and print one JSON object.

Exit status 0 with the figures; 2 with ``{"error": ...}`` when the model or the policy is
invalid (nothing ran), a policy's refusal with its ``template`` and ``params`` too, so that
the service can say it in the student's language; anything else is a failure of the
machine, not of the policy.
``--reference-only`` prints the lab's reference (the optimum within the budget) instead;
``--reference -`` reads one from standard input and grades against it.
"""

from __future__ import annotations

import argparse
import json
import sys

from .policies import PolicyError
from .reference import lab_reference
from .run import resolve_device, run_lab
from .spec import MODEL_KINDS, ModelSpec, SpecError

EXIT_INVALID = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m labs.runner", description=__doc__)
    parser.add_argument("--model", choices=MODEL_KINDS, default="chain")
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--sequence", type=int, default=1, help="transformer only")
    parser.add_argument("--heads", type=int, default=1, help="transformer only")
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", help='JSON, e.g. \'{"kind": "sqrt"}\'')
    parser.add_argument(
        "--reference", help="'-': read the lab's reference (JSON) from standard input"
    )
    parser.add_argument(
        "--reference-only", action="store_true", help="print the reference for the budget"
    )
    parser.add_argument("--budget-bytes", type=int, default=None)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--repeats", type=int, default=5, help="timed steps after a warm-up")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        spec = ModelSpec(
            kind=args.model,
            blocks=args.blocks,
            width=args.width,
            batch=args.batch,
            sequence=args.sequence,
            heads=args.heads,
            dropout=args.dropout,
            seed=args.seed,
        )
        if args.reference_only:
            if args.budget_bytes is None:
                raise ValueError("--reference-only needs --budget-bytes")
            result = lab_reference(spec, args.budget_bytes, resolve_device(args.device))
        else:
            if args.policy is None:
                raise ValueError("give --policy (or --reference-only)")
            reference = None
            if args.reference == "-":
                reference = json.loads(sys.stdin.read())
            elif args.reference is not None:
                raise ValueError("--reference takes '-' (the reference on standard input)")
            result = run_lab(
                spec,
                args.policy,
                budget_bytes=args.budget_bytes,
                device=args.device,
                repeats=max(args.repeats, 0),
                reference=reference,
            )
    except PolicyError as error:
        refusal = {"error": str(error), "template": error.template, "params": error.params}
        print(json.dumps(refusal, default=str))
        return EXIT_INVALID
    except (SpecError, ValueError) as error:
        print(json.dumps({"error": str(error)}))
        return EXIT_INVALID
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
