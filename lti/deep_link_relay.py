"""Deep linking through a new window: the signed answer goes back to the LMS dialog's iframe.

A browser that blocks the tool's cookie inside the LMS page signs in from a new window
(decision 26), where the content picker opens. Its answer must reach the LMS from the
dialog's iframe, where the LMS's return page talks to its parent page (Moodle's
``contentitem_return.php`` calls ``parent.processContentItemReturnData``); posted from the
new window, that page runs in the wrong window and fills nothing.

So the login page in the iframe opens a channel: a public id, which the new window's login
repeats, and a secret, which only that iframe page holds. The new window's login binds the
channel to its OIDC state, when it repeats the login initiation the channel was opened for;
its launch records the deep-linking return URL there (any other launch closes the channel);
the picker's answer is delivered to the channel, for that return URL only; the iframe asks
with its secret until it is ready and takes it once, and posts it to that URL itself.

What keeps it safe: whoever lacks the secret learns nothing and takes nothing (a wrong secret
reads as an unknown channel); one login binds a channel, one answer fills it, one take empties
it; everything expires ``settings.LTI_DEEP_LINK_RELAY_SECONDS`` after the channel was opened.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings
from django.core.cache import cache
from django.utils.crypto import constant_time_compare

from ops import cache as ops_cache

from . import one_time

CHANNEL_FIELD = "lti_return_channel"
# What a login must repeat to bind the channel opened for it.
_BOUND_PARAMS = ("iss", "client_id", "login_hint", "lti_message_hint", "lti_deployment_id")


class Status(StrEnum):
    WAITING = "waiting"  # no answer yet (or no launch yet)
    READY = "ready"  # the picker's answer is there to take
    CLOSED = "closed"  # the new window's launch was not deep linking: nothing will come
    GONE = "gone"  # unknown, expired, taken, or the secret is wrong


@dataclass(frozen=True)
class Channel:
    channel: str
    secret: str


@dataclass(frozen=True)
class Answer:
    return_url: str
    jwt: str


def _key(channel: str, part: str) -> str:
    return f"lti:dl-relay:{channel}:{part}"


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _initiation(params: Mapping[str, str]) -> str:
    return _digest("\x00".join(str(params.get(name, "")) for name in _BOUND_PARAMS))


def _seconds() -> int:
    return settings.LTI_DEEP_LINK_RELAY_SECONDS


def open_channel(params: Mapping[str, str]) -> Channel | None:
    """A channel for the login initiation ``params``; None when the cache cannot keep one
    (then the new window answers the LMS from itself, as before)."""
    opened = Channel(channel=one_time.new_token(), secret=one_time.new_token())
    entry = {"secret": _digest(opened.secret), "initiation": _initiation(params)}
    if not cache.add(_key(opened.channel, "open"), entry, _seconds()):
        return None
    return opened


def bind(channel: str, params: Mapping[str, str], state: str) -> bool:
    """Binds the channel to the login ``state`` of a new window: only the first login that
    repeats the initiation the channel was opened for."""
    if not one_time.is_token(channel):
        return False
    entry = cache.get(_key(channel, "open"))
    if not entry or not constant_time_compare(entry["initiation"], _initiation(params)):
        return False
    if not cache.add(_key(channel, "bound"), state, _seconds()):
        return False  # another login bound it first
    return bool(cache.add(f"lti:dl-relay-state:{state}", channel, _seconds()))


def launched(state: str, repeated_channel: str, return_url: str | None) -> str | None:
    """The launch that answered the login ``state``: a deep-linking one (``return_url``)
    keeps the channel its login bound waiting for the picker's answer, and the channel is
    returned; any other closes it. A login that repeated no channel (``repeated_channel``,
    kept in its state) bound none: then there is nothing to look up."""
    if not repeated_channel:
        return None
    channel = ops_cache.take(f"lti:dl-relay-state:{state}")
    if channel is None:
        return None
    if not cache.get(_key(channel, "open")):
        return None
    if return_url is None:
        cache.set(_key(channel, "closed"), True, _seconds())
        return None
    if not cache.add(_key(channel, "launch"), return_url, _seconds()):
        return None
    return channel


def deliver(channel: str, *, return_url: str, jwt: str) -> bool:
    """The picker's signed answer, for the iframe that opened the channel: only for the
    return URL its launch named, once, while the channel is open."""
    if not cache.get(_key(channel, "open")):
        return False
    expected = cache.get(_key(channel, "launch"))
    if expected is None or not constant_time_compare(expected, return_url):
        return False
    return bool(
        cache.add(_key(channel, "answer"), {"return_url": return_url, "jwt": jwt}, _seconds())
    )


def _opened_by(channel: str, secret: str) -> bool:
    if not (one_time.is_token(channel) and one_time.is_token(secret)):
        return False
    entry = cache.get(_key(channel, "open"))
    return bool(entry) and constant_time_compare(entry["secret"], _digest(secret))


def status(channel: str, secret: str) -> Status:
    if not _opened_by(channel, secret):
        return Status.GONE
    if cache.get(_key(channel, "answer")) is not None:
        return Status.READY
    if cache.get(_key(channel, "closed")):
        return Status.CLOSED
    return Status.WAITING


def take(channel: str, secret: str) -> Answer | None:
    """The answer, once, for the holder of the channel's secret; the channel ends with it."""
    if not _opened_by(channel, secret):
        return None
    answer = one_time.take(_key(channel, "answer"))
    if answer is None:
        return None  # not there yet, or another request took it first
    cache.delete_many([_key(channel, part) for part in ("open", "bound", "launch", "closed")])
    return Answer(return_url=answer["return_url"], jwt=answer["jwt"])
