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
from django.contrib.sessions.backends.db import SessionStore as DBStore

CACHE_SECONDS = 300


class SessionStore(cached_db.SessionStore):
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
        DBStore.save(self, must_create)
        self._cache.set(self.cache_key, self._session, min(self.get_expiry_age(), CACHE_SECONDS))
