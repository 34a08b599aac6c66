"""The site's icon: every page names one among its static files, so a browser does not ask
for /favicon.ico (a 404 through the whole stack on every page load before)."""

from __future__ import annotations

import re

import pytest


@pytest.mark.django_db
def test_a_page_names_its_icon_and_the_icon_is_served(client):
    page = client.get("/").content.decode()
    icon = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page)
    assert icon is not None, page[:600]
    served = client.get(icon[1])
    assert served.status_code == 200
    assert served["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in b"".join(served.streaming_content)
