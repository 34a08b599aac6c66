"""A web worker builds, before it takes its first request, what its first requests built.

A fresh gunicorn worker has loaded the application but not its URLs (and so not the views
and what they import: pylti1p3, PyJWT, DRF), its templates, its translations, its database
and Redis connections or any activity's content. Its first requests built them: on this
machine the first login a worker served took about 2 s and its first launches and pages a
third more than later ones (docs/decisions.md, decision 59), and a class opening an activity
right after a deploy met those workers first. ``warm_up`` builds them at boot
(``config/gunicorn.py``'s ``post_worker_init``, before the worker freezes what it holds,
decision 47). Each step stands alone: one that fails (the database still starting) is
logged and the worker serves anyway, building it on demand as before.

An app adds its own step as a ``warm_up()`` method of its AppConfig, called with no
arguments (as Django calls ``ready()``).
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest
from django.template import engines
from django.template.loader import render_to_string
from django.urls import get_resolver
from django.utils import translation

logger = logging.getLogger(__name__)


def _urls() -> None:
    # The URLconf and every view module it imports; reversing fills the reverse lookups.
    get_resolver().reverse_dict  # noqa: B018 (a cached property that builds them)


def _translations() -> None:
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            translation.gettext("Question")


def _project_template_folders() -> list[Path]:
    """The project's template folders: its own and its apps' (not Django's or a package's,
    the admin's and the like, which few requests render)."""
    project = Path(settings.BASE_DIR)
    folders = [Path(folder) for folder in settings.TEMPLATES[0].get("DIRS", [])]
    for config in apps.get_app_configs():
        path = Path(config.path)
        if path.is_relative_to(project) and "site-packages" not in path.parts:
            folders.append(path / "templates")
    return [folder for folder in folders if folder.is_dir()]


def _templates() -> None:
    """Every template of the project, compiled into the cached loader; and the base page
    rendered once in each language, which imports the context processors and fills the
    page's cached fragments (its first render in a worker did, on a student's page)."""
    engine = engines["django"]
    for folder in _project_template_folders():
        for path in sorted(folder.rglob("*.html")):
            engine.get_template(path.relative_to(folder).as_posix())
    request = HttpRequest()
    request.method, request.path = "GET", "/"
    request.META = {"SERVER_NAME": "localhost", "SERVER_PORT": "80"}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            render_to_string("base.html", request=request)


def _connections() -> None:
    connection.ensure_connection()
    cache.get("ops:warm-up")  # opens the Redis connection (a miss while Redis is away)


def _apps() -> None:
    for config in apps.get_app_configs():
        step = getattr(config, "warm_up", None)
        if callable(step):
            step()


STEPS: tuple[Callable[[], None], ...] = (_urls, _translations, _templates, _connections, _apps)


def _allowed_host() -> str:
    named = [host for host in settings.ALLOWED_HOSTS if host and "*" not in host]
    return named[0].lstrip(".") if named else "localhost"


def _home_page(application: Callable) -> None:
    """The home page asked of the worker's own application, as a browser would ask it: what
    only a request builds is built (the messages' storage and the sessions' serializer
    imported, the framing origins read, every middleware's code run once). In one process a
    worker's first login took 7.3 ms without it against 1.7-2.5 for the next ones, 3.2 with
    it (docs/decisions.md, decision 66)."""
    host = _allowed_host()
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "SERVER_NAME": host,
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": host,
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
    }
    answered: list[str] = []

    def start_response(status: str, _headers: list, _exc_info: object = None) -> None:
        answered.append(status)

    body = application(environ, start_response)
    try:
        for _chunk in body:
            pass
    finally:
        if hasattr(body, "close"):
            body.close()  # Django's request_finished: the connections as after any request
    if not answered or answered[0][0] not in "23":
        raise RuntimeError(f"the home page answered {answered[0] if answered else 'nothing'}")


def warm_up(application: Callable | None = None) -> list[str]:
    """Build what a worker's first requests would, and with the worker's WSGI
    ``application`` ask it for the home page; the names of the steps that failed."""
    failed = []
    steps = [(step.__name__, step) for step in STEPS]
    if application is not None:
        steps.append(("_home_page", lambda: _home_page(application)))
    for name, step in steps:
        try:
            step()
        except Exception as error:
            logger.warning("warm-up step %s failed: %s", name, error)
            failed.append(name)
    # A connection the settings would not keep (CONN_MAX_AGE 0), or one a step broke, is
    # not left for the first request.
    connection.close_if_unusable_or_obsolete()
    return failed
