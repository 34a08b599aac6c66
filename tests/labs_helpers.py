"""A small lab (a run takes a couple of seconds on the CPU) and its placements."""

from __future__ import annotations

from activities.services import place_activity
from labs.models import Lab
from lti.models import Context, ResourceLink

# 8 blocks of width 16 on a batch of 8: one activation is 512 bytes.
UNIT = 8 * 16 * 4
SCALARS = 8


def small_lab(slug: str = "tiny-chain", budget_units: int = 7, **fields) -> Lab:
    values = {
        "title": {"en": "Tiny chain", "ru": "Маленькая цепочка"},
        "instructions": {"en": "Fit the budget.", "ru": "Уложитесь в бюджет."},
        "model_kind": "chain",
        "blocks": 8,
        "width": 16,
        "batch": 8,
        "budget_bytes": budget_units * UNIT + SCALARS,
        "max_runs": 5,
        "content_hash": "test",
        **fields,
    }
    return Lab.objects.create(slug=slug, **values)


def lab_placement(context: Context, lab: Lab, resource_link_id: str = "lab-1") -> ResourceLink:
    link = ResourceLink(context=context, resource_link_id=resource_link_id, title="Lab")
    place_activity(link, f"lab:{lab.slug}")
    return link
