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

from dataclasses import dataclass

DONE = "[DONE]"


class SSEError(ValueError):
    """The byte stream cannot be an event stream (a line exceeds the size limit)."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
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
        self._buffer = bytearray()
        self._scanned = 0  # self._buffer[:_scanned] holds no line end: not searched again
        self._data: list[bytes] = []  # the data lines of the event being read
        self._event: str | None = None
        self._id: str | None = None
        self._first_line = True
        self.comments = 0  # keep-alive comments seen, for diagnostics

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buffer
        buf += chunk
        # A CR at the end may be the first half of a CRLF: it waits for the next read.
        end = len(buf) - 1 if buf.endswith(b"\r") else len(buf)
        last = max(buf.rfind(b"\n", self._scanned, end), buf.rfind(b"\r", self._scanned, end))
        if last >= 0:
            lines = bytes(buf[: last + 1]).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            del buf[: last + 1]
        self._scanned = len(buf) - 1 if buf.endswith(b"\r") else len(buf)
        if len(buf) > self._max_line:
            raise SSEError(f"an event-stream line exceeds {self._max_line} bytes")
        if last < 0:
            return []
        events = [self._line(raw) for raw in lines.split(b"\n")[:-1]]
        return [event for event in events if event is not None]

    def close(self) -> list[SSEEvent]:
        """End of body: an event whose lines are complete but lack the final blank line is kept;
        an incomplete last line (no line end: the connection was cut) is dropped."""
        events = self.feed(b"\n") if self._buffer.endswith(b"\r") else []
        self._buffer.clear()
        self._scanned = 0
        event = self._dispatch()
        return events + ([event] if event is not None else [])

    def _line(self, raw: bytes) -> SSEEvent | None:
        if self._first_line:
            self._first_line = False
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        if not raw:
            return self._dispatch()
        if raw[:1] == b":":
            self.comments += 1
            return None
        name, colon, value = raw.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", errors="replace")
        elif name == b"id" and b"\x00" not in value:
            self._id = value.decode("utf-8", errors="replace")
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event = self._data, self._event
        self._event = None
        if not data:
            return None
        raw = data[0] if len(data) == 1 else b"\n".join(data)
        data.clear()
        return SSEEvent(data=raw.decode("utf-8", errors="replace"), event=event, id=self._id)
