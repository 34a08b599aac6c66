"""A launch's sign-in writes its session once and nothing for django-axes; a password
sign-in keeps axes' records and an exact last_login; a stored session still gets a new key
at sign-in (ops.signin, ops.sessions)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessLog
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lti.models import LtiUser
from tests.lti_platform import launch

pytestmark = pytest.mark.django_db


def _statements_on(queries: CaptureQueriesContext, table: str) -> list[str]:
    return [query["sql"] for query in queries.captured_queries if f'"{table}"' in query["sql"]]


def test_a_launch_stores_its_new_session_once_and_writes_nothing_for_axes(platform):
    client = Client()
    with CaptureQueriesContext(connection) as queries:
        response = launch(client, platform, user_id="one-write")
    assert response.status_code == 302, response.content.decode()[:500]
    session_statements = _statements_on(queries, "django_session")
    assert len(session_statements) == 1, session_statements
    assert session_statements[0].startswith("INSERT")
    assert not [q for q in queries.captured_queries if "axes_" in q["sql"]]
    assert not AccessLog.objects.exists()
    key = client.cookies["sessionid"].value
    stored = Session.objects.get(session_key=key).get_decoded()
    user = LtiUser.objects.get(sub="one-write").user
    assert stored["_auth_user_id"] == str(user.pk)
    assert user.last_login is not None  # the first sign-in records it


def test_a_passwordless_sign_in_keeps_last_login_to_the_hour(platform):
    launch(Client(), platform, user_id="hourly")
    user = LtiUser.objects.get(sub="hourly").user
    first = user.last_login
    with CaptureQueriesContext(connection) as queries:
        assert launch(Client(), platform, user_id="hourly").status_code == 302
    assert not [q for q in queries.captured_queries if q["sql"].startswith('UPDATE "auth_user"')]
    user.refresh_from_db()
    assert user.last_login == first
    get_user_model().objects.filter(pk=user.pk).update(
        last_login=timezone.now() - timedelta(hours=2)
    )
    assert launch(Client(), platform, user_id="hourly").status_code == 302
    user.refresh_from_db()
    assert timezone.now() - user.last_login < timedelta(minutes=1)


def test_a_password_sign_in_keeps_axes_records_and_an_exact_last_login():
    admin = get_user_model().objects.create_superuser("admin", "a@example.com", "s3cret-pass")
    admin.last_login = timezone.now() - timedelta(minutes=5)
    admin.save()
    client = Client()
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "admin", "password": "s3cret-pass"}
    )
    assert response.status_code == 302, response.content.decode()[:500]
    assert AccessLog.objects.filter(username="admin").count() == 1
    admin.refresh_from_db()
    assert timezone.now() - admin.last_login < timedelta(minutes=1)


def test_a_session_stored_before_the_launch_gets_a_new_key(platform):
    client = Client()
    session = client.session
    session["before"] = "launch"
    session.save()
    before = session.session_key
    with CaptureQueriesContext(connection) as queries:
        assert launch(client, platform, user_id="fixation").status_code == 302
    # The old row deleted and the new one inserted once with its data (the session itself
    # read from the cache): no insert of an empty session, read of the old row or update.
    statements = [sql.split()[0] for sql in _statements_on(queries, "django_session")]
    assert statements == ["DELETE", "INSERT"]
    after = client.cookies["sessionid"].value
    assert after != before
    assert not Session.objects.filter(session_key=before).exists()
    assert Session.objects.get(session_key=after).get_decoded()["before"] == "launch"


def test_a_returning_browser_signed_in_already_writes_nothing_to_its_session(platform):
    """The same student opening the same course again from the same browser is signed in
    already and was let into that course: the launch neither signs in again nor stores the
    session (no statement, no cache write), and the session's key and CSRF token stay."""
    from django.core.cache import cache

    from tests.lti.test_launch_round_trips import redis_commands

    client = Client()
    launch(client, platform, user_id="again")
    key, csrf = client.cookies["sessionid"].value, client.cookies["csrftoken"].value
    with CaptureQueriesContext(connection) as queries, redis_commands() as sent:
        assert launch(client, platform, user_id="again").status_code == 302
    assert _statements_on(queries, "django_session") == []
    session_entry = cache.make_key(f"django.contrib.sessions.cached_db{key}")
    assert [command for command, name in sent if name == session_entry] == ["GET"]
    assert client.cookies["sessionid"].value == key
    assert client.cookies["csrftoken"].value == csrf


