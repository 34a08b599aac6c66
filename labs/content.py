"""The labs as authored in ``content/labs.yaml``, validated before they reach the database."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities.content import ContentError, read_yaml, texts_by_language

from .runner.spec import ModelSpec, SpecError

LABS_FILE = Path(__file__).parent / "content" / "labs.yaml"


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
    labs = []
    for entry in entries:
        slug = str(entry.get("slug", ""))
        if not slug:
            raise ContentError("every lab needs a slug")
        try:
            model = ModelSpec(**entry["model"])
        except (SpecError, TypeError, KeyError) as error:
            raise ContentError(f"{slug}: model: {error}") from None
        budget = entry.get("budget_bytes")
        if not isinstance(budget, int) or budget <= 0:
            raise ContentError(f"{slug}: budget_bytes must be a positive number of bytes")
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
                max_runs=int(entry.get("max_runs", 10)),
                grading_method=method,
            )
        )
    return labs
