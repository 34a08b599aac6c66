"""A fake LMS that is a real HTTP server on loopback and behaves like one, failing included.

It plays the platform's OAuth2 token endpoint (checks our JWT client assertion against our
JWKS, refusing one without `kid` as Moodle does), AGS line items and scores (bearer token and
scope checked; a score older than the one held is answered 409 as Moodle does), and NRPS
memberships with a paged, mixed-case next-page URL. Failures are injected on score posts:
HTTP 500, 429 with Retry-After, a hang past the client's read timeout (after storing, as a
slow LMS that did the work), and a dropped connection. It can also misbehave as a hostile or
broken platform would (`paging`, `elsewhere`, `score_reply`, `members_body`, `expires_in`).
"""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt

from .http_servers import serve_in_thread

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
FAILURE_MODES = ("500", "429", "hang", "drop")


class FakeLms:
    def __init__(self, *, client_id: str = "client-123", seed: int = 7) -> None:
        self.client_id = client_id
        self.tool_jwks: dict = {"keys": []}
        self.lock = threading.Lock()
        self.random = random.Random(seed)
        self.failure_rates: dict[str, float] = {}
        self.scripted: list[str] = []  # modes for the next score posts, in order
        self.hang_seconds = 1.5
        self.retry_after = "1"
        self.tokens: dict[str, tuple[float, set[str]]] = {}
        self.token_requests = 0
        self.counts: Counter = Counter()
        self.scores: dict[tuple[str, str], dict] = {}
        self.accepted: list[tuple[str, str, str, float]] = []
        self.lineitems: dict[str, dict] = {}
        self.members: list[dict] = []
        # "self": every line-item and membership page names itself as the next page;
        # "endless": each names a new one. Past `page_limit` pages it answers 500, so a
        # client that never stops still ends.
        self.paging: str | None = None
        # Another server's origin: with paging "elsewhere" the first page names a next page
        # there, and with `lineitems_elsewhere` created line items get their ids there.
        self.elsewhere = ""
        self.lineitems_elsewhere = False
        self.page_limit = 300
        self.page_requests = 0
        self.score_reply: tuple[int, str, bytes] | None = None  # sent after storing the score
        self.members_body: Any = None  # sent instead of each membership page when set
        self.expires_in: Any = 3600  # of the tokens, as the token answer gives it
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _LmsHandler)
        self.httpd.lms = self
        self.httpd.daemon_threads = True
        serve_in_thread(self.httpd)

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def add_lineitem(self, resource_link_id: str, maximum: float = 8) -> str:
        item_id = str(len(self.lineitems) + 1)
        self.lineitems[item_id] = {
            "id": self.url(f"/lineitems/{item_id}"),
            "resourceLinkId": resource_link_id,
            "scoreMaximum": maximum,
            "label": "Quiz",
            "tag": "grade",
        }
        return self.lineitems[item_id]["id"]

    def lineitem_id(self, lineitem_url: str) -> str:
        return lineitem_url.rstrip("/").rsplit("/", 1)[-1]

    def next_failure(self) -> str | None:
        with self.lock:
            if self.scripted:
                return self.scripted.pop(0)
            roll = self.random.random()
        for mode in FAILURE_MODES:
            rate = self.failure_rates.get(mode, 0.0)
            if roll < rate:
                return mode
            roll -= rate
        return None

    def store_score(self, lineitem: str, score: dict) -> tuple[int, dict]:
        required = {
            "userId",
            "scoreGiven",
            "scoreMaximum",
            "activityProgress",
            "gradingProgress",
            "timestamp",
        }
        if not required <= set(score):
            return 400, {"error": f"missing {sorted(required - set(score))}"}
        if score["scoreGiven"] > score["scoreMaximum"]:
            return 400, {"error": "scoreGiven above scoreMaximum"}
        key = (lineitem, score["userId"])
        with self.lock:
            held = self.scores.get(key)
            if held and held["timestamp"] > score["timestamp"]:
                return 409, {"error": "A newer score is already held"}
            if held and held["timestamp"] == score["timestamp"]:
                return 200, {}  # the same change again: nothing new
            self.scores[key] = score
            self.accepted.append(
                (lineitem, score["userId"], score["timestamp"], score["scoreGiven"])
            )
        return 200, {}

    def revoke_tokens(self) -> None:
        with self.lock:
            self.tokens.clear()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _LmsHandler(BaseHTTPRequestHandler):
    """One request to the fake LMS, answered from the state of its server's FakeLms."""

    protocol_version = "HTTP/1.1"

    @property
    def lms(self) -> FakeLms:
        return self.server.lms

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, body: Any, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_raw(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _scopes(self) -> set[str] | None:
        header = self.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ").strip()
        with self.lms.lock:
            found = self.lms.tokens.get(token)
        if not found or found[0] < time.time():
            return None
        return found[1]

    def do_POST(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path
        if path == "/token":
            self._token(parse_qs(self._body().decode()))
        elif path == "/lineitems":
            self._create_lineitem(json.loads(self._body() or b"{}"))
        elif path.startswith("/lineitems/") and path.endswith("/scores"):
            self._score(path.split("/")[2], self._body())
        else:
            self._send(404, {"error": "not found"})

    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if self.lms.paging and parts.path in ("/lineitems", "/memberships"):
            return self._odd_page(parts.path, query)
        if parts.path == "/lineitems":
            if self._scopes() is None:
                return self._send(401, {"error": "invalid token"})
            items = [
                i
                for i in self.lms.lineitems.values()
                if i["resourceLinkId"] == query.get("resource_link_id")
            ]
            self._send(200, items)
        elif parts.path == "/memberships":
            self._members(
                0, {"Link": f'<{self.lms.url("/Memberships/Page-2?Cursor=AbC")}>; rel="next"'}
            )
        elif parts.path == "/Memberships/Page-2" and query.get("Cursor") == "AbC":
            self._members(1, {})
        else:
            self._send(404, {"error": "not found"})

    def _odd_page(self, path: str, query: dict) -> None:
        with self.lms.lock:
            self.lms.page_requests += 1
            count = self.lms.page_requests
        if self._scopes() is None:
            return self._send(401, {"error": "invalid token"})
        if count > self.lms.page_limit:
            return self._send(500, {"error": "too many pages"})
        if self.lms.paging == "self":
            link = {"Link": f'<{self.lms.url(self.path)}>; rel="next"'}
        elif self.lms.paging == "elsewhere":
            link = {"Link": f'<{self.lms.elsewhere}{path}?page=2>; rel="next"'}
        else:
            query["page"] = str(count + 1)
            link = {"Link": f'<{self.lms.url(path)}?{urlencode(query)}>; rel="next"'}
        if path == "/lineitems":
            return self._send(200, [], link)
        self._send(200, {"id": self.lms.url(path), "members": []}, link)

    def _members(self, page: int, headers: dict) -> None:
        if self._scopes() is None:
            return self._send(401, {"error": "invalid token"})
        if self.lms.members_body is not None:
            return self._send(200, self.lms.members_body)
        half = (len(self.lms.members) + 1) // 2
        chunk = self.lms.members[:half] if page == 0 else self.lms.members[half:]
        self._send(200, {"id": self.lms.url("/memberships"), "members": chunk}, headers)

    def _token(self, form: dict) -> None:
        with self.lms.lock:
            self.lms.token_requests += 1
        assertion = (form.get("client_assertion") or [""])[0]
        try:
            header = jwt.get_unverified_header(assertion)
        except jwt.DecodeError:
            return self._send(400, {"error": "invalid_request"})
        if not header.get("kid"):
            return self._send(400, {"error": "kid must be provided in JWT header"})
        jwk = next((k for k in self.lms.tool_jwks["keys"] if k.get("kid") == header["kid"]), None)
        if jwk is None:
            return self._send(400, {"error": "invalid_client", "reason": "unknown kid"})
        try:
            claims = jwt.decode(
                assertion,
                jwt.PyJWK(jwk, "RS256"),
                algorithms=["RS256"],
                audience=self.lms.url("/token"),
            )
        except jwt.InvalidTokenError as error:
            return self._send(400, {"error": "invalid_client", "reason": str(error)})
        if claims.get("iss") != self.lms.client_id or claims.get("sub") != self.lms.client_id:
            return self._send(400, {"error": "invalid_client"})
        token = secrets.token_urlsafe(16)
        scopes = set((form.get("scope") or [""])[0].split())
        with self.lms.lock:
            self.lms.tokens[token] = (time.time() + 3600, scopes)
        self._send(
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": self.lms.expires_in,
                "scope": " ".join(sorted(scopes)),
            },
        )

    def _create_lineitem(self, body: dict) -> None:
        if self._scopes() is None:
            return self._send(401, {"error": "invalid token"})
        item_id = str(len(self.lms.lineitems) + 1)
        base = self.lms.elsewhere if self.lms.lineitems_elsewhere else self.lms.url("")
        item = {**body, "id": f"{base}/lineitems/{item_id}"}
        self.lms.lineitems[item_id] = item
        self._send(201, item)

    def _score(self, lineitem: str, raw: bytes) -> None:
        mode = self.lms.next_failure()
        with self.lms.lock:
            self.lms.counts[mode or "ok"] += 1
        if mode == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if mode == "500":
            return self._send(500, {"error": "internal error"})
        if mode == "429":
            return self._send(429, {"error": "slow down"}, {"Retry-After": self.lms.retry_after})
        scopes = self._scopes()
        if scopes is None:
            return self._send(401, {"error": "invalid token"})
        if SCORE_SCOPE not in scopes:
            return self._send(403, {"error": "scope not granted"})
        if lineitem not in self.lms.lineitems:
            return self._send(404, {"error": "line item not found"})
        status, body = self.lms.store_score(lineitem, json.loads(raw or b"{}"))
        if mode == "hang":
            time.sleep(self.lms.hang_seconds)
        if self.lms.score_reply is not None and status == 200:
            return self._send_raw(*self.lms.score_reply)
        self._send(status, body)
