"""Refusal reasons are translated: a launch refused in a Russian browser, or a launch that
names the Russian locale, reads its reason in Russian; every reason the launch's modules
can give has a Russian text."""

from __future__ import annotations

import ast
from pathlib import Path

import pylti1p3
import pytest
from django.test import Client
from django.utils import translation

import lti
from lti.launch import LIBRARY_REASONS
from tests.lti_platform import ROLE, standard_claims, start_login

pytestmark = pytest.mark.django_db

REFUSING_MODULES = ("launch.py", "oidc.py", "platform_keys.py")


def _texts_marked_for_translation(module: Path) -> list[str]:
    return [
        node.args[0].value
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "_"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]


def test_a_russian_browser_reads_the_reason_in_russian(client):
    response = client.post("/lti/launch/", {"id_token": "x"}, HTTP_ACCEPT_LANGUAGE="ru")
    page = response.content.decode()
    assert response.status_code == 400
    assert "У запуска нет параметра state." in page
    assert "The launch has no state parameter." not in page


def test_a_launch_in_russian_reads_its_refusal_in_russian(platform):
    """The browser asks for English; the launch's locale is Russian, and the launch was not
    started in this browser (no state cookie)."""
    starter = Client()
    auth = start_login(starter, platform, user_id="ru-1")
    signed = platform.authorize(auth, user_id="ru-1", roles=[ROLE + "Learner"], locale="ru-RU")

    response = Client().post("/lti/launch/", signed, HTTP_ACCEPT_LANGUAGE="en")

    page = response.content.decode()
    assert response.status_code == 403
    assert "Этот запуск начат не в этом браузере" in page
    assert "not started in this browser" not in page
    assert translation.get_language() != "ru"  # the thread's language is put back


def test_a_reason_with_details_keeps_them_in_russian(platform, client):
    auth = start_login(client, platform, user_id="ru-2")
    signed = platform.authorize(
        auth,
        user_id="ru-2",
        roles=[ROLE + "Learner"],
        locale="ru",
        extra_claims={"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "9"},
    )
    response = client.post("/lti/launch/", signed)
    assert response.status_code == 400
    assert "Развёртывание &#x27;9&#x27; не зарегистрировано" in response.content.decode()


@pytest.mark.parametrize("module", REFUSING_MODULES)
def test_every_refusal_reason_has_a_russian_text(module):
    texts = _texts_marked_for_translation(Path(lti.__file__).parent / module)
    assert texts, f"lti/{module} marks no text for translation"
    with translation.override("ru"):
        untranslated = [text for text in texts if translation.gettext(text) == text]
    assert untranslated == []


def test_the_librarys_refusal_reads_in_the_launchs_language(platform, client):
    """pylti1p3's deep-linking validator refuses settings that accept no resource link;
    its English reason is given in the tool's words, in Russian for a Russian launch."""
    auth = start_login(client, platform, user_id="ru-3")
    dl = "https://purl.imsglobal.org/spec/lti-dl/claim/"
    lti = "https://purl.imsglobal.org/spec/lti/claim/"
    claims = standard_claims(
        platform,
        auth,
        sub="ru-3",
        **{
            lti + "message_type": "LtiDeepLinkingRequest",
            lti + "resource_link": None,
            lti + "roles": [ROLE + "Instructor"],
            lti + "launch_presentation": {"locale": "ru"},
            dl + "deep_linking_settings": {
                "deep_link_return_url": platform.server.url("/deep-link-return"),
                "accept_types": ["link"],
                "accept_presentation_document_targets": ["iframe"],
            },
        },
    )
    signed = {"id_token": platform.sign(claims), "state": auth["state"]}
    response = client.post("/lti/launch/", signed)
    page = response.content.decode()
    assert response.status_code == 400
    with translation.override("ru"):
        expected = str(LIBRARY_REASONS["Must support resource link placement types"])
    assert expected.replace("'", "&#x27;") in page
    assert "accept_types" in page
    assert "Must support" not in page


def _library_validator_reasons() -> set[str]:
    """The reasons pylti1p3's validators give for the two message types this tool takes."""
    folder = Path(pylti1p3.__file__).parent / "message_validators"
    reasons = set()
    for name in ("abstract.py", "resource_message.py", "deep_link.py"):
        for node in ast.walk(ast.parse((folder / name).read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "LtiException"
                and isinstance(node.args[0], ast.Constant)
            ):
                reasons.add(node.args[0].value)
    return reasons


def test_every_reason_of_the_librarys_validators_has_the_tools_words():
    """(Their Russian texts are checked with every text of lti/launch.py above.)"""
    reasons = _library_validator_reasons()
    assert "Must support resource link placement types" in reasons
    assert reasons <= set(LIBRARY_REASONS)
