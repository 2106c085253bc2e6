"""A stateful fake of the GitHub REST API on 127.0.0.1, for the real PyGithub client.

It serves what the bot uses (repos, contents, tarballs, pulls, issue comments, reactions,
collaborator permission, git blobs/trees/commits/refs, check runs, installation access tokens) over
the small git object model of :mod:`github_state`, records every exchange (so a test can validate
each request and response against GitHub's OpenAPI description) and injects faults (rate limits,
5xx) on request. Routes are in :mod:`github_routes`.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import jwt
from github_routes import _COMPILED, ROUTES, _Api
from github_state import FIXTURES, Exchange, Fault, GitHubState, HTTPError

__all__ = ["FIXTURES", "ROUTES", "Fault", "FakeGitHub"]


class FakeGitHub(GitHubState):
    """The state plus its HTTP server. Use as a context manager; ``base_url`` is the API root."""

    def __init__(self, app_id: int = 4242, public_key: str | None = None) -> None:
        super().__init__(app_id, public_key)
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def __enter__(self) -> FakeGitHub:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _send(self, status: int, body: object, headers: dict | None = None,
              content_type: str = "application/json; charset=utf-8") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        url = urlsplit(self.path)
        path, query = unquote(url.path), {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        request = json.loads(raw) if raw else None
        if path.startswith("/_codeload/"):  # where GitHub's tarball redirect points (codeload.github.com)
            self._codeload(path)
            return
        for route_method, template, pattern in _COMPILED:  # noqa: B007 - template used after the loop
            match = pattern.match(path)
            if route_method == method and match:
                break
        else:
            self._send(404, {"message": "Not Found", "documentation_url": "fake"})
            return
        with fake.lock:
            for fault in fake.faults:
                if fault.times > 0 and fault.method == method and re.search(fault.path, path):
                    fault.times -= 1
                    self._send(fault.status, {"message": fault.message}, fault.headers)
                    return
        try:
            self._authorize(template, match.groupdict())
            with fake.lock:
                status, body, *extra = getattr(_Api, _handler_name(method, template))(
                    fake, match.groupdict(), query, request)
        except HTTPError as exc:
            status, body, extra = exc.status, {"message": exc.message, "documentation_url": "fake"}, []
        fake.exchanges.append(Exchange(method, template, path, request, status, body))
        self._send(status, body, *extra)

    def _codeload(self, path: str) -> None:
        owner, repo, sha = path.split("/")[2:5]
        try:
            files = self.fake.archive_at(f"{owner}/{repo}", sha)
        except KeyError:
            self._send(404, {"message": "Not Found"})
            return
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for name, data in sorted(files.items()):
                info = tarfile.TarInfo(f"{owner}-{repo}-{sha[:7]}/{name}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        self._send(200, buffer.getvalue(), content_type="application/x-gzip")

    def _authorize(self, template: str, params: dict) -> None:
        header = self.headers.get("Authorization", "")
        scheme, _, credential = header.partition(" ")
        fake = self.fake
        if template.startswith("/app/"):
            if scheme.lower() != "bearer" or fake.public_key is None:
                raise HTTPError(401, "A JSON web token could not be decoded")
            try:
                claims = jwt.decode(credential, fake.public_key, algorithms=["RS256"])
            except jwt.PyJWTError as exc:
                raise HTTPError(401, f"bad JWT: {exc}") from exc
            if str(claims.get("iss")) != str(fake.app_id):
                raise HTTPError(401, "JWT issuer is not this App")
            return
        entry = fake.tokens.get(credential)
        if scheme.lower() not in ("token", "bearer") or entry is None or entry[1] < time.time():
            raise HTTPError(401, "Bad credentials")


def _handler_name(method: str, template: str) -> str:
    return method.lower() + re.sub(r"\W+", "_", re.sub(r"\{\w+\}", "x", template)).rstrip("_")


