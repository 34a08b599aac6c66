"""What an administrator's change form posts, for tests that change one field of it."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.test import RequestFactory


def _posted(form) -> dict[str, Any]:
    data = {}
    for name in form.fields:
        value = form[name].value()  # as the page shows it (JSON as text)
        if value is not None:
            data[form.add_prefix(name)] = value
    return data


def unchanged_form_data(admin_user, model, instance) -> dict[str, Any]:
    """What the admin's change form of ``instance`` posts when nothing in it is changed: its
    fields, and each inline's management form and rows."""
    request = RequestFactory().get("/")
    request.user = admin_user
    model_admin = admin.site.get_model_admin(model)
    data = _posted(model_admin.get_form(request, instance)(instance=instance))
    for formset_class, _inline in model_admin.get_formsets_with_inlines(request, instance):
        formset = formset_class(instance=instance)
        management = formset.management_form
        data.update(
            {management.add_prefix(name): value for name, value in management.initial.items()}
        )
        for form in formset.forms:
            data.update(_posted(form))
    return data
