"""The 1EdTech certification cases: forged, replayed, expired or mis-addressed launches
are refused with a 4xx, a plain-words reason and no session."""

from __future__ import annotations

import base64
import json
import re
import time

import jwt
import pytest
from django.test import Client

from tests.lti_platform import LAUNCH_URL, ROLE, new_rsa_pem, standard_claims, start_login

pytestmark = pytest.mark.django_db

LTI = "https://purl.imsglobal.org/spec/lti/claim/"


def refused(response, status: int, reason: str, client: Client) -> None:
    html = response.content.decode()
    assert response.status_code == status, html[:800]
    assert "The launch was refused" in html
    assert reason in html.replace("&#x27;", "'"), html[:1500]
    assert "_auth_user_id" not in client.session


def post_launch(client: Client, id_token: str, state: str):
    return client.post("/lti/launch/", {"id_token": id_token, "state": state})


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({LTI + "version": "1.2.0"}, "LTI version is not 1.3.0"),
        ({LTI + "version": None}, "LTI version is not 1.3.0"),
        ({LTI + "message_type": None}, "message type is missing"),
        ({LTI + "message_type": "LtiSubmissionReviewRequest"}, "message type is missing or not"),
        ({LTI + "roles": None}, "no roles claim"),
        ({LTI + "deployment_id": None}, "no deployment_id"),
        ({LTI + "deployment_id": "999"}, "deployment '999' is not registered"),
        ({LTI + "resource_link": {"title": "no id"}}, "no resource link id"),
        ({"sub": None}, "does not identify the user (sub)"),
        ({"aud": "someone-else"}, "are not registered with this tool"),
        ({"aud": ["client-123", "other-client"]}, "no authorized party (azp)"),
        ({"aud": ["client-123", "other-client"], "azp": "third"}, "no authorized party (azp)"),
        ({"azp": "other-client"}, "authorized party (azp) is not its audience"),
        ({"iss": "https://unknown.example.edu"}, "are not registered with this tool"),
        (
            {"exp": lambda: int(time.time()) - 120, "iat": lambda: int(time.time()) - 180},
            "has expired",
        ),
        (
            {"iat": lambda: int(time.time()) + 600, "exp": lambda: int(time.time()) + 700},
            "issued in the future",
        ),
        ({"nonce": "not-the-login-nonce"}, "nonce is not the one of this login"),
        ({"nonce": None}, "missing the 'nonce' claim"),
        (
            {LTI + "target_link_uri": "https://evil.example/lti/launch/"},
            "target_link_uri does not point at this tool",
        ),
        ({LTI + "target_link_uri": None}, "target_link_uri does not point at this tool"),
    ],
)
def test_claim_problems_are_refused(client, platform, overrides, reason):
    # Times are read when the test runs, not at collection (a long run outlived "the future").
    overrides = {k: v() if callable(v) else v for k, v in overrides.items()}
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth, **overrides))
    refused(post_launch(client, token, auth["state"]), 400, reason, client)


def test_inactive_deployment_is_refused(client, platform):
    platform.deployment_id = "2"
    from lti.models import Deployment, Registration

    Deployment.objects.create(
        registration=Registration.objects.get(), deployment_id="2", is_active=False
    )
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth))
    refused(post_launch(client, token, auth["state"]), 403, "has been deactivated", client)


def test_token_without_kid_is_refused(client, platform):
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth), headers={})
    refused(post_launch(client, token, auth["state"]), 400, "names no key (kid)", client)


def test_unknown_kid_is_refused_after_one_refetch(client, platform, platform_server):
    other_private, _ = new_rsa_pem()
    auth = start_login(client, platform)
    token = platform.sign(
        standard_claims(platform, auth), headers={"kid": "not-published"}, key=other_private
    )
    refused(post_launch(client, token, auth["state"]), 400, "does not publish", client)
    assert platform_server.requests.count(("GET", "/jwks")) == 2  # first fetch + one refetch

    # A second unknown kid right after does not make the tool hammer the platform.
    second = Client()
    auth = start_login(second, platform)
    token = platform.sign(
        standard_claims(platform, auth), headers={"kid": "also-unknown"}, key=other_private
    )
    refused(post_launch(second, token, auth["state"]), 400, "does not publish", second)
    assert platform_server.requests.count(("GET", "/jwks")) == 2


def test_platform_key_rotation_is_followed_by_one_refetch(client, platform, platform_server):
    from tests.lti_platform import launch

    assert launch(client, platform, user_id="a").status_code == 302
    platform.rotate_key()  # new kid, signing; the tool's cached keyset does not have it
    later = Client()
    assert launch(later, platform, user_id="b").status_code == 302
    assert platform_server.requests.count(("GET", "/jwks")) == 2


@pytest.mark.parametrize("algorithm", ["none", "HS256"])
def test_unsigned_or_symmetric_tokens_are_refused(client, platform, algorithm):
    auth = start_login(client, platform)
    claims = standard_claims(platform, auth)
    key = None if algorithm == "none" else "a-shared-secret-guess-of-32-bytes!!"
    token = jwt.encode(claims, key, algorithm=algorithm, headers={"kid": platform.kid})
    refused(post_launch(client, token, auth["state"]), 400, "only RS256 is accepted", client)


