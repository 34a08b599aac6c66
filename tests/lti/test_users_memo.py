"""The signed-in user a process keeps between requests (lti.backends, ops.process_memo): a
page of a launched session waits on no cache read for its user, and deactivating the user
still takes effect at once here and within a second in every other process, whatever each
of them can reach of Redis."""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lti import backends
from lti.backends import CachedUserBackend
from ops.cache import RedisCache
from ops.process_memo import VERSION_CHECK_SECONDS
from tests.lti_platform import launch
from tests.workers import committed_version, in_another_process, wait_until

UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


def _launched(platform, user_id: str, **claims) -> tuple[Client, str]:
    """A browser launched into the course, and the page its launch landed on."""
    browser = Client()
    launched = launch(browser, platform, user_id=user_id, **claims)
    assert launched.status_code == 302
    landing = launched["Location"]
    assert browser.get(landing).status_code == 200
    return browser, landing


def _count_user_reads(monkeypatch) -> list[str]:
    """The users read from the cache from now on."""
    reads = []
    real_get = cache.get

    def counted(key, *args, **kwargs):
        if key.startswith("auth-user:"):
            reads.append(key)
        return real_get(key, *args, **kwargs)

    monkeypatch.setattr(cache, "get", counted)
    return reads


@pytest.mark.django_db
def test_a_signed_in_page_reads_its_user_from_the_process_not_the_cache(platform, monkeypatch):
    browser, landing = _launched(platform, "stu-kept")
    reads = _count_user_reads(monkeypatch)
    for _ in range(3):
        assert browser.get(landing).status_code == 200
    assert reads == []


@pytest.mark.django_db
def test_each_request_gets_a_user_of_its_own(platform):
    """A page may set attributes on request.user (the permissions' cache, for one) or fetch
    its related rows (kept in the model's state): the next request must find neither."""
    _launched(platform, "stu-own")
    user_id = User.objects.get(lti_user__sub="stu-own").pk
    backend = CachedUserBackend()
    first = backend.get_user(user_id)
    first.first_name = "Changed by a page"
    first._perm_cache = {"made.up"}
    assert first.lti_user.sub == "stu-own"  # now in the first's state
    second = backend.get_user(user_id)
    assert second is not first
    assert second.first_name != "Changed by a page"
    assert not hasattr(second, "_perm_cache")
    assert second._state is not first._state
    assert "lti_user" not in second._state.fields_cache


@pytest.mark.django_db
def test_a_new_user_leaves_the_kept_users_kept(platform, monkeypatch):
    """A first launch creates its user: nothing was kept of it, so no process need drop the
    users it keeps (a class arriving at once would otherwise empty every process's memo)."""
    browser, landing = _launched(platform, "stu-first")
    reads = _count_user_reads(monkeypatch)
    User.objects.create_user("arrived-later")
    assert browser.get(landing).status_code == 200
    assert reads == []


@pytest.mark.django_db
def test_a_first_launch_leaves_the_kept_users_kept(platform, monkeypatch):
    """A student's first launch makes their user with the name and email the platform sent
    and signs them in: none of it changes a user anyone could have kept, so the other
    students' users stay kept (a class's first launches would otherwise empty every
    process's users, twice each: the name's save and the first ``last_login``). Nor does
    their next launch, which finds the user as it would have made it (the email's domain
    written as Django writes it)."""
    browser, landing = _launched(platform, "stu-kept-first")
    reads = _count_user_reads(monkeypatch)
    for _launch in range(2):
        _launched(platform, "stu-arriving", email="Ada@Example.EDU")
    arrived = User.objects.get(lti_user__sub="stu-arriving")
    assert (arrived.get_full_name(), arrived.email) == ("Ada Lovelace", "Ada@example.edu")
    assert arrived.lti_user.email == "Ada@Example.EDU"  # as the platform sent it
    assert arrived.last_login is not None
    assert browser.get(landing).status_code == 200
    kept_first = User.objects.get(lti_user__sub="stu-kept-first").pk
    assert [key for key in reads if key.endswith(f":{kept_first}")] == []


