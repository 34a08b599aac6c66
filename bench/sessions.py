"""What a request's session costs from the database engine against ops.sessions (the
database read through the Redis cache), and what the cache's fallback wrapper costs a Redis
call (decision 29): median microseconds per call in one process, PostgreSQL and Redis on
loopback.

    python -m bench.sessions [--calls 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "gcquiz_bench_sessions"
POSTGRES = os.environ.get("BENCH_POSTGRES", "postgres://postgres@127.0.0.1:5432")
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")


def _median_us(call, calls: int) -> float:
    return statistics.median(timeit.repeat(call, number=calls, repeat=7)) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    os.environ.update(
        DATABASE_URL=f"{POSTGRES}/{DATABASE}",
        REDIS_URL=REDIS,
        DEBUG="0",
        SECRET_KEY=os.environ.get("SECRET_KEY", "bench-only-not-secret"),
        DJANGO_SETTINGS_MODULE="config.settings",
        LOG_LEVEL="WARNING",
    )
    sys.path.insert(0, str(ROOT))
    import psycopg

    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")

    import django

    django.setup()
    from django.contrib.sessions.backends.db import SessionStore as DatabaseStore
    from django.core.cache.backends import redis as django_redis
    from django.core.management import call_command

    from ops.cache import RedisCache
    from ops.sessions import SessionStore as CachedStore

    call_command("migrate", verbosity=0)
    session = CachedStore()
    session.update({"_auth_user_id": "1", "lti_contexts": {"1": "learner"}})
    session.save()
    key = session.session_key

    params = {"KEY_PREFIX": "bench-sessions"}
    wrapped, plain = RedisCache(REDIS, params), django_redis.RedisCache(REDIS, params)
    wrapped.set("entry", {"a": 1})
    rows = [
        ("session load, database engine", lambda: DatabaseStore(key).load()),
        ("session load, ops.sessions (cache hit)", lambda: CachedStore(key).load()),
        ("cache get, Django's Redis cache", lambda: plain.get("entry")),
        ("cache get, ops.cache (with the fallback)", lambda: wrapped.get("entry")),
    ]
    print("| call | µs (median) |\n| --- | --- |")
    for name, call in rows:
        call()
        print(f"| {name} | {_median_us(call, args.calls):.0f} |")

    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")


if __name__ == "__main__":
    main()
