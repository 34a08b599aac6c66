"""Deep linking, dynamic registration, key rotation, JWKS, framing and the NRPS roster."""

from __future__ import annotations

import json
import re
from html import unescape
from io import StringIO
from urllib.parse import urlsplit

import jwt
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from labs.selectors import lab_policy
from lti.models import Deployment, LtiUser, Membership, Registration, ResourceLink, ToolKey
from lti.services import sync_roster
from tests.grades_helpers import graded_placement, student
from tests.labs_helpers import small_lab
from tests.lti_platform import LAUNCH_URL, ROLE, launch, standard_claims, start_login

pytestmark = pytest.mark.django_db

DL_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"


def hidden(html: str, name: str) -> str:
    return unescape(re.search(rf'name="{name}" value="([^"]*)"', html).group(1))


@pytest.mark.usefixtures("quiz")
def test_deep_linking_round_trip_is_verified_by_the_platform(client, platform):
    response = launch(client, platform, roles=[ROLE + "Instructor"], deep_link=True)
    assert response.status_code == 302
    assert "/lti/deep-link/" in response["Location"]
    picker = client.get(response["Location"])
    assert picker.status_code == 200
    assert "Gradient checkpointing quiz" in picker.content.decode()

    returned = client.post(
        response["Location"],
        {
            "activity": "quiz:gradient-checkpointing",
            "title": "Checkpointing quiz, week 3",
            "max_attempts": "2",
            "grading_method": "highest",
        },
    )
    html = returned.content.decode()
    assert returned.status_code == 200
    assert f'action="{platform.server.url("/deep-link-return")}"' in html
    signed = hidden(html, "JWT")

    items = platform.verify_deep_linking_response(signed, client.get("/lti/jwks/").json())
    assert items == [
        {
            "type": "ltiResourceLink",
            "title": "Checkpointing quiz, week 3",
            "url": LAUNCH_URL,
            "custom": {
                "activity": "quiz:gradient-checkpointing",
                "max_attempts": "2",
                "grading_method": "highest",
            },
            "lineItem": {
                "scoreMaximum": 8,
                "label": "Checkpointing quiz, week 3",
                "resourceId": "quiz:gradient-checkpointing",
                "tag": "quiz",
            },
        }
    ]
    claims = jwt.decode(signed, options={"verify_signature": False})
    assert claims["aud"] == platform.issuer
    assert claims["iss"] == platform.client_id
    assert claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] == "1"
    assert claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "opaque-data"
    assert claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] == (
        "LtiDeepLinkingResponse"
    )

    # The LMS then launches the new link with the item's custom parameters.
    student = Client()
    launch(student, platform, resource_link_id="new-link", custom=items[0]["custom"])
    placement = ResourceLink.objects.get(resource_link_id="new-link")
    assert (placement.placement.max_attempts, placement.placement.grading_method) == (2, "highest")
    # The selection is used once.
    assert client.post(response["Location"], {"activity": "quiz:x"}).status_code == 404


@pytest.mark.usefixtures("quiz")
def test_a_lab_is_placed_by_deep_linking_and_launches_into_the_lab(client, platform):
    lab = small_lab()
    response = launch(client, platform, roles=[ROLE + "Instructor"], deep_link=True)
    assert "Tiny chain" in client.get(response["Location"]).content.decode()
    returned = client.post(
        response["Location"],
        {
            "activity": f"lab:{lab.slug}",
            "title": "Lab 1",
            "max_attempts": "4",
            "grading_method": "last",
            "opens_at": "2030-03-01T09:00",
            "due_at": "2030-03-08T23:59",
            "closes_at": "2030-03-15T23:59",
            "late_policy": "penalty",
            "late_penalty_percent": "25",
        },
    )
    signed = hidden(returned.content.decode(), "JWT")
    [item] = platform.verify_deep_linking_response(signed, client.get("/lti/jwks/").json())
    assert item["custom"]["activity"] == "lab:tiny-chain"
    assert item["lineItem"]["scoreMaximum"] == 100
    # The LMS sees the dates too: Deep Linking's availability and submission windows.
    assert item["submission"]["endDateTime"].startswith("2030-03-08T23:59")
    assert item["available"]["startDateTime"].startswith("2030-03-01T09:00")

    student = Client()
    landed = launch(student, platform, resource_link_id="lab-link", custom=item["custom"])
    placement = ResourceLink.objects.get(resource_link_id="lab-link")
    assert placement.lab_placement.lab == lab
    assert placement.placement.kind == "lab"
    assert not hasattr(placement, "quiz_placement")
    assert urlsplit(landed["Location"]).path == f"/lab/{placement.pk}/"
    rules = lab_policy(placement)
    assert (rules.max_runs, rules.grading_method) == (4, "last")
    assert (rules.due_at.day, rules.closes_at.day, rules.late_policy) == (8, 15, "penalty")
    assert rules.late_penalty_percent == 25


