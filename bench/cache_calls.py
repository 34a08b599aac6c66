"""What one cache read costs through the tool's cache backend and through Django's own Redis
backend, in the same process, taking turns (so that the machine's load weighs on both alike).

    python -m bench.cache_calls [--rounds 40] [--calls 500]

Reads a session-sized entry (``REDIS_URL``, under a key prefix of its own) and prints the CPU
time per ``get`` of each backend. Every page of a launched session reads the cache twice (the
session, the user: decisions 25 and 44); docs/benchmarks.md records the output.
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=500, help="reads per backend per round")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

    from ops.cache import RedisCache

    params = {"KEY_PREFIX": "bench-cache-calls", "OPTIONS": settings.CACHES["default"]["OPTIONS"]}
    backends = {
        "ops.cache.RedisCache": RedisCache(settings.REDIS_URL, params),
        "Django's RedisCache": DjangoRedisCache(settings.REDIS_URL, params),
    }
    session = {"_auth_user_id": "12", "lti": {"launch": "x" * 200}, "courses": list(range(20))}
    backends["ops.cache.RedisCache"].set("session", session, 600)
    cpu = dict.fromkeys(backends, 0.0)
    for round_number in range(args.rounds + 1):
        for name, backend in backends.items():
            started = time.process_time()
            for _ in range(args.calls):
                backend.get("session")
            cpu[name] += time.process_time() - started
        if round_number == 0:  # the first round warms the connections up and is not counted
            cpu = dict.fromkeys(backends, 0.0)
    reads = args.rounds * args.calls
    for name, seconds in cpu.items():
        print(f"{name}: {seconds / reads * 1e6:.1f} µs CPU per get")
    backends["ops.cache.RedisCache"].delete("session")


if __name__ == "__main__":
    main()
