"""Platforms' public keys: fetched over HTTP with timeouts, cached, and refetched once
(rate-limited) when a launch names a `kid` we have not seen, so a platform's own key
rotation does not break launches.

Each process also keeps a key set as it read it from the cache for ``PROCESS_SECONDS``:
every launch needs its platform's, and reading it back from Redis was a round trip of each
(decision 62). A `kid` missing from the kept set is looked up in the cache again before any
refetch, so a set another process refetched serves here at once; a set dropped from the
cache (``forget_keyset``, its cache time over) stops serving here within those seconds.
"""

from __future__ import annotations

import hashlib
import logging
import time

import jwt
import requests
from django.conf import settings
from django.core.cache import cache
from django.utils.translation import gettext_lazy as _

from . import http
from .errors import LaunchError

logger = logging.getLogger(__name__)


PROCESS_SECONDS = 30.0
# keyset URL -> (when this process read it, the key set)
_read: dict[str, tuple[float, dict]] = {}


def _cache_key(url: str, kind: str) -> str:
    return f"lti:jwks:{kind}:{hashlib.sha256(url.encode()).hexdigest()}"


def _fetch(url: str) -> dict:
    try:
        response = http.get(url)
        response.raise_for_status()
        keyset = response.json()
    except (requests.RequestException, ValueError) as error:
        logger.warning("platform keyset fetch failed url=%s error=%s", url, error)
        raise LaunchError(
            _("The platform's public keys could not be fetched from %(url)s: %(reason)s"),
            url=url,
            reason=http.UNREACHABLE,
        ) from error
    if not isinstance(keyset, dict) or not isinstance(keyset.get("keys"), list):
        raise LaunchError(
            _("The platform's key set at %(url)s is not a JSON Web Key Set."), url=url
        )
    cache.set(_cache_key(url, "set"), keyset, settings.LTI_PLATFORM_KEYSET_CACHE_SECONDS)
    _read[url] = (time.monotonic(), keyset)
    return keyset


def _cached(url: str) -> dict:
    keyset = cache.get(_cache_key(url, "set")) or _fetch(url)
    _read[url] = (time.monotonic(), keyset)
    return keyset


def _find(keyset: dict, kid: str) -> dict | None:
    return next(
        (key for key in keyset["keys"] if isinstance(key, dict) and key.get("kid") == kid), None
    )


def remember_cached_keysets(keyset_urls: list[str]) -> None:
    """Keeps in this process the key sets the cache holds (a worker's warm-up): nothing is
    fetched from a platform here, so a platform that is down does not hold a worker up."""
    for url in keyset_urls:
        keyset = cache.get(_cache_key(url, "set"))
        if keyset:
            _read[url] = (time.monotonic(), keyset)


def forget_keyset(keyset_url: str) -> None:
    """Drop the cached keyset and the refetch limit, e.g. after fixing a registration."""
    _read.pop(keyset_url, None)
    cache.delete_many([_cache_key(keyset_url, "set"), _cache_key(keyset_url, "refetch")])


def platform_key(keyset_url: str, kid: str) -> jwt.PyJWK:
    kept, jwk = _read.get(keyset_url), None
    if kept is not None and time.monotonic() - kept[0] < PROCESS_SECONDS:
        jwk = _find(kept[1], kid)
    if jwk is None:
        jwk = _find(_cached(keyset_url), kid)
    if jwk is None and cache.add(
        _cache_key(keyset_url, "refetch"), True, settings.LTI_PLATFORM_KEYSET_REFETCH_SECONDS
    ):
        jwk = _find(_fetch(keyset_url), kid)
    if jwk is None:
        raise LaunchError(
            _("The launch was signed with key %(kid)r, which the platform does not publish."),
            kid=kid,
        )
    try:
        return jwt.PyJWK(jwk, algorithm="RS256")
    except (jwt.PyJWKError, jwt.InvalidKeyError) as error:  # the kid is the token's choice
        raise LaunchError(
            _("The platform's key %(kid)r is not a usable RSA key."), kid=kid
        ) from error
