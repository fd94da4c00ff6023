"""An incremental Server-Sent Events parser: bytes in (any chunking), events out.

Written here rather than taken from httpx-sse because a probe needs what it leaves out: a limit
on a line's size, the last event of a body that ends without its blank line, and the bytes
counted as they come. It follows the WHATWG event-stream rules that matter for OpenRouter: lines
end with LF, CRLF or CR (a CR at the end of one read and an LF at the start of the next are one
line end); lines that start with ``:`` are comments (``: OPENROUTER PROCESSING``) and are
skipped; several ``data:`` lines of one event are joined with ``\\n``; a blank line dispatches
the event; an event with no data is dropped; unknown fields are ignored. Lines are decoded as
UTF-8 with replacement, so invalid bytes become U+FFFD (which the language contract sees as
corruption) instead of an exception. A line longer than ``max_line_bytes`` raises
:class:`SSEError`.
"""

from __future__ import annotations

from typing import NamedTuple

DONE = "[DONE]"


class SSEError(ValueError):
    """The byte stream cannot be an event stream (a line exceeds the size limit)."""


class SSEEvent(NamedTuple):
    data: str
    event: str | None = None
    id: str | None = None

    @property
    def done(self) -> bool:
        return self.data.strip() == DONE


class SSEParser:
    """Feed the body's bytes with :meth:`feed`; call :meth:`close` at its end."""

    def __init__(self, *, max_line_bytes: int = 4 * 1024 * 1024) -> None:
        self._max_line = max_line_bytes
        self._buffer = bytearray()  # an incomplete last line (or a CR that may begin a CRLF)
        self._data: list[bytes] = []  # the data lines of the event being read
        self._event: str | None = None
        self._id: str | None = None
        self._first_line = True
        self.comments = 0  # keep-alive comments seen, for diagnostics

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buffer
        if buf and b"\n" not in chunk and b"\r" not in chunk and buf[-1:] != b"\r":
            buf += chunk  # a long line goes on: not searched again
            chunk = b""
        elif buf:
            chunk = bytes(buf + chunk)
            buf.clear()
        if b"\r" in chunk:  # a CR at the end may be the first half of a CRLF: it waits
            held = chunk.endswith(b"\r")
            chunk = (
                chunk.removesuffix(b"\r").replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                + b"\r" * held
            )
        lines = chunk.split(b"\n")
        buf += lines.pop()
        if len(buf) > self._max_line:
            raise SSEError(f"an event-stream line exceeds {self._max_line} bytes")
        if lines and self._first_line:
            self._first_line = False
            lines[0] = lines[0].removeprefix(b"\xef\xbb\xbf")
        events: list[SSEEvent] = []
        for raw in lines:
            name, _, value = raw.partition(b":")
            value = value[1:] if value[:1] == b" " else value
            if name == b"data":
                self._data.append(value)
            elif not raw:
                if self._data:
                    events.append(self._dispatch())
                self._event = None
            elif not name:
                self.comments += 1
            elif name == b"event":
                self._event = value.decode("utf-8", errors="replace")
            elif name == b"id" and b"\x00" not in value:
                self._id = value.decode("utf-8", errors="replace")
        return events

    def close(self) -> list[SSEEvent]:
        """End of body: an event whose lines are complete but lack the final blank line is kept;
        an incomplete last line (no line end: the connection was cut) is dropped."""
        events = self.feed(b"\n") if self._buffer.endswith(b"\r") else []
        self._buffer.clear()
        return events + [self._dispatch()] if self._data else events

    def _dispatch(self) -> SSEEvent:
        data = self._data
        raw = data[0] if len(data) == 1 else b"\n".join(data)
        data.clear()
        event, self._event = self._event, None
        return SSEEvent(raw.decode("utf-8", errors="replace"), event, self._id)
