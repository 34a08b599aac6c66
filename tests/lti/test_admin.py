"""The administrator's forms for a platform: an address typed without its scheme is read as
HTTPS, the scheme every LTI 1.3 platform is reached by (and the `iss` it sends)."""

import pytest

from lti.models import Registration

pytestmark = pytest.mark.django_db


def test_a_registration_typed_without_schemes_is_stored_with_https(admin_client):
    response = admin_client.post(
        "/admin/lti/registration/add/",
        {
            "title": "Moodle",
            "issuer": "moodle.example.edu",
            "client_id": "abc123",
            "auth_login_url": "moodle.example.edu/mod/lti/auth.php",
            "auth_token_url": "moodle.example.edu/mod/lti/token.php",
            "keyset_url": "moodle.example.edu/mod/lti/certs.php",
            "scopes": "[]",
            "is_active": "on",
            "deployments-TOTAL_FORMS": "1",
            "deployments-INITIAL_FORMS": "0",
            "deployments-0-deployment_id": "1",
            "deployments-0-is_active": "on",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    registration = Registration.objects.get(client_id="abc123")
    assert registration.issuer == "https://moodle.example.edu"
    assert registration.keyset_url == "https://moodle.example.edu/mod/lti/certs.php"
    assert registration.auth_login_url.startswith("https://")
    assert registration.auth_token_url.startswith("https://")
    assert list(registration.deployments.values_list("deployment_id", flat=True)) == ["1"]