@pytest.mark.usefixtures("quiz")
@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"due_at": "2030-03-08T23:59", "closes_at": "2030-03-01T00:00"}, "closing time"),
        # A lab is graded by its best or its last run: the picker took the quiz's other
        # methods and signed them into the link, and the lab then graded by its default.
        ({"grading_method": "first"}, "best run or its last run"),
        ({"grading_method": "average"}, "best run or its last run"),
    ],
    ids=["schedule-out-of-order", "first-attempt", "average"],
)
def test_a_lab_the_picker_cannot_place_is_refused_with_a_message(
    client, platform, changed, message
):
    lab = small_lab()
    response = launch(client, platform, roles=[ROLE + "Instructor"], deep_link=True)
    bad = client.post(
        response["Location"],
        {
            "activity": f"lab:{lab.slug}",
            "title": "Lab 1",
            "max_attempts": "3",
            "grading_method": "highest",
            "late_policy": "accept",
            "late_penalty_percent": "0",
            **changed,
        },
    )
    assert bad.status_code == 400
    assert 'name="JWT"' not in bad.content.decode()
    assert message in bad.content.decode()


@pytest.mark.usefixtures("quiz")
@pytest.mark.parametrize(
    ("time_zone", "field", "value"),
    [
        ("Europe/Moscow", "opens_at", "0001-01-01T00:00"),
        ("America/New_York", "closes_at", "9999-12-31T23:59"),
    ],
)
def test_a_lab_date_at_the_calendars_edge_is_refused_in_any_time_zone(
    client, platform, settings, time_zone, field, value
):
    """East of UTC the calendar's first minute is before year 1 in UTC, west of it the last
    minute is after 9999: Python cannot convert either, and the picker answered 500."""
    settings.TIME_ZONE = time_zone
    lab = small_lab()
    response = launch(client, platform, roles=[ROLE + "Instructor"], deep_link=True)
    chosen = {
        "activity": f"lab:{lab.slug}",
        "title": "Lab 1",
        "max_attempts": "0",
        "grading_method": "highest",
        "late_policy": "accept",
        "late_penalty_percent": "0",
    }
    bad = client.post(response["Location"], {**chosen, field: value})
    assert bad.status_code == 400
    assert "between the years 1900 and 9000" in bad.content.decode()
    placed = client.post(response["Location"], {**chosen, field: "2030-03-01T09:00"})
    assert placed.status_code == 200
    assert hidden(placed.content.decode(), "JWT")


def test_learners_cannot_deep_link(client, platform):
    response = launch(client, platform, roles=[ROLE + "Learner"], deep_link=True)
    assert response.status_code == 403
    assert "Only instructors can add activities" in response.content.decode()


def test_deep_linking_form_errors_are_shown(client, platform):
    response = launch(client, platform, roles=[ROLE + "Instructor"], deep_link=True)
    bad = client.post(response["Location"], {"activity": "", "title": "", "max_attempts": "x"})
    assert bad.status_code == 400
    assert "This field is required" in bad.content.decode()


@pytest.fixture(autouse=True)
def registration_key(settings):
    settings.LTI_REGISTRATION_KEY = "reg-key-123"


def register(client: Client, params: dict):
    """The administrator's path: the page the platform opens, then its form posted."""
    params = {**params, "key": "reg-key-123"}
    page = client.get("/lti/register/", params)
    assert page.status_code == 200, page.content.decode()[:800]
    return client.post(
        "/lti/register/", {**params, "form_token": hidden(page.content.decode(), "form_token")}
    )


