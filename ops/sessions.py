"""Sessions in the database, read through the cache: Django's ``cached_db`` engine, whose
cache entries live at most ``CACHE_SECONDS``.

The database holds every session; the cache spares each request its read (decision 29).
While Redis is unreachable the cache answers as a miss and sessions are read from and
written to the database alone. A change made then (a new launch's courses, a session
ended) cannot reach a Redis that was cut off rather than restarted, so an entry there may
be older than the database's row when it comes back: bounding its life bounds that. The
web process is WSGI, so only the synchronous ``load`` and ``save`` are bounded.
"""

from __future__ import annotations

from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.backends.base import VALID_KEY_CHARS, CreateError, UpdateError
from django.db import connections, router
from django.utils.crypto import get_random_string

CACHE_SECONDS = 300
# The session model's fields that a save writes, its key first.
STORED_FIELDS = ("session_key", "session_data", "expire_date")


class SessionStore(cached_db.SessionStore):
    _unstored = False

    def load(self) -> dict:
        data = self._cache.get(self.cache_key)
        if data is not None:
            return data
        stored = self._get_session_from_db()
        if not stored:
            return {}
        data = self.decode(stored.session_data)
        age = self.get_expiry_age(expiry=stored.expire_date)
        self._cache.set(self.cache_key, data, min(age, CACHE_SECONDS))
        return data

    def save(self, must_create: bool = False) -> None:
        if self._unstored:
            self._unstored = False
            try:
                self._store(must_create=True)
            except CreateError:
                self.create()  # the key was taken after all: a new one
            return
        self._store(must_create)

    def _store(self, must_create: bool) -> None:
        if self.session_key is None:
            self.create()  # which stores it
            return
        self._write(must_create)
        self._cache.set(self.cache_key, self._session, min(self.get_expiry_age(), CACHE_SECONDS))

    def _write(self, must_create: bool) -> None:
        """The session's row in one statement: a new session's insert, which inserts nothing
        when its key is taken (CreateError, as Django's save says it), or a stored one's
        update (UpdateError when its row is gone, ended elsewhere). Django's save is the
        ORM's in a transaction of its own: BEGIN, the statement and COMMIT, three round trips
        and the ORM's work on every launch and sign-in (decision 58), and on every request
        that changes a session (a returning browser's launch)."""
        row = self.create_model_instance(self._get_session(no_load=must_create))
        model = self.model
        connection = connections[router.db_for_write(model, instance=row)]
        quote = connection.ops.quote_name
        table = quote(model._meta.db_table)
        key, *rest = [model._meta.get_field(name) for name in STORED_FIELDS]
        if must_create:
            columns = [key, *rest]
            sql = (
                f"INSERT INTO {table} ({', '.join(quote(field.column) for field in columns)})"
                f" VALUES ({', '.join(['%s'] * len(columns))})"
                f" ON CONFLICT ({quote(key.column)}) DO NOTHING"
            )
        else:
            columns = [*rest, key]
            assignments = ", ".join(f"{quote(field.column)} = %s" for field in rest)
            sql = f"UPDATE {table} SET {assignments} WHERE {quote(key.column)} = %s"
        values = [
            field.get_db_prep_save(getattr(row, field.attname), connection) for field in columns
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, values)
            if cursor.rowcount == 0:
                raise CreateError if must_create else UpdateError

    def cycle_key(self) -> None:
        """Signing someone in, Django stores the session under a new key (so that no key
        known before can be used after), deletes the old one and then stores the new one
        again with its data: an insert, a read and a delete of the old row, an update, and
        as many cache writes. Here the old row and its cache entry go in one delete each,
        and the session gets its new key now and is stored once, when the request ends (as a
        session never stored before is)."""
        self._get_session()  # its data, kept under the new key; an unknown key is forgotten
        if self._session_key is not None:
            self.model.objects.filter(session_key=self._session_key).delete()
            self._cache.delete(self.cache_key)
        self._session_key = self._get_new_session_key()
        self._unstored = True
        self.modified = True

    def _get_new_session_key(self) -> str:
        """A new key without asking the cache and the database whether it is taken: 32
        characters of 36 do not repeat, and the insert that stores a new session refuses a
        taken key (create() then draws again)."""
        return get_random_string(32, VALID_KEY_CHARS)
