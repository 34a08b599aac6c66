"""The policy builder and the schedule settings."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import forms
from django.core.validators import MaxValueValidator
from django.utils.translation import gettext_lazy as _

from activities.models import GradingMethod

from .errors import policy_refusal
from .models import LabSchedule, storable_moment
from .runner.policies import MAX_POLICY_CHARS, OP_KINDS, PolicyError, parse_policy

OP_KIND_LABELS = {
    "matmul": _("Matrix multiplications"),
    "attention": _("Attention"),
    "norm": _("Normalisations"),
    "pointwise": _("Pointwise ops (activations, additions, dropout)"),
}


class PolicyForm(forms.Form):
    """Students describe a policy without writing code: a named schedule, a picture of the
    layers (mark the blocks to recompute and where segments split), the op kinds that
    selective checkpointing keeps, or JSON for anything else (nested segments)."""

    kind = forms.ChoiceField(
        label=_("Policy"),
        widget=forms.RadioSelect,
        choices=[
            ("none", _("No checkpointing")),
            ("every_block", _("Checkpoint every block")),
            ("segments", _("Segments of a fixed size")),
            ("sqrt", _("√N segments")),
            ("layers", _("Choose on the picture of the layers")),
            ("selective", _("Selective: keep the outputs of some op kinds, recompute the rest")),
            ("json", _("Write the policy as JSON")),
        ],
        initial="layers",
    )
    size = forms.IntegerField(label=_("Segment size (blocks)"), required=False, min_value=1)
    recompute = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    cuts = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    save = forms.MultipleChoiceField(
        label=_("Op kinds to keep"), required=False, widget=forms.CheckboxSelectMultiple
    )
    policy_json = forms.CharField(
        label=_("Policy as JSON"),
        required=False,
        max_length=MAX_POLICY_CHARS,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "autocomplete": "off"}),
    )

    def __init__(
        self, *args: Any, blocks: int, op_kinds: tuple[str, ...] = OP_KINDS, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.blocks = blocks
        # Only the op kinds this model runs: a chain of Linear+ReLU has no attention.
        self.fields["save"].choices = [(kind, OP_KIND_LABELS[kind]) for kind in op_kinds]
        self.fields["size"].validators.append(MaxValueValidator(blocks))
        self.fields["recompute"].choices = [(str(i), str(i)) for i in range(blocks)]
        self.fields["cuts"].choices = [(str(i), str(i)) for i in range(1, blocks)]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind = data.get("kind")
        if kind in ("none", "every_block", "sqrt"):
            data["policy"] = {"kind": kind}
        elif kind == "segments":
            if not data.get("size"):
                self.add_error("size", _("Give the segment size."))
            else:
                data["policy"] = {"kind": "segments", "size": data["size"]}
        elif kind == "layers":
            data["policy"] = self._policy_from_layers(
                {int(i) for i in data.get("recompute", [])}, {int(i) for i in data.get("cuts", [])}
            )
        elif kind == "selective":
            data["policy"] = {"kind": "selective", "save": sorted(data.get("save", []))}
        elif kind == "json":
            text = data.get("policy_json") or ""
            try:
                json.loads(text)
                # The text itself goes on: the service parses it strictly (a field given
                # twice is refused, where json.loads would keep the last silently).
                data["policy"] = text
            except json.JSONDecodeError as error:
                self.add_error("policy_json", _("This is not valid JSON: %s") % error.msg)
            except (ValueError, RecursionError):
                # Python refuses numbers of thousands of digits and nesting too deep to parse.
                self.add_error("policy_json", _("This JSON is too large or too deeply nested."))
        if "policy" in data:
            try:
                parse_policy(data["policy"], self.blocks)
            except PolicyError as error:
                del data["policy"]
                self.add_error("policy_json" if kind == "json" else None, policy_refusal(error))
        return data

    def _policy_from_layers(self, recompute: set[int], cuts: set[int]) -> dict[str, Any]:
        """Consecutive blocks with the same mark and no split between them form a segment;
        marked segments are checkpointed."""
        segments: list[dict[str, Any]] = []
        for block in range(self.blocks):
            checkpointed = block in recompute
            if segments and block not in cuts and segments[-1]["checkpoint"] == checkpointed:
                segments[-1]["end"] = block + 1
            else:
                segments.append({"start": block, "end": block + 1, "checkpoint": checkpointed})
        return {"kind": "boundaries", "segments": segments}


def validate_moment(value: datetime | None) -> None:
    """A date the database and every LMS can store, whatever the time zone."""
    if value is not None and not storable_moment(value):
        raise forms.ValidationError(_("Choose a date between the years 1900 and 9000."))


LAB_METHOD_LABELS = {GradingMethod.HIGHEST: _("Best run"), GradingMethod.LAST: _("Last run")}


class ScheduleForm(forms.ModelForm):
    grading_method = forms.ChoiceField(
        label=_("Grade from"),
        required=False,
        choices=[("", _("The lab's default")), *LAB_METHOD_LABELS.items()],
    )

    class Meta:
        model = LabSchedule
        fields = [
            "opens_at",
            "due_at",
            "closes_at",
            "max_runs",
            "grading_method",
            "late_policy",
            "late_penalty_percent",
        ]
        labels = {
            "opens_at": _("Opens at"),
            "due_at": _("Due at"),
            "closes_at": _("Closes at (late runs until then)"),
            "max_runs": _("Runs allowed (empty = the lab's default, 0 = unlimited)"),
            "late_policy": _("Late runs"),
            "late_penalty_percent": _("Late penalty (%)"),
        }
        help_texts = {"closes_at": "", "max_runs": ""}
        widgets = {
            name: forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
            for name in ("opens_at", "due_at", "closes_at")
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        penalty = self.fields["late_penalty_percent"]
        penalty.validators.append(MaxValueValidator(100))
        penalty.widget.attrs["max"] = 100
        for name in ("opens_at", "due_at", "closes_at"):
            self.fields[name].validators.append(validate_moment)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name in ("opens_at", "due_at", "closes_at"):
            # The page shows times to the minute: one sent back as shown is the stored time
            # (which may have seconds, from deep linking), not a change of the schedule.
            value, stored = cleaned.get(name), getattr(self.instance, name)
            if value and stored and value == stored.replace(second=0, microsecond=0):
                cleaned[name] = stored
        return cleaned
