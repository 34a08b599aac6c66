"""Container health checks (docker-compose.yml), without loading Django:

    python -m ops.healthcheck ready [URL]        the web's /readyz answers 200
    python -m ops.healthcheck beat SCHEDULE      beat wrote its schedule lately

Beat's schedule is a ``shelve`` file whose name depends on the dbm module Python has
(``celerybeat-schedule``, ``celerybeat-schedule.db``, or ``.dat``/``.dir``/``.bak``), so the
age is that of the newest file named after the schedule, whichever the module.
"""

from __future__ import annotations

import glob
import os
import sys
import time
import urllib.request

READY_URL = "http://127.0.0.1:8000/readyz"
# Beat writes its schedule after every task it sends (every 30 s in production).
BEAT_MAX_AGE_SECONDS = 300


def ready(url: str = READY_URL) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (a fixed URL)
            return response.status == 200
    except OSError:
        return False


def beat_schedule_age(schedule: str) -> float | None:
    """Seconds since beat last wrote its schedule, or None if it never did."""
    files = glob.glob(glob.escape(schedule)) + glob.glob(glob.escape(schedule) + ".*")
    if not files:
        return None
    return time.time() - max(os.path.getmtime(file) for file in files)


def main(argv: list[str]) -> int:
    if argv[:1] == ["ready"]:
        return 0 if ready(*argv[1:2]) else 1
    if len(argv) == 2 and argv[0] == "beat":
        age = beat_schedule_age(argv[1])
        return 0 if age is not None and age <= BEAT_MAX_AGE_SECONDS else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
