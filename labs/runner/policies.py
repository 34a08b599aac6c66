"""Checkpointing policies as data.

Students describe a policy in JSON; it is validated strictly and turned into a plan of
segments before anything runs. Every kind reduces to the same plan: a list of segments that
tile the blocks, each checkpointed or not, possibly with segments inside, plus the op kinds
that selective checkpointing keeps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OP_KINDS",
    "POLICY_KINDS",
    "Plan",
    "PolicyError",
    "Segment",
    "gettext_noop",
    "parse_policy",
    "policy_text",
    "uniform_segments",
]

POLICY_KINDS = ("none", "every_block", "segments", "sqrt", "boundaries", "nested", "selective")
OP_KINDS = ("matmul", "attention", "norm", "pointwise")
MAX_NESTING = 3
MAX_POLICY_CHARS = 20_000


def gettext_noop(message: str) -> str:
    """Marks a message for the service's translation catalogues (Django's ``makemessages``
    extracts what is passed to a function of this name); the runner imports no Django."""
    return message


class PolicyError(ValueError):
    """The policy is not valid for this model; the message says why, for the student.

    The runner says it in English. ``template`` is that message with ``%(name)s`` fields,
    marked for translation, and ``params`` what fills them (what the student wrote, numbers):
    the service says the same in the student's language (``labs.errors.policy_refusal``)."""

    def __init__(self, template: str, **params: object) -> None:
        super().__init__(template % params)
        self.template, self.params = template, params


@dataclass(frozen=True)
class Segment:
    start: int
    end: int
    checkpoint: bool
    children: tuple[Segment, ...] = ()

    @property
    def length(self) -> int:
        return self.end - self.start

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"start": self.start, "end": self.end, "checkpoint": self.checkpoint}
        if self.children:
            data["segments"] = [child.as_dict() for child in self.children]
        return data


@dataclass(frozen=True)
class Plan:
    """What the runner executes: top-level segments, the op kinds that selective
    checkpointing saves (``None`` when it is not selective) and RNG preservation."""

    kind: str
    segments: tuple[Segment, ...]
    save_ops: frozenset[str] | None = None
    preserve_rng_state: bool = True

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "segments": [segment.as_dict() for segment in self.segments],
            "preserve_rng_state": self.preserve_rng_state,
        }
        if self.save_ops is not None:
            data["save"] = sorted(self.save_ops)
        return data


def uniform_segments(blocks: int, size: int) -> tuple[Segment, ...]:
    """Segments of ``size`` blocks (the last one shorter if it does not divide), all
    checkpointed, a single segment of all blocks included."""
    return tuple(
        Segment(start, min(start + size, blocks), True) for start in range(0, blocks, size)
    )


def sqrt_segment_size(blocks: int) -> int:
    return max(1, round(math.sqrt(blocks)))


def _whole(data: Mapping[str, Any], key: str, lower: int, upper: int) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(gettext_noop("'%(key)s' must be a whole number"), key=key)
    if not lower <= value <= upper:
        raise PolicyError(
            gettext_noop("'%(key)s' must be between %(lower)s and %(upper)s; it is %(value)s"),
            key=key,
            lower=lower,
            upper=upper,
            value=value,
        )
    return value


def _only_keys(data: Mapping[str, Any], allowed: set[str], refusal: str, **params: object) -> None:
    """Refuses fields not ``allowed`` with ``refusal``, whose ``%(fields)s`` names them."""
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PolicyError(refusal, fields=_listed(unknown), **params)


def _listed(names: Iterable[str]) -> str:
    return ", ".join(map(repr, names))


_UNCOVERED = gettext_noop("blocks %(first)s–%(last)s are in no segment")


def _segments(raw: Any, start: int, end: int, depth: int, max_depth: int) -> tuple[Segment, ...]:
    if not isinstance(raw, list) or not raw:
        raise PolicyError(
            gettext_noop("'segments' for blocks %(start)s–%(end)s must be a non-empty list"),
            start=start,
            end=end,
        )
    if len(raw) > end - start:
        raise PolicyError(
            gettext_noop("more segments than blocks in blocks %(start)s–%(end)s"),
            start=start,
            end=end,
        )
    segments = []
    position = start
    for item in raw:
        if not isinstance(item, dict):
            raise PolicyError(
                gettext_noop("each segment must be an object with start, end and checkpoint")
            )
        _only_keys(
            item,
            {"start", "end", "checkpoint", "segments"},
            gettext_noop("unknown field(s) in a segment: %(fields)s"),
        )
        missing = [key for key in ("start", "end", "checkpoint") if key not in item]
        if missing:
            raise PolicyError(gettext_noop("a segment needs %(fields)s"), fields=_listed(missing))
        first = _whole(item, "start", 0, end)
        last = _whole(item, "end", 0, end)
        if first < position:
            raise PolicyError(
                gettext_noop("segment %(first)s–%(last)s overlaps the one before it"),
                first=first,
                last=last,
            )
        if first > position:
            raise PolicyError(_UNCOVERED, first=position, last=first)
        if last <= first or last > end:
            raise PolicyError(
                gettext_noop(
                    "segment %(first)s–%(last)s must end after it starts, by %(end)s at most"
                ),
                first=first,
                last=last,
                end=end,
            )
        checkpoint = item["checkpoint"]
        if not isinstance(checkpoint, bool):
            raise PolicyError(gettext_noop("'checkpoint' must be true or false"))
        children: tuple[Segment, ...] = ()
        if "segments" in item:
            if depth + 1 >= max_depth:
                if max_depth == 1:
                    raise PolicyError(gettext_noop("segments cannot be nested here"))
                raise PolicyError(
                    gettext_noop("segments nest at most %(depth)s deep"), depth=max_depth
                )
            children = _segments(item["segments"], first, last, depth + 1, max_depth)
        segments.append(Segment(first, last, checkpoint, children))
        position = last
    if position != end:
        raise PolicyError(_UNCOVERED, first=position, last=end)
    return tuple(segments)