def test_tampered_signature_is_refused(client, platform):
    auth = start_login(client, platform)
    header, payload, signature = platform.sign(standard_claims(platform, auth)).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims[LTI + "roles"] = [ROLE + "Administrator"]
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    refused(
        post_launch(client, f"{header}.{forged}.{signature}", auth["state"]),
        400,
        "signature does not verify",
        client,
    )


def test_token_signed_by_another_key_under_the_platforms_kid_is_refused(client, platform):
    other_private, _ = new_rsa_pem()
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth), key=other_private)
    refused(post_launch(client, token, auth["state"]), 400, "signature does not verify", client)


@pytest.mark.parametrize("id_token", ["not-a-jwt", "a.b.c", ""])
def test_not_an_lti_jwt(client, platform, id_token):
    auth = start_login(client, platform)
    reason = "no id_token" if not id_token else "not a signed JWT"
    refused(post_launch(client, id_token, auth["state"]), 400, reason, client)


def test_replayed_launch_is_refused(client, platform):
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth))
    assert post_launch(client, token, auth["state"]).status_code == 302
    client.logout()  # the same browser, still holding the state cookie: state and nonce are spent
    refused(
        post_launch(client, token, auth["state"]),
        400,
        "unknown, expired or was already used",
        client,
    )


def test_replayed_nonce_under_a_fresh_state_is_refused(client, platform):
    first = start_login(client, platform)
    token = platform.sign(standard_claims(platform, first))
    assert post_launch(client, token, first["state"]).status_code == 302
    other = Client()
    second = start_login(other, platform)
    refused(
        post_launch(other, token, second["state"]), 400, "nonce is not the one of this login", other
    )


@pytest.mark.parametrize("first_from", ["cache", "database"])
def test_a_state_kept_twice_still_launches_once(client, platform, first_from):
    """A login whose state reached Redis although its add timed out is kept in the database
    too: each copy can be taken once, and the used nonce refuses the second launch, whichever
    copy the first one took."""
    from django.core.cache import cache

    from lti import oidc

    auth = start_login(client, platform)
    key = f"lti:state:{auth['state']}"
    record = cache.get(key)
    oidc._keep_in_database(key, record, 600)
    if first_from == "database":
        cache.delete(key)
    token = platform.sign(standard_claims(platform, auth))
    assert post_launch(client, token, auth["state"]).status_code == 302
    if first_from == "database":
        cache.set(key, record, 600)  # the other copy, in the cache
    client.logout()  # which also drops every cookie
    # The same browser posting twice at once: the second post still carries the state
    # cookie that the first one's answer removes.
    client.cookies[f"lti_state_{auth['state']}"] = auth["state"]
    refused(post_launch(client, token, auth["state"]), 400, "already used (nonce replayed)", client)


def test_state_from_another_browser_is_refused(client, platform):
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth))
    stranger = Client()  # has not got the state cookie
    refused(
        post_launch(stranger, token, auth["state"]), 403, "not started in this browser", stranger
    )
    # The real browser can still complete its launch: a refused forgery spends nothing.
    assert post_launch(client, token, auth["state"]).status_code == 302


def test_a_state_proof_outside_ascii_is_refused_not_a_500(client, platform):
    """The state's cookie and the platform storage's value were compared as text with
    hmac.compare_digest, which raises on anything but ASCII: anyone could make it a 500."""
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth))
    client.cookies[f"lti_state_{auth['state']}"] = "é"
    refused(post_launch(client, token, auth["state"]), 403, "not started in this browser", client)

    stranger = Client()
    params = {**platform.login_initiation(user_id="user-1"), "lti_storage_target": "_parent"}
    page = stranger.get("/lti/login/", params).content.decode()
    state = re.search(r'"key": "state_([^"]+)"', page).group(1)
    response = Client().post(
        "/lti/launch/", {"id_token": token, "state": state, "lti_storage_value": "é"}
    )
    assert response.status_code == 403


def test_unknown_state_is_refused(client, platform):
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth))
    refused(
        post_launch(client, token, "made-up-state"),
        400,
        "unknown, expired or was already used",
        client,
    )


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"iss": "https://unknown.example.edu"}, "is not registered with this tool"),
        ({"client_id": "wrong-client"}, "is not registered with this tool"),
        (
            {"target_link_uri": "https://evil.example/lti/launch/"},
            "target_link_uri does not point at this tool",
        ),
        ({"login_hint": ""}, "missing login_hint"),
        ({"iss": ""}, "missing iss"),
    ],
)
def test_bad_login_initiation_is_refused(client, platform, params, reason):
    query = {**platform.login_initiation(user_id="u"), **params}
    refused(client.get("/lti/login/", query), 400, reason, client)


def test_login_and_launch_refuse_other_methods(client):
    assert client.put("/lti/login/").status_code == 405
    assert client.get("/lti/launch/").status_code == 405