def moodle_configuration(server) -> dict:
    """A platform's OpenID configuration as Moodle's reads, served by ``server``."""
    return {
        "issuer": server.base,
        "authorization_endpoint": server.url("/mod/lti/auth.php"),
        "token_endpoint": server.url("/mod/lti/token.php"),
        "jwks_uri": server.url("/mod/lti/certs.php"),
        "registration_endpoint": server.url("/register"),
    }


def test_dynamic_registration_against_a_loopback_platform(client, platform_server):
    server = platform_server
    server.registration_token = "reg-token-xyz"
    server.openid_configuration = {
        **moodle_configuration(server),
        "https://purl.imsglobal.org/spec/lti-platform-configuration": {
            "product_family_code": "moodle",
            "version": "5.1",
        },
    }
    server.registration_reply = {
        "client_id": "Abc123Def456Ghi",
        "https://purl.imsglobal.org/spec/lti-tool-configuration": {"deployment_id": "7"},
    }
    params = {
        "openid_configuration": server.url("/.well-known/openid-configuration"),
        "registration_token": "reg-token-xyz",
        "key": "reg-key-123",
    }
    page = client.get("/lti/register/", params)
    assert page.status_code == 200
    assert "Register" in page.content.decode()
    params["form_token"] = hidden(page.content.decode(), "form_token")

    done = client.post("/lti/register/", params)
    assert done.status_code == 200
    assert "lti/registered" in done.content.decode()  # the script that closes the dialog
    again = client.post("/lti/register/", params)  # an administrator who registers twice
    assert again.status_code == 409
    assert "nothing was changed" in again.content.decode()

    registration = Registration.objects.get()
    assert (registration.issuer, registration.client_id) == (server.base, "Abc123Def456Ghi")
    assert registration.auth_login_url == server.url("/mod/lti/auth.php")
    assert registration.keyset_url == server.url("/mod/lti/certs.php")
    assert list(Deployment.objects.values_list("deployment_id", flat=True)) == ["7"]
    sent = server.registrations_received[0]
    assert sent["initiate_login_uri"] == "http://testserver/lti/login/"
    assert sent["jwks_uri"] == "http://testserver/lti/jwks/"
    assert sent["redirect_uris"] == [LAUNCH_URL]
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in sent["scope"].split()
    messages = sent["https://purl.imsglobal.org/spec/lti-tool-configuration"]["messages"]
    assert {m["type"] for m in messages} == {"LtiDeepLinkingRequest", "LtiResourceLinkRequest"}


def test_dynamic_registration_with_a_bad_token_is_refused(client, platform_server):
    server = platform_server
    server.registration_token = "the-real-token"
    server.openid_configuration = {
        "issuer": server.base,
        "authorization_endpoint": server.url("/a"),
        "token_endpoint": server.url("/t"),
        "jwks_uri": server.url("/j"),
        "registration_endpoint": server.url("/register"),
    }
    response = register(
        client,
        {
            "openid_configuration": server.url("/.well-known/openid-configuration"),
            "registration_token": "forged",
        },
    )
    assert response.status_code == 400
    assert "refused the registration" in response.content.decode()
    assert "invalid registration token" not in response.content.decode()  # body not echoed
    assert not Registration.objects.exists()


def test_dynamic_registration_refuses_a_configuration_from_another_site(client, platform_server):
    platform_server.openid_configuration = {
        "issuer": "https://elsewhere.example",
        "authorization_endpoint": "https://e/a",
        "token_endpoint": "https://e/t",
        "jwks_uri": "https://e/j",
        "registration_endpoint": platform_server.url("/register"),
    }
    response = register(
        client, {"openid_configuration": platform_server.url("/.well-known/openid-configuration")}
    )
    assert response.status_code == 400
    assert "not the site that served it" in response.content.decode()