_FIELDS = {
    "none": set(),
    "every_block": set(),
    "sqrt": set(),
    "segments": {"size"},
    "boundaries": {"segments"},
    "nested": {"segments"},
    "selective": {"save"},
}


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise PolicyError(
                gettext_noop("the field %(key)s appears twice in one object"), key=repr(key)
            )
        seen.add(key)
    return dict(pairs)


def policy_text(policy: Any) -> str:
    """The one text of a policy that the service validates and the runner receives:
    compact JSON with sorted keys (a stored JSON object keeps neither order nor spacing)."""
    return json.dumps(policy, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_policy(raw: str | Mapping[str, Any], blocks: int) -> Plan:
    """Validate a policy for a model of ``blocks`` blocks and return its plan, or raise
    :class:`PolicyError` with a message that says what is wrong. Text is parsed strictly:
    a field given twice in one object is refused (JSON would keep the last silently)."""
    if isinstance(raw, str):
        raw = _decoded(raw)
    if not isinstance(raw, Mapping):
        raise PolicyError(gettext_noop("the policy must be a JSON object with a 'kind'"))
    kind = raw.get("kind")
    if kind not in POLICY_KINDS:
        raise PolicyError(
            gettext_noop("unknown policy kind %(kind)s; choose one of %(kinds)s"),
            kind=repr(kind),
            kinds=", ".join(POLICY_KINDS),
        )
    _only_keys(
        raw,
        {"kind", "preserve_rng_state"} | _FIELDS[kind],
        gettext_noop("unknown field(s) in a '%(kind)s' policy: %(fields)s"),
        kind=kind,
    )
    preserve = raw.get("preserve_rng_state", True)
    if not isinstance(preserve, bool):
        raise PolicyError(gettext_noop("'preserve_rng_state' must be true or false"))

    save_ops: frozenset[str] | None = None
    if kind == "none":
        segments: tuple[Segment, ...] = (Segment(0, blocks, False),)
    elif kind == "every_block":
        segments = uniform_segments(blocks, 1)
    elif kind == "segments":
        segments = uniform_segments(blocks, _whole(raw, "size", 1, blocks))
    elif kind == "sqrt":
        segments = uniform_segments(blocks, sqrt_segment_size(blocks))
    elif kind in ("boundaries", "nested"):
        segments = _segments(
            raw.get("segments"), 0, blocks, 0, MAX_NESTING if kind == "nested" else 1
        )
    else:
        save_ops = _save_ops(raw.get("save"))
        segments = uniform_segments(blocks, 1)
    return Plan(kind, segments, save_ops, preserve)


def _decoded(text: str) -> Any:
    """The policy's JSON text parsed strictly, or a PolicyError saying what is wrong."""
    if len(text) > MAX_POLICY_CHARS:
        raise PolicyError(
            gettext_noop("the policy is too long (over %(limit)s characters)"),
            limit=MAX_POLICY_CHARS,
        )
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_keys)
    except json.JSONDecodeError as error:
        raise PolicyError(
            gettext_noop("the policy is not valid JSON: %(detail)s"), detail=error.msg
        ) from None
    except PolicyError:
        raise
    except (ValueError, RecursionError):
        raise PolicyError(gettext_noop("the policy is too large or too deeply nested")) from None


def _save_ops(save: Any) -> frozenset[str]:
    """A selective policy's op kinds to keep: known kinds, each named once."""
    if not isinstance(save, list) or not all(isinstance(op, str) for op in save):
        raise PolicyError(
            gettext_noop("'save' must be a list of op kinds from %(kinds)s"),
            kinds=", ".join(OP_KINDS),
        )
    unknown = sorted(set(save) - set(OP_KINDS))
    if unknown:
        raise PolicyError(gettext_noop("unknown op kind(s) %(kinds)s"), kinds=_listed(unknown))
    repeated = sorted({op for op in save if save.count(op) > 1})
    if repeated:
        raise PolicyError(
            gettext_noop("op kind(s) %(kinds)s named twice in 'save'"), kinds=_listed(repeated)
        )
    return frozenset(save)
