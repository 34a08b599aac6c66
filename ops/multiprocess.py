"""Prometheus's multiprocess files, right across containers and deploys.

prometheus_client names each process's files by its pid, but every container numbers its
processes from 1: web's gunicorn workers and the Celery worker's children wrote the same files
in the shared folder and corrupted them. Here a process is named by its host name, its pid
namespace and its pid (unique on the host that holds the folder), and holds a shared lock on
``<name>.lock`` for as long as it lives.

A dead process's counts must stay in the totals, but its files must not pile up: at each
scrape, every name whose lock nobody holds is folded into one archive file per metric type
(sums, as the collector would add them) and its files are removed. A running process's files
are never touched (its lock is held), so a deploy needs no clean-up and counters keep counting.
(A compaction killed between writing the archive and removing the files it folded would count
those files twice: the one step that is not atomic, and it lasts microseconds.)
"""

from __future__ import annotations

import fcntl
import glob
import os
import re
import socket
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import values
from prometheus_client.mmap_dict import MmapedDict

ENV = "PROMETHEUS_MULTIPROC_DIR"
ARCHIVE = "archive"
# Types whose samples add up across processes (gauges have per-process semantics).
SUMMED = ("counter", "histogram", "summary")
_COMPACTION_LOCK = ".compaction"  # flock()ed by each scrape

_identity: dict[str, object] = {"pid": None, "name": None, "lock": None}


def folder() -> str | None:
    return os.environ.get(ENV) or None


def _pid_namespace() -> str:
    try:
        return re.sub(r"\D", "", os.readlink("/proc/self/ns/pid"))
    except OSError:
        return "0"


def process_name(pid: int | None = None) -> str:
    """This process's name in file names: host, pid namespace, pid (no underscores, which
    separate the parts of prometheus_client's file names)."""
    host = os.environ.get("HOSTNAME") or socket.gethostname()
    host = re.sub(r"[^A-Za-z0-9.-]", "-", host)[:63] or "host"
    return f"{host}-{_pid_namespace()}-{pid if pid is not None else os.getpid()}"


def _hold(path: str) -> int:
    """A shared lock on ``path`` held until the process exits (the fd is never closed).
    If a compaction removed the file while we waited, lock the new one."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


def process_identifier() -> str:
    """prometheus_client's process identifier: our name, locked on first use in each
    process (after a fork the child gets a name and a lock of its own)."""
    pid = os.getpid()
    if _identity["pid"] != pid:
        name = process_name(pid)
        lock = _hold(os.path.join(folder() or ".", f"{name}.lock"))
        _identity.update(pid=pid, name=name, lock=lock)
    return str(_identity["name"])


def install() -> None:
    """Name this process's files by ``process_identifier`` (before any metric has a value)."""
    path = folder()
    if path:
        if not os.path.isdir(path):
            raise RuntimeError(f"{ENV}={path} is not a folder (create it, shared by the processes)")
        values.ValueClass = values.MultiProcessValue(process_identifier)


def _name_of(path: str) -> str:
    return os.path.basename(path)[:-3].rsplit("_", 1)[-1]


def _lock_exclusive(path: str, blocking: bool = True) -> int | None:
    """An exclusive lock on ``path`` (its fd, to close), or None if another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _add_to_archive(path: str, typ: str, sums: dict[str, float]) -> None:
    """Write the archive plus ``sums`` to a new file, then put it in place in one step."""
    archive = os.path.join(path, f"{typ}_{ARCHIVE}.db")
    totals: dict[str, float] = defaultdict(float)
    if os.path.exists(archive):
        for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(archive):
            totals[key] += value
    for key, value in sums.items():
        totals[key] += value
    staging = os.path.join(path, f".{typ}_{ARCHIVE}.staging")
    if os.path.exists(staging):
        os.unlink(staging)
    merged = MmapedDict(staging)
    try:
        for key, value in totals.items():
            merged.write_value(key, value, 0.0)
    finally:
        merged.close()
    os.replace(staging, archive)


def compact(path: str) -> list[str]:
    """Fold the files of every dead process into the archives; the names folded. The caller
    holds the compaction lock."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for file in glob.glob(os.path.join(path, "*.db")):
        if _name_of(file) != ARCHIVE:
            by_name[_name_of(file)].append(file)
    for lock in glob.glob(os.path.join(path, "*.lock")):
        by_name.setdefault(os.path.basename(lock)[: -len(".lock")], [])
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    dead: dict[str, tuple[int, list[str]]] = {}
    try:
        for name, files in by_name.items():
            fd = _lock_exclusive(os.path.join(path, f"{name}.lock"), blocking=False)
            if fd is None:
                continue  # a running process holds it
            dead[name] = (fd, files)
            for file in files:
                typ = os.path.basename(file).split("_", 1)[0]
                if typ in SUMMED:
                    for key, value, _ts, _pos in MmapedDict.read_all_values_from_file(file):
                        sums[typ][key] += value
        for typ, typ_sums in sums.items():
            _add_to_archive(path, typ, typ_sums)
        # Only now that the archive has their counts (gauges of dead processes are dropped,
        # as mark_process_dead does; this project keeps none in multiprocess mode).
        for name, (_fd, files) in dead.items():
            for file in files:
                os.unlink(file)
            os.unlink(os.path.join(path, f"{name}.lock"))
    finally:
        for fd, _files in dead.values():
            os.close(fd)
    return sorted(dead)


@contextmanager
def compacted(path: str) -> Iterator[None]:
    """Compact, then read in peace: scrapes (and so compactions) take turns."""
    fd = _lock_exclusive(os.path.join(path, _COMPACTION_LOCK))
    try:
        compact(path)
        yield
    finally:
        os.close(fd)