@pytest.mark.parametrize(
    ("part", "name", "value"),
    [
        ("configuration", "authorization_server", "aud\x00ience"),
        ("configuration", "issuer", "PATH/\ud800"),
        ("platform", "product_family_code", "moo\ud800dle"),
        ("reply", "client_id", "client\x00id"),
        ("tool", "deployment_id", "7\x00"),
        ("reply", "scope", "https://purl.imsglobal.org/spec/lti-ags/scope/score \x00"),
    ],
)
def test_dynamic_registration_refuses_text_no_database_can_hold(
    client, platform_server, part, name, value
):
    """A NUL or an unpaired surrogate (JSON's "\\ud800") anywhere in the platform's
    configuration or answer: PostgreSQL refuses to store either, and the page answered 500."""
    server = platform_server
    configuration = {
        **moodle_configuration(server),
        PLATFORM_CONFIGURATION: {"product_family_code": "moodle"},
    }
    reply = {"client_id": "Abc123", TOOL_CONFIGURATION: {"deployment_id": "7"}}
    where = {
        "configuration": configuration,
        "platform": configuration[PLATFORM_CONFIGURATION],
        "reply": reply,
        "tool": reply[TOOL_CONFIGURATION],
    }[part]
    where[name] = value.replace("PATH", server.base) if value.startswith("PATH") else value
    server.openid_configuration, server.registration_reply = configuration, reply
    server.registration_token = "reg-token"
    url = server.url("/.well-known/openid-configuration")

    response = register(client, {"openid_configuration": url, "registration_token": "reg-token"})
    assert response.status_code == 400
    assert "cannot be stored" in response.content.decode()
    assert not Registration.objects.exists()


@pytest.mark.parametrize("depth", [600, 100_000], ids=["deeper-than-the-check", "deeper-than-json"])
def test_dynamic_registration_refuses_a_configuration_nested_too_deeply(
    client, platform_server, depth
):
    """Nesting was a RecursionError (a 500): in the check for unstorable text a few hundred
    levels deep, in decoding the JSON deeper still."""
    server = platform_server
    configuration = moodle_configuration(server)
    nested = "[" * depth + "]" * depth
    server.openid_configuration = (json.dumps(configuration)[:-1] + f', "x": {nested}}}').encode()
    server.registration_token = "reg-token"
    url = server.url("/.well-known/openid-configuration")

    response = register(client, {"openid_configuration": url, "registration_token": "reg-token"})
    assert response.status_code == 400
    assert not Registration.objects.exists()


def test_registration_page_without_parameters_explains_itself(client):
    response = client.get("/lti/register/", {"key": "reg-key-123"})
    assert response.status_code == 400
    assert "opened by your LMS" in response.content.decode()


def test_jwks_is_published_at_both_addresses(client):
    keys = client.get("/lti/jwks/").json()["keys"]
    assert len(keys) == 1
    assert keys[0]["alg"] == "RS256"
    assert keys[0]["kty"] == "RSA"
    assert "d" not in keys[0]  # never the private part
    assert keys[0]["use"] == "sig"
    assert "key_ops" not in keys[0]
    assert client.get("/.well-known/jwks.json").json()["keys"] == keys


@pytest.mark.usefixtures("quiz")
def test_key_rotation_keeps_launches_and_signatures_working(client, platform):
    def kids() -> list[str]:
        return [key["kid"] for key in client.get("/lti/jwks/").json()["keys"]]

    out = StringIO()
    first = kids()
    call_command("rotate_tool_keys", "publish", stdout=out)
    during = kids()
    assert len(during) == 2
    assert during[0] == first[0]
    next_kid = during[1]

    teacher = Client()

    def placed_by_deep_linking() -> str:
        picker = launch(teacher, platform, roles=[ROLE + "Instructor"], deep_link=True)
        choice = {
            "activity": "quiz:gradient-checkpointing",
            "title": "Q",
            "max_attempts": 0,
            "grading_method": "highest",
        }
        return hidden(teacher.post(picker["Location"], choice).content.decode(), "JWT")

    assert jwt.get_unverified_header(placed_by_deep_linking())["kid"] == first[0]

    call_command("rotate_tool_keys", "activate", stdout=out)
    assert kids() == during  # both still published
    signed = placed_by_deep_linking()
    assert jwt.get_unverified_header(signed)["kid"] == next_kid
    # A platform that cached the JWKS before activation can verify the new signature.
    platform.verify_deep_linking_response(
        signed, {"keys": [key for key in client.get("/lti/jwks/").json()["keys"]]}
    )

    call_command("rotate_tool_keys", "retire", stdout=out)
    assert kids() == [next_kid]
    assert launch(Client(), platform).status_code == 302
    with pytest.raises(CommandError, match="No next key is published"):
        call_command("rotate_tool_keys", "activate", stdout=out)
    assert ToolKey.objects.count() == 2