@pytest.mark.django_db(transaction=True)
def test_the_users_version_moves_once_the_change_is_committed():
    """Moved before the commit, the version would let another process read the old row
    under the new version, and keep it."""
    user = User.objects.create_user("committing")
    before = committed_version(backends.USERS_VERSION)
    with transaction.atomic():
        user.first_name = "Renamed"
        user.save()
        assert committed_version(backends.USERS_VERSION) == before
    assert committed_version(backends.USERS_VERSION) not in (before, None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("in_a_transaction", [False, True], ids=["autocommit", "transaction"])
def test_the_version_is_written_before_the_row_only_inside_a_transaction(in_a_transaction):
    """Inside a transaction the version's row comes first, so that transactions changing
    users queue on it (decision 85); in autocommit each statement commits at once, so it
    comes after the user's row: written first, another process could read the new version
    and the old row in between, and keep that row under the new version."""
    user = User.objects.create_user("ordered")
    maybe_atomic = transaction.atomic() if in_a_transaction else nullcontext()
    with CaptureQueriesContext(connection) as captured, maybe_atomic:
        user.first_name = "Ordered"
        user.save()
    written = [
        table
        for query in captured
        if query["sql"].startswith(("INSERT", "UPDATE"))
        for table in ("auth_user", "ops_sharedversion")
        if f'"{table}"' in query["sql"]
    ]
    assert written == (
        ["ops_sharedversion", "auth_user"]
        if in_a_transaction
        else ["auth_user", "ops_sharedversion"]
    )


@pytest.mark.django_db(transaction=True)
def test_a_database_made_again_under_its_name_is_not_served_the_old_ones_users():
    """The cache outlives a database made again under the same name (the acceptance suite's,
    each run; `make run`'s SQLite file removed), whose ids start again from 1. Under a
    version that no database had written yet, the new database's user 1 was served the old
    one's, whose password hash no longer matched the session: signed out at once."""
    from ops.process_memo import ProcessMemo

    old = User.objects.create_user("first-life", first_name="Old")
    backend = CachedUserBackend()
    assert backend.get_user(old.pk).first_name == "Old"  # kept here and in the cache
    with connection.cursor() as cursor:  # the database made again: no signal, no version
        cursor.execute("DELETE FROM auth_user")
        cursor.execute("DELETE FROM ops_sharedversion")
    User.objects.create_user("second-life", first_name="New", id=old.pk)
    ProcessMemo.forget_all()  # a process started on the new database
    assert backend.get_user(old.pk).first_name == "New"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("change", ["save", "delete"])
def test_a_change_through_an_instance_not_read_from_the_database_moves_the_version(change):
    """``loaddata``, or code that builds ``User(pk=...)`` itself, changes a stored user
    through an instance whose state says it is being added: that must move the version as
    any change does, or other processes keep the old user for minutes."""
    user = User.objects.create_user("unread", first_name="Ada")
    before = committed_version(backends.USERS_VERSION)
    with transaction.atomic():
        stand_in = User(pk=user.pk, username="unread", first_name="Grace", password=user.password)
        stand_in.save() if change == "save" else stand_in.delete()
    assert committed_version(backends.USERS_VERSION) not in (before, None)


@pytest.mark.django_db(transaction=True)
def test_a_check_inside_the_changing_transaction_keeps_the_committed_version():
    """The changing transaction sees its own uncommitted version. A check that it runs through
    another memo (the registrations') must not make the process take that version: another
    thread's old row would be kept under it, in the process and in Redis, and served after
    the commit."""
    from lti import registrations_memo

    user = User.objects.create_user("checked", first_name="Ada")
    CachedUserBackend().get_user(user.pk)
    committed = backends.kept_users.version
    with transaction.atomic():
        user.first_name = "Renamed"
        user.save()
        registrations_memo.registrations.check_after = 0.0  # its second has passed
        registrations_memo.remembered(("made-up", "key"), lambda: ["made-up"])
        assert backends.kept_users.version == committed
    assert backends.kept_users.version not in (committed, None)  # taken at the commit


@pytest.mark.django_db(transaction=True)
def test_a_change_whose_commit_callback_was_lost_applies_here_at_once():
    """Django drops a transaction's later commit callbacks when one of them raises (a task
    sent to a broker that is down): the change still applies in this process on its next
    request, not a second later."""
    user = User.objects.create_user("lost-callback", first_name="Ada")
    backend = CachedUserBackend()
    assert backend.get_user(user.pk).first_name == "Ada"

    def broker_down() -> None:
        raise RuntimeError("the broker is down")

    def rename() -> None:
        with transaction.atomic():
            transaction.on_commit(broker_down)  # registered first, so it runs first
            user.first_name = "Renamed"
            user.save()

    with pytest.raises(RuntimeError):
        rename()
    assert backend.get_user(user.pk).first_name == "Renamed"


@pytest.mark.django_db(transaction=True)
def test_without_a_version_no_user_is_shared_through_the_cache(monkeypatch):
    """A process whose check could not read the versions (a database that failed its first
    check) reads users from the database: stored under no version, a user could be read by a
    database made again under the same name, whose ids start again."""
    from django.db import DatabaseError

    def unreadable() -> dict:
        raise DatabaseError("the versions cannot be read")

    monkeypatch.setattr("ops.process_memo._read_versions", unreadable)
    stored = []
    real_set = cache.set

    def recorded(key, *args, **kwargs):
        stored.append(key)
        return real_set(key, *args, **kwargs)

    monkeypatch.setattr(cache, "set", recorded)
    user = User.objects.create_user("versionless")
    assert CachedUserBackend().get_user(user.pk) == user
    assert [key for key in stored if key.startswith("auth-user:")] == []


@pytest.mark.django_db
def test_a_user_deactivated_here_is_refused_on_the_next_request(platform):
    browser, landing = _launched(platform, "stu-here")
    user = User.objects.get(lti_user__sub="stu-here")
    user.is_active = False
    user.save()
    refused = browser.get(landing)
    assert refused.status_code == 403
    assert "You are not signed in" in refused.content.decode()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "their_env", [{}, {"REDIS_URL": UNREACHABLE_REDIS}], ids=["with Redis", "without Redis"]
)
def test_a_user_deactivated_in_another_process_is_refused_here_within_a_second(platform, their_env):
    """The process that deactivates the user (the admin's, a command) moves the shared
    version; this one, which keeps the user, reads it again within a second and refuses the
    next page. So it does when the deactivating process cannot reach Redis (a blip, or its
    back-off after one) while this one can, and still holds the old row there."""
    browser, landing = _launched(platform, "stu-far")
    user_id = User.objects.get(lti_user__sub="stu-far").pk
    deactivated_from = time.monotonic()
    in_another_process(
        "from django.contrib.auth.models import User; "
        f"user = User.objects.get(pk={user_id}); user.is_active = False; user.save()",
        env=their_env,
    )
    time.sleep(max(0.0, deactivated_from + VERSION_CHECK_SECONDS - time.monotonic()))
    refused = browser.get(landing)
    assert refused.status_code == 403
    assert "You are not signed in" in refused.content.decode()


