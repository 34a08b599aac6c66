"""The labs as authored in ``content/labs.yaml``, validated before they reach the database."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities.content import ContentError, read_yaml, slug_of, texts_by_language, whole_number

from .runner.spec import ModelSpec, SpecError

LABS_FILE = Path(__file__).parent / "content" / "labs.yaml"
# The columns' ranges: Lab.max_runs (PositiveIntegerField), Lab.budget_bytes
# (PositiveBigIntegerField), Lab.seed (IntegerField).
INT_MAX = 2**31 - 1
BIGINT_MAX = 2**63 - 1


@dataclass(frozen=True)
class LabContent:
    slug: str
    title: dict[str, str]
    instructions: dict[str, str]
    model: ModelSpec
    budget_bytes: int
    max_runs: int
    grading_method: str

    @property
    def content_hash(self) -> str:
        data = {
            "title": self.title,
            "instructions": self.instructions,
            "model": self.model.as_dict(),
            "budget_bytes": self.budget_bytes,
            "max_runs": self.max_runs,
            "grading_method": self.grading_method,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _texts(entry: dict[str, Any], key: str, slug: str) -> dict[str, str]:
    texts = texts_by_language(entry.get(key), f"{slug}.{key}")
    return {language: text.strip() for language, text in texts.items()}


def parse_labs(path: Path = LABS_FILE) -> list[LabContent]:
    entries = read_yaml(path)
    if not isinstance(entries, list):
        raise ContentError(f"{path}: expected a list of labs")
    labs: list[LabContent] = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise ContentError(f"labs[{number}]: must be a mapping")
        slug = slug_of(entry.get("slug"), f"labs[{number}].slug")
        if any(lab.slug == slug for lab in labs):
            raise ContentError(f"labs[{number}].slug: {slug!r} appears twice")
        try:
            model = ModelSpec(**entry["model"])
        except (SpecError, TypeError, KeyError) as error:
            raise ContentError(f"{slug}: model: {error}") from None
        whole_number(model.seed, f"{slug}.model.seed", -INT_MAX - 1, INT_MAX)
        budget = whole_number(entry.get("budget_bytes"), f"{slug}.budget_bytes", 1, BIGINT_MAX)
        max_runs = whole_number(entry.get("max_runs", 10), f"{slug}.max_runs", 0, INT_MAX)
        method = entry.get("grading_method", "highest")
        if method not in ("highest", "last"):
            raise ContentError(f"{slug}: grading_method is 'highest' or 'last'")
        labs.append(
            LabContent(
                slug=slug,
                title=_texts(entry, "title", slug),
                instructions=_texts(entry, "instructions", slug),
                model=model,
                budget_bytes=budget,
                max_runs=max_runs,
                grading_method=method,
            )
        )
    return labs