def test_pages_may_be_framed_only_by_registered_platforms(client, platform):
    response = launch(client, platform)
    page = client.get(response["Location"])
    assert directive(page, "frame-ancestors") == f"'self' {platform.server.base}"
    assert "X-Frame-Options" not in page
    assert directive(client.get("/admin/login/"), "frame-ancestors") == "'none'"


def directive(response, name: str) -> str | None:
    """One directive of the response's Content-Security-Policy."""
    for part in response["Content-Security-Policy"].split(";"):
        found, _, value = part.strip().partition(" ")
        if found == name:
            return value
    return None


def test_tool_config_command_prints_moodle_fields_and_canvas_json():
    out = StringIO()
    call_command("lti_tool_config", "--base-url", "https://quiz.example.edu/", stdout=out)
    text = out.getvalue()
    assert "Initiate login URL: https://quiz.example.edu/lti/login/" in text
    assert "Public keyset: https://quiz.example.edu/lti/jwks/" in text
    assert '"oidc_initiation_url": "https://quiz.example.edu/lti/login/"' in text
    with pytest.raises(CommandError, match="--base-url"):
        call_command("lti_tool_config", "--base-url", "", stdout=StringIO())


def test_add_registration_command_is_idempotent():
    args = [
        "--issuer",
        "https://moodle.example.edu",
        "--client-id",
        "abc",
        "--auth-login-url",
        "https://moodle.example.edu/mod/lti/auth.php",
        "--auth-token-url",
        "https://moodle.example.edu/mod/lti/token.php",
        "--keyset-url",
        "https://moodle.example.edu/mod/lti/certs.php",
        "--deployment-id",
        "3",
    ]
    call_command("lti_add_registration", *args, stdout=StringIO())
    call_command("lti_add_registration", *args, stdout=StringIO())
    assert Registration.objects.count() == 1
    assert Deployment.objects.count() == 1
    with pytest.raises(CommandError, match="must be an http"):
        call_command(
            "lti_add_registration",
            *args[:-6],
            "--auth-token-url",
            "ftp://x",
            "--keyset-url",
            "https://k",
            "--deployment-id",
            "3",
            stdout=StringIO(),
        )


def test_home_page_shows_what_administrators_register(client):
    html = client.get("/").content.decode()
    for path in ("/lti/register/", "/lti/launch/", "/lti/login/", "/lti/jwks/"):
        assert f"http://testserver{path}" in html


def test_standard_claims_helper_builds_what_the_library_builds(client, platform):
    # Guard for the hand-built refusal cases: same claim names as lti1p3platform's launch.
    auth = start_login(client, platform)
    library = jwt.decode(
        platform.authorize(auth, user_id="user-1", roles=[ROLE + "Learner"])["id_token"],
        options={"verify_signature": False},
    )
    ours = standard_claims(platform, auth)
    assert set(ours) <= set(library)


# Roster entries one bad member of which made the whole page's transaction fail, the good
# members with it, on every run: each is skipped, and the rest stored.
UNSTORABLE_MEMBERS = {
    "a name no database can hold": {"user_id": "bad", "roles": ["Learner"], "name": "Ann \ud800"},
    "a user id no database can hold": {"user_id": "x\ud8002", "roles": ["Learner"]},
    "a NUL in the email": {"user_id": "bad", "roles": ["Learner"], "email": "a\x00@b.edu"},
    "roles that are not a list": {"user_id": "bad", "roles": 5},
    "roles that are not all text": {"user_id": "bad", "roles": ["Learner", {"x": 1}]},
    "a user id that is not text": {"user_id": ["bad"], "roles": ["Learner"]},
    "an empty user id": {"user_id": " ", "roles": ["Learner"]},
    # Cut to 255, two ids sharing those characters would have been one user.
    "a user id over 255 characters": {"user_id": "u" * 256, "roles": ["Learner"]},
}


@pytest.mark.parametrize("bad", UNSTORABLE_MEMBERS.values(), ids=UNSTORABLE_MEMBERS)
def test_a_roster_member_that_cannot_be_stored_is_skipped_and_the_rest_stored(
    fake_lms, quiz, bad, caplog
):
    context = graded_placement(fake_lms, quiz).context
    # Two pages: the bad member is the second of the first.
    fake_lms.members = [
        {"user_id": "good", "roles": ["Learner"], "name": "Good"},
        bad,
        {"user_id": "later", "roles": ["Instructor"]},
    ]
    for _run in range(2):  # and the next run is not stuck on it
        sync_roster(context)
        active = dict(Membership.objects.values_list("user__lti_user__sub", "is_active"))
        assert active == {"good": True, "later": True}
    assert LtiUser.objects.get(sub="good").name == "Good"
    skipped = [r.getMessage() for r in caplog.records if r.name == "lti.services"]
    assert skipped == [f"roster member skipped context={context.pk} page=1 position=2"] * 2
    assert "Ann" not in caplog.text