def _in_another_thread(work) -> tuple[threading.Thread, list[BaseException]]:
    """Starts ``work`` in a thread of this process (gunicorn's threads, runserver's), on the
    thread's own database connection; the thread, and what it raised once it ended."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as error:  # noqa: BLE001 (reported to the test)
            raised.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, raised


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "another_thread_checks", [False, True], ids=["alone", "another thread checks meanwhile"]
)
def test_a_rename_rolled_back_is_served_by_no_process(another_thread_checks):
    """A request that reads its own user inside the transaction that changes them reads the
    uncommitted row. If the transaction rolls back, no other process may be served that row
    (it was stored in Redis for five minutes), nor this one once the transaction ended. With
    threads (GUNICORN_THREADS, runserver) another request of the process may check the
    versions meanwhile and take the committed one: the row must not be stored under it
    either."""
    user = User.objects.create_user("rolled", first_name="Ada")
    other = User.objects.create_user("elsewhere")
    backend = CachedUserBackend()
    assert backend.get_user(user.pk).first_name == "Ada"  # kept here and in Redis
    with transaction.atomic():
        user.first_name = "Uncommitted"
        user.save()
        if another_thread_checks:
            backends.kept_users.check_after = 0.0  # the second has passed
            thread, raised = _in_another_thread(lambda: CachedUserBackend().get_user(other.pk))
            thread.join(30)
            assert raised == []
        assert backend.get_user(user.pk).first_name == "Uncommitted"  # its own transaction's
        transaction.set_rollback(True)
    in_another_process(
        "from lti.backends import CachedUserBackend; "
        f"name = CachedUserBackend().get_user({user.pk}).first_name; "
        "assert name == 'Ada', name"
    )
    assert backend.get_user(user.pk).first_name == "Ada"


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # else one per transaction
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_two_transactions_changing_users_wait_for_each_other_rather_than_deadlock():
    """The users' version is a row that a transaction locks from its first change of a user
    to its end. Taken after the user's row, it made a deadlock where PostgreSQL alone would
    have run the two one after the other: one transaction renames Ada, then Bob; the other
    renames Bob meanwhile, holding Bob's row while it waits for the version's."""
    ada = User.objects.create_user("ada")
    bob = User.objects.create_user("bob")

    def rename_bob_elsewhere() -> None:
        with transaction.atomic():
            row = User.objects.get(pk=bob.pk)
            row.last_name = "Elsewhere"
            row.save(update_fields=["last_name"])

    with transaction.atomic():
        ada.first_name = "Ada"
        ada.save()
        thread, raised = _in_another_thread(rename_bob_elsewhere)
        assert wait_until(_waiting_on_a_lock, timeout=10)
        bob.first_name = "Bob"
        bob.save(update_fields=["first_name"])
    thread.join(30)
    assert not thread.is_alive()
    assert raised == []
    bob.refresh_from_db()
    assert (bob.first_name, bob.last_name) == ("Bob", "Elsewhere")


@pytest.mark.django_db(transaction=True)
def test_a_rename_rolled_back_to_a_savepoint_is_not_served_in_the_transaction():
    """A change undone by its savepoint while the outer transaction goes on (a task, an
    atomic view): the transaction that changed the user reads them from the database until
    it ends, so the undone row is not served a moment longer."""
    user = User.objects.create_user("nested", first_name="Ada")
    backend = CachedUserBackend()
    assert backend.get_user(user.pk).first_name == "Ada"
    with transaction.atomic():
        with transaction.atomic():
            user.first_name = "Undone"
            user.save()
            assert backend.get_user(user.pk).first_name == "Undone"
            transaction.set_rollback(True)
        assert backend.get_user(user.pk).first_name == "Ada"


@pytest.mark.django_db(transaction=True)
def test_while_the_database_is_down_the_kept_user_still_answers():
    """No change can commit while the database is down, so a check that cannot read the
    versions keeps what the process holds, and tries again a second later rather than on
    every request."""
    user = User.objects.create_user("outage", first_name="Ada")
    backend = CachedUserBackend()
    assert backend.get_user(user.pk).first_name == "Ada"
    real_port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = "9"  # nothing listens there: the database is "down"
    try:
        backends.kept_users.check_after = 0.0  # the second has passed
        assert backend.get_user(user.pk).first_name == "Ada"
        assert backends.kept_users.check_after > time.monotonic()
    finally:
        connection.close()
        connection.settings_dict["PORT"] = real_port


@pytest.mark.django_db(transaction=True)
def test_a_deactivation_committed_between_a_read_and_its_fill_is_not_served(monkeypatch):
    """Decision 25's race: a request reads the user's row just before a deactivation commits,
    and stores it in the cache just after the commit dropped the cache's entry. What it
    stored is the old row; once the version moved, no request may be served it (it stayed
    in the cache for five minutes, and every process kept it again for a minute)."""
    user = User.objects.create_user("racer")
    real_set = cache.set
    deactivated = []

    def filled_after_the_commit(key, *args, **kwargs):
        if key.startswith("auth-user:") and not deactivated:
            row = User.objects.get(pk=user.pk)
            row.is_active = False
            row.save()  # committed now, its callbacks run: the entry deleted, the version moved
            deactivated.append(key)
        return real_set(key, *args, **kwargs)

    monkeypatch.setattr(cache, "set", filled_after_the_commit)
    backend = CachedUserBackend()
    assert backend.get_user(user.pk) is not None  # the row read before the commit
    assert deactivated
    assert backend.get_user(user.pk) is None


@pytest.mark.django_db
def test_a_change_no_signal_sees_is_read_again_within_a_minute(monkeypatch):
    """An ``update()`` on a queryset (or SQL by hand) moves no version: a user deactivated
    that way is refused once the user this process kept is a minute old (with Redis down, so
    that the row is read again from the database rather than from Redis's five minutes)."""
    unreachable = RedisCache(UNREACHABLE_REDIS, {"OPTIONS": {"socket_connect_timeout": 0.2}})
    monkeypatch.setattr("lti.backends.cache", unreachable)
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr("ops.process_memo.time", SimpleNamespace(monotonic=lambda: clock.now))
    user = User.objects.create_user("offline")
    backend = CachedUserBackend()
    assert backend.get_user(user.pk) == user
    User.objects.filter(pk=user.pk).update(is_active=False)  # no signal
    clock.now += backends.kept_users.memo_seconds - 1
    assert backend.get_user(user.pk) == user  # still the one kept
    clock.now += 2
    assert backend.get_user(user.pk) is None


@pytest.mark.django_db
def test_a_deactivation_saved_with_the_sign_in_time_is_refused_on_the_next_request(platform):
    """Only a save of ``last_login`` alone leaves the kept users kept (decision 82): a save
    that carries it beside anything else drops them like any change."""
    browser, landing = _launched(platform, "stu-both")
    user = User.objects.get(lti_user__sub="stu-both")
    user.is_active = False
    user.last_login = timezone.now()
    user.save(update_fields=["is_active", "last_login"])
    refused = browser.get(landing)
    assert refused.status_code == 403
    assert "You are not signed in" in refused.content.decode()