def test_the_hand_built_launch_without_a_defect_is_accepted(client, platform):
    # The control for the cases above: they differ from this one only by their defect.
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth, **{LTI + "target_link_uri": LAUNCH_URL}))
    assert post_launch(client, token, auth["state"]).status_code == 302


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({LTI + "resource_link": {"id": 12345}}, "no resource link id"),
        ({LTI + "resource_link": {"id": "x" * 256}}, "no resource link id"),
        ({LTI + "context": "course-1"}, "context claim has no valid id"),
        ({LTI + "context": {"id": ["a"]}}, "context claim has no valid id"),
        ({"sub": "s" * 256}, "does not identify the user"),
        ({"sub": "   "}, "does not identify the user"),  # as a roster skips it (decision 94)
        ({LTI + "context": {"id": " "}}, "context claim has no valid id"),
    ],
)
def test_malformed_ids_are_refused_not_stored(client, platform, overrides, reason):
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth, **overrides))
    refused(post_launch(client, token, auth["state"]), 400, reason, client)


def test_odd_optional_claims_are_ignored_not_fatal(client, platform):
    auth = start_login(client, platform)
    odd = {
        "name": ["not", "a", "string"],
        "given_name": 7,
        "email": {"x": 1},
        LTI + "custom": ["not", "a", "dict"],
        LTI + "launch_presentation": "iframe",
        "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
            "lineitem": 5,
            "scope": ["ok", 3],
        },
        LTI + "roles": [ROLE + "Learner", 42, None],
    }
    token = platform.sign(standard_claims(platform, auth, **odd))
    response = post_launch(client, token, auth["state"])
    assert response.status_code == 302
    from lti.models import LtiUser, ResourceLink

    assert LtiUser.objects.get().name == ""
    assert ResourceLink.objects.get().lineitem_url == ""


@pytest.mark.parametrize(
    "params",
    [{"iss": "\x00"}, {"target_link_uri": "http://[x"}, {"login_hint": "a\x00b"}],
)
def test_hostile_login_parameters_are_a_400(client, platform, params):
    query = {**platform.login_initiation(user_id="u"), **params}
    assert client.get("/lti/login/", query).status_code == 400


@pytest.mark.parametrize(
    ("headers", "overrides"),
    [
        ({"kid": "k", "crit": ["unknown"]}, {}),
        (None, {"iss": "a\x00b"}),
        (None, {"sub": "a\x00b"}),
        # An unpaired surrogate ("\ud800" in the JSON) was a 500 where the text reached the
        # database: iss and aud before the signature is checked.
        (None, {"iss": "a\ud800b"}),
        (None, {"aud": "\udfff"}),
        (None, {"sub": "\ud800"}),
        (None, {"name": "Ann \ud83d"}),
        (None, {LTI + "deployment_id": "\ud800"}),
        (None, {LTI + "context": {"id": "c-1", "title": "\ud800"}}),
        (None, {LTI + "resource_link": {"id": "rl-\ud800"}}),
        (None, {LTI + "target_link_uri": "http://[x"}),
    ],
)
def test_hostile_launch_tokens_are_a_400(client, platform, headers, overrides):
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth, **overrides), headers=headers)
    response = post_launch(client, token, auth["state"])
    assert response.status_code == 400
    assert "_auth_user_id" not in client.session


def test_a_non_string_kid_is_a_400(client, platform):
    auth = start_login(client, platform)

    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    token = ".".join(
        [part({"alg": "RS256", "kid": 123}), part(standard_claims(platform, auth)), "c2ln"]
    )
    assert post_launch(client, token, auth["state"]).status_code == 400


@pytest.mark.parametrize("depth", [600, 100_000], ids=["deeper-than-the-check", "deeper-than-json"])
def test_claims_nested_deeply_are_a_400_before_the_signature(client, platform, depth):
    """Anyone who starts a login may post any body: nesting it was a RecursionError (a 500)
    in the check for unstorable text, and deeper still in decoding the JSON."""
    auth = start_login(client, platform)

    def part(data: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    body = json.dumps(standard_claims(platform, auth))
    nested = "[" * depth + "]" * depth
    body = body[:-1] + f', "junk": {nested}}}'
    token = ".".join(
        [
            part({"alg": "RS256", "kid": platform.kid}),
            base64.urlsafe_b64encode(body.encode()).rstrip(b"=").decode(),
            "c2ln",
        ]
    )
    response = post_launch(client, token, auth["state"])
    assert response.status_code == 400
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    "unusable",
    [
        {"kty": "RSA", "n": "AQ", "e": "AQAB"},  # a malformed RSA key
        {  # an EC key: a platform may publish keys of several types
            "kty": "EC",
            "crv": "P-256",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        },
    ],
    ids=["malformed RSA", "EC"],
)
def test_a_launch_naming_a_published_key_it_cannot_be_checked_with_is_refused(
    client, platform, unusable
):
    """The key's id is in the token's unsigned header: anyone with a login state picks it."""
    platform.server.jwks = {"keys": [*platform.server.jwks["keys"], {**unusable, "kid": "odd"}]}
    auth = start_login(client, platform)
    token = platform.sign(standard_claims(platform, auth), headers={"kid": "odd"})
    refused(post_launch(client, token, auth["state"]), 400, "is not a usable RSA key", client)