def test_a_member_whose_roster_entry_cannot_be_stored_keeps_what_was_stored(fake_lms, quiz):
    """The LMS still lists them: skipping their entry does not make them leave the course."""
    context = graded_placement(fake_lms, quiz).context
    fake_lms.members = [{"user_id": "ann", "roles": ["Instructor"], "name": "Ann"}]
    sync_roster(context)
    fake_lms.members = [{"user_id": "ann", "roles": 5, "name": "Ann \ud800"}]
    assert sync_roster(context) == 1
    membership = Membership.objects.select_related("user__lti_user").get()
    assert (membership.is_active, membership.role) == (True, "staff")
    assert membership.user.lti_user.name == "Ann"


def test_a_member_the_roster_lists_first_is_made_with_their_name(fake_lms, quiz):
    """The roster's entry names them as a launch would (NRPS uses LTI's claims), so a first
    launch that sends what the roster listed finds their user as it would have made it, and
    saves nothing to it."""
    context = graded_placement(fake_lms, quiz).context
    fake_lms.members = [
        {
            "user_id": "ann",
            "roles": ["Learner"],
            "given_name": "Ann",
            "family_name": "Ivanova",
            "email": "ann@example.edu",
        }
    ]
    sync_roster(context)
    user = Membership.objects.select_related("user__lti_user").get().user
    assert (user.first_name, user.last_name, user.email) == ("Ann", "Ivanova", "ann@example.edu")
    assert (user.lti_user.name, user.lti_user.email) == ("Ann Ivanova", "ann@example.edu")


def test_a_launched_member_whose_user_id_ends_in_a_space_stays_in_the_course(fake_lms, quiz):
    """Found by review: a launch stores ``sub`` as sent and the roster stripped the same
    user id, so a sync made a second user "ann" and took the launched "ann " out of the
    course, on every run."""
    placement = graded_placement(fake_lms, quiz)
    student(placement, "ann ")
    fake_lms.members = [{"user_id": "ann ", "roles": ["Learner"], "name": "Ann"}]
    assert sync_roster(placement.context) == 1
    memberships = dict(Membership.objects.values_list("user__lti_user__sub", "is_active"))
    assert memberships == {"ann ": True}
    assert list(LtiUser.objects.values_list("sub", flat=True)) == ["ann "]


LONG_GIVEN, LONG_FAMILY = "G" * 200, "F" * 200  # and no "name": joined, 401 characters


def test_a_roster_member_with_long_given_and_family_names_is_stored_with_the_rest(fake_lms, quiz):
    """Found by review: with no "name", the given and family names joined overflowed the
    platform user's name: the page's transaction failed, its good members with it, on every
    run."""
    context = graded_placement(fake_lms, quiz).context
    fake_lms.members = [
        {"user_id": "good", "roles": ["Learner"], "name": "Good"},
        {"user_id": "long", "roles": ["Learner"], "given_name": LONG_GIVEN,
         "family_name": LONG_FAMILY},
    ]  # fmt: skip
    sync_roster(context)
    active = dict(Membership.objects.values_list("user__lti_user__sub", "is_active"))
    assert active == {"good": True, "long": True}
    name = LtiUser.objects.get(sub="long").name
    assert name == f"{'G' * 150} {'F' * 150}"[:255]


def test_a_launch_with_long_given_and_family_names_signs_in(platform):
    """The same names in a launch were a server error."""
    client = Client(raise_request_exception=False)
    auth = start_login(client, platform)
    claims = standard_claims(
        platform, auth, given_name=LONG_GIVEN, family_name=LONG_FAMILY, name=None
    )
    response = client.post(LAUNCH_URL, {"id_token": platform.sign(claims), "state": auth["state"]})
    assert response.status_code == 302, response.status_code
    assert LtiUser.objects.get().name == f"{'G' * 150} {'F' * 150}"[:255]