def test_a_session_whose_sign_in_no_longer_holds_is_replaced_at_the_launch(platform):
    """Only a sign-in that still holds is kept: with the user's session hash changed (a new
    password), the launch signs in anew, in a new session, as Django's login does."""
    client = Client()
    launch(client, platform, user_id="changed")
    key = client.cookies["sessionid"].value
    user = LtiUser.objects.get(sub="changed").user
    user.set_password("a new password")
    user.save()
    assert launch(client, platform, user_id="changed").status_code == 302
    assert client.cookies["sessionid"].value != key
    assert not Session.objects.filter(session_key=key).exists()


def test_a_returning_browser_stores_its_session_in_one_statement(platform):
    """The same student launching another course from the same browser keeps their session
    (Django gives no new key to the user already signed in) and stores it, with that course,
    in one UPDATE of its own: Django's save wraps the ORM's in a transaction (BEGIN, the
    update, COMMIT; a savepoint here, inside the test's transaction)."""
    client = Client()
    launch(client, platform, user_id="again")
    key = client.cookies["sessionid"].value
    with CaptureQueriesContext(connection) as queries:
        assert (
            launch(
                client, platform, user_id="again", context_id="course-2", resource_link_id="rl-2"
            ).status_code
            == 302
        )
    sql = [query["sql"] for query in queries.captured_queries]
    on_sessions = [index for index, text in enumerate(sql) if '"django_session"' in text]
    assert [sql[index].split()[0] for index in on_sessions] == ["UPDATE"], sql
    before, after = sql[on_sessions[0] - 1], sql[on_sessions[0] + 1 :]
    assert not before.startswith("SAVEPOINT"), sql
    assert not (after and after[0].startswith("RELEASE SAVEPOINT")), sql
    assert client.cookies["sessionid"].value == key
    stored = Session.objects.get(session_key=key).get_decoded()
    assert stored["_auth_user_id"] == str(LtiUser.objects.get(sub="again").user_id)
    assert len(stored["lti_launched_contexts"]) == 2


def test_a_session_ended_elsewhere_is_not_written_back():
    """A request whose session was deleted meanwhile (signed out in another tab, ended by an
    administrator) stores nothing under its key: UpdateError, as Django's save says it."""
    from django.contrib.sessions.backends.base import UpdateError

    from ops.sessions import SessionStore

    session = SessionStore()
    session["owner"] = "me"
    session.create()
    Session.objects.filter(session_key=session.session_key).delete()
    session["owner"] = "still me"
    with pytest.raises(UpdateError):
        session.save()
    assert not Session.objects.filter(session_key=session.session_key).exists()


def test_a_new_session_whose_key_is_taken_is_stored_under_another(monkeypatch):
    """The new session's insert refuses a taken key (CreateError) and the session draws
    another: the row already there is left as it was."""
    from ops.sessions import SessionStore

    taken = SessionStore()
    taken["owner"] = "first"
    taken.create()
    keys = iter([taken.session_key, "a" * 32])
    monkeypatch.setattr(SessionStore, "_get_new_session_key", lambda _self: next(keys))

    second = SessionStore()
    second["owner"] = "second"
    second.create()

    assert second.session_key == "a" * 32
    assert Session.objects.get(session_key=taken.session_key).get_decoded() == {"owner": "first"}
    assert Session.objects.get(session_key="a" * 32).get_decoded() == {"owner": "second"}
