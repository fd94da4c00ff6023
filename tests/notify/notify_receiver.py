"""A real webhook receiver on a loopback port, recording what it is sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.raw: list[bytes] = []  # each body exactly as received
        self.fail_next = 0  # answer 500 to this many requests
        self.status = 200
        self.released = threading.Event()  # cleared: requests wait (a hung service) until set
        self.released.set()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                receiver.released.wait(10)
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                body = json.loads(raw or b"null")
                with receiver._lock:
                    receiver.requests.append((self.path, dict(self.headers), body))
                    receiver.raw.append(raw)
                    if receiver.fail_next > 0:
                        receiver.fail_next -= 1
                        status = 500
                    else:
                        status = receiver.status
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # a short poll: shutdown() waits for one (the default half second, at every test's end)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def bodies(self, path: str) -> list[Any]:
        with self._lock:
            return [body for p, _, body in self.requests if p == path]

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
