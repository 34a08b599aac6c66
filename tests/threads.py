"""Races between two database sessions, for the tests that need one held open."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import connection, transaction


def hold_uncommitted(work: Callable[[], object], *, seconds: float = 0.5) -> Callable[[], None]:
    """Run ``work`` in a transaction on another thread and keep it uncommitted for
    ``seconds``. Returns once the work is done (its rows written, its locks held); the
    returned function waits for the commit and raises what the thread raised."""
    done, errors = threading.Event(), []

    def run() -> None:
        try:
            with transaction.atomic():
                work()
                done.set()
                time.sleep(seconds)
        except BaseException as error:  # noqa: BLE001 (handed to the test's thread)
            errors.append(error)
            done.set()
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    assert done.wait(10)

    def committed() -> None:
        thread.join(10)
        if errors:
            raise errors[0]

    return committed
