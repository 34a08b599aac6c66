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


def _admin_forms_with_addresses(request):
    """Every model of the project's apps whose admin form has an address field."""
    from django import forms
    from django.apps import apps
    from django.contrib import admin

    for model in apps.get_models():
        if model._meta.app_label in {"admin", "auth", "contenttypes", "sessions", "axes"}:
            continue
        if not admin.site.is_registered(model):
            continue
        model_admin = admin.site.get_model_admin(model)
        form = model_admin.get_form(request)
        addresses = {
            name: field
            for name, field in form.base_fields.items()
            if isinstance(field, forms.URLField)
        }
        if addresses:
            yield model, addresses


def test_every_address_typed_in_the_admin_is_read_as_https(rf, admin_user):
    """The registration's form is posted above; the context's (NRPS) and the resource link's
    (AGS) addresses come from launches but an administrator may correct them."""
    request = rf.get("/admin/")
    request.user = admin_user
    found = dict(_admin_forms_with_addresses(request))
    assert {model.__name__ for model in found} >= {"Registration", "Context", "ResourceLink"}
    for model, addresses in found.items():
        for name, field in addresses.items():
            assert field.assume_scheme == "https", f"{model.__name__}.{name}"
