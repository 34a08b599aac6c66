"""The interface catalogues are complete and the compiled .mo files match the .po files."""

from __future__ import annotations

import re
from pathlib import Path

import polib
import pytest
from django.conf import settings

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
        for translation in translations:
            assert sorted(PLACEHOLDER.findall(translation)) == expected, entry.msgid


@pytest.mark.parametrize("language", [code for code, _ in settings.LANGUAGES])
def test_compiled_catalogue_is_up_to_date(language):
    po = polib.pofile(str(LOCALE_DIR / language / "LC_MESSAGES/django.po"))
    mo = polib.mofile(str(LOCALE_DIR / language / "LC_MESSAGES/django.mo"))
    compiled = {entry.msgid: entry.msgstr for entry in mo if entry.msgid}
    expected = {entry.msgid: entry.msgstr for entry in po.translated_entries()}
    assert compiled == expected
