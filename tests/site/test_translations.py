"""The interface catalogues are complete and the compiled .mo files match the .po files."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.utils import translation

from assessments.models import Attempt, AttemptState
from gradesync.models import SyncState
from labs.models import LabRun, RunStatus
from labs.runner.spec import MODEL_KINDS

LOCALE_DIR = Path(settings.BASE_DIR) / "locale"
PLACEHOLDER = re.compile(r"%\(\w+\)s")


def test_russian_catalogue_translates_every_string_keeping_placeholders():
    po = polib.pofile(str(LOCALE_DIR / "ru/LC_MESSAGES/django.po"))
    assert po.untranslated_entries() == []
    assert po.fuzzy_entries() == []
    assert len(po.translated_entries()) > 50
    for entry in po.translated_entries():
        expected = sorted(PLACEHOLDER.findall(entry.msgid))
        translations = entry.msgstr_plural.values() if entry.msgid_plural else [entry.msgstr]
        for text in translations:
            assert sorted(PLACEHOLDER.findall(text)) == expected, entry.msgid


@pytest.mark.parametrize("language", [code for code, _ in settings.LANGUAGES])
def test_compiled_catalogue_is_up_to_date(language):
    po = polib.pofile(str(LOCALE_DIR / language / "LC_MESSAGES/django.po"))
    mo = polib.mofile(str(LOCALE_DIR / language / "LC_MESSAGES/django.mo"))
    compiled = {entry.msgid: entry.msgstr for entry in mo if entry.msgid}
    expected = {entry.msgid: entry.msgstr for entry in po.translated_entries()}
    assert compiled == expected


# --- Russian pages show no English interface string -----------------------------------

TAG = re.compile(r"<[^>]+>")
SCRIPT = re.compile(r"<script(?![^>]*application/json)[^>]*>.*?</script>", re.S)
ATTRIBUTE = re.compile(r'\b(?:aria-label|title|alt|placeholder)="([^"]*)"')
SWITCH = re.compile(r'<form class="language-switch".*?</form>', re.S)
FIELD = re.compile(r"%\([a-z_]+\)[sd]|\{\{.*?\}\}")


RAW_CODES = [
    *(status.value for status in RunStatus),
    *(state.value for state in AttemptState),
    *(state.value for state in SyncState),
    *MODEL_KINDS,
]


def english_interface_strings() -> list[tuple[str, re.Pattern]]:
    """Every interface string of the catalogue whose Russian differs from its English: the
    whole string, or for one with placeholders its longest literal piece."""
    po = polib.pofile(str(LOCALE_DIR / "ru/LC_MESSAGES/django.po"))
    found = []
    for entry in po.translated_entries():
        for msgid in filter(None, (entry.msgid, entry.msgid_plural)):
            text = msgid.replace("%%", "%")
            piece = max(FIELD.split(text), key=len).strip(" .,:;·()")
            if len(piece) < 3 or piece in (entry.msgstr, *entry.msgstr_plural.values()):
                continue
            found.append((msgid, _word(piece)))
    # Stored codes must reach pages as their labels ("succeeded" is "Измерен").
    for code in RAW_CODES:
        found.append((code, _word(code)))
    return found


def _word(text: str) -> re.Pattern:
    return re.compile(rf"(?<![\w.-]){re.escape(text)}(?![\w-])")


def visible_text(html: str) -> str:
    # The language switch names each language in that language ("English") on purpose.
    html = SWITCH.sub(" ", html)
    attributes = " ".join(ATTRIBUTE.findall(html))
    body = TAG.sub(" ", SCRIPT.sub(" ", html))
    return unescape(f"{body} {attributes}")


@pytest.fixture
def russian_pages(db, quiz, fake_lms):  # noqa: ARG001
    """The main pages of both flows, quiz and lab, as a Russian reader gets them. The
    requests activate Russian in this thread; it is put back when the test ends, or later
    tests in this process would read Russian messages."""
    with translation.override("en"):
        yield _russian_pages()


def _russian_pages():
    from activities.demo import enrol_demo_member, ensure_demo_placement
    from analytics.demo_data import generate_demo_data, generate_demo_lab_runs
    from lti.models import Role
    from tests.labs_helpers import lab_placement, small_lab
    from tests.quiz_helpers import current_form, launched_client, start

    placement = ensure_demo_placement()
    generate_demo_data(placement, 30, seed=4)
    lab = lab_placement(placement.context, small_lab())
    generate_demo_lab_runs(lab, seed=1, share=0.2, policies=({"kind": "every_block"},))
    learner = launched_client(enrol_demo_member(Role.LEARNER, "ru"))
    staff = launched_client(enrol_demo_member(Role.STAFF, "ru"))
    for client in (learner, staff):
        client.defaults["HTTP_ACCEPT_LANGUAGE"] = "ru"
    attempt = start(learner, placement.pk)
    question, options = current_form(learner, attempt)
    learner.post(
        f"/attempts/{attempt.public_id}/answer/", {"question": question.pk, "option": options[0]}
    )
    finished = Attempt.objects.filter(placement=placement, state="finished").first()
    run = LabRun.objects.filter(placement=lab).first()
    return {
        "home": (learner, "/"),
        "quiz": (learner, f"/quiz/{placement.pk}/"),
        "question": (learner, f"/attempts/{attempt.public_id}/"),
        "feedback": (learner, f"/attempts/{attempt.public_id}/questions/1/feedback/"),
        "review": (
            launched_client_for(finished.user, placement),
            f"/attempts/{finished.public_id}/summary/",
        ),
        "lab": (learner, f"/lab/{lab.pk}/"),
        "lab-run": (launched_client_for(run.user, lab), f"/runs/{run.public_id}/"),
        "dashboard": (staff, f"/dashboard/{placement.pk}/"),
        "manage": (staff, f"/quiz/{placement.pk}/manage/"),
        "lab-dashboard": (staff, f"/dashboard/{lab.pk}/"),
        "lab-manage": (staff, f"/lab/{lab.pk}/manage/"),
        "not-found": (learner, "/quiz/999999/"),
    }


def launched_client_for(user, placement):
    from lti.models import Membership
    from tests.quiz_helpers import launched_client

    client = launched_client(Membership.objects.get(user=user, context=placement.context))
    client.defaults["HTTP_ACCEPT_LANGUAGE"] = "ru"
    return client


@pytest.mark.torch
def test_russian_pages_show_no_english_interface_string(russian_pages):
    strings = english_interface_strings()
    assert len(strings) > 200
    leaks = {}
    for name, (client, url) in russian_pages.items():
        response = client.get(url)
        assert response.status_code in (200, 403, 404), (name, response.status_code)
        html = response.content.decode()
        assert '<html lang="ru">' in html, name
        text = visible_text(html)
        found = sorted({msgid for msgid, pattern in strings if pattern.search(text)})
        if found:
            leaks[name] = found
    assert leaks == {}
