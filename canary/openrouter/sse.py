"""An incremental Server-Sent Events parser: bytes in (any chunking), events out.

Follows the WHATWG event-stream rules that matter for OpenRouter: lines end with LF, CRLF or CR
(a CR at the end of one chunk and an LF at the start of the next are one line end); lines that
start with ``:`` are comments (``: OPENROUTER PROCESSING``, a bare ``: ``) and are skipped; several
``data:`` lines of one event are joined with ``\\n``; a blank line dispatches the event; an event
with no data is dropped; unknown fields are ignored. Bytes are decoded per line as UTF-8 with
replacement, so invalid bytes become U+FFFD (which the language contract sees as corruption)
instead of an exception. A line longer than ``max_line_bytes`` raises :class:`SSEError`.
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
    """Feed bytes with :meth:`feed`; call :meth:`close` at the end of the body."""

    def __init__(self, *, max_line_bytes: int = 4 * 1024 * 1024) -> None:
        self._max_line = max_line_bytes
        self._buffer = bytearray()
        self._scanned = 0
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._first_line = True
        self.comments = 0  # keep-alive comments seen, for diagnostics

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        # The common case, LF line ends only: split in C. The buffer never holds an LF, and a CR
        # only as its last byte (the general path below consumes every other one).
        if b"\r" not in chunk and not self._buffer.endswith(b"\r"):
            return self._feed_lf(chunk)
        return self._feed_any(chunk)

    def _feed_lf(self, chunk: bytes) -> list[SSEEvent]:
        buf = self._buffer
        end = chunk.rfind(b"\n")
        if end < 0:
            buf.extend(chunk)
            self._scanned = len(buf)
            if len(buf) > self._max_line:
                raise SSEError(f"an event-stream line exceeds {self._max_line} bytes")
            return []
        if buf:
            buf.extend(chunk[:end])
            data = bytes(buf)
        else:
            data = chunk[:end]
        self._buffer = bytearray(chunk[end + 1 :])
        self._scanned = len(self._buffer)
        events: list[SSEEvent] = []
        for raw in data.split(b"\n"):
            if raw[:6] == b"data: " and not self._first_line:
                self._data.append(raw[6:].decode("utf-8", errors="replace"))
            elif raw:
                self._line(raw)
            else:
                self._first_line = False
                event = self._dispatch()
                if event is not None:
                    events.append(event)
        if len(self._buffer) > self._max_line:
            raise SSEError(f"an event-stream line exceeds {self._max_line} bytes")
        return events

    def _feed_any(self, chunk: bytes) -> list[SSEEvent]:
        self._buffer.extend(chunk)
        events: list[SSEEvent] = []
        start = 0
        buf = self._buffer
        size = len(buf)
        scan = self._scanned  # buf[:scan] is known to hold no line end: do not search it again
        while start < size:
            lf = buf.find(b"\n", max(start, scan))
            cr = buf.find(b"\r", max(start, scan), lf if lf >= 0 else size)
            if cr >= 0:
                if cr + 1 == size:
                    break  # a CR at the end: wait to see whether an LF follows
                end, next_start = cr, cr + (2 if buf[cr + 1] == 0x0A else 1)
            elif lf >= 0:
                end, next_start = lf, lf + 1
            else:
                break
            event = self._line(bytes(buf[start:end]))
            if event is not None:
                events.append(event)
            start = next_start
        del buf[:start]
        self._scanned = len(buf) - 1 if buf.endswith(b"\r") else len(buf)
        if len(buf) > self._max_line:
            raise SSEError(f"an event-stream line exceeds {self._max_line} bytes")
        return events

    def close(self) -> list[SSEEvent]:
        """End of body: an event whose lines are complete but lack the final blank line is kept;
        an incomplete last line (no line end: the connection was cut) is dropped."""
        events: list[SSEEvent] = []
        if self._buffer.endswith(b"\r"):
            events += self.feed(b"\n")  # the CR ended a line: nothing more can follow it
        self._buffer.clear()
        self._scanned = 0
        event = self._dispatch()
        return events + ([event] if event is not None else [])

    def _line(self, raw: bytes) -> SSEEvent | None:
        if self._first_line:
            self._first_line = False
            if raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
        if not raw:
            return self._dispatch()
        if raw[:1] == b":":
            self.comments += 1
            return None
        line = raw.decode("utf-8", errors="replace")
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\x00" not in value:
            self._id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = None
            return None
        event = SSEEvent(data="\n".join(self._data), event=self._event, id=self._id)
        self._data = []
        self._event = None
        return event


def parse_all(body: bytes) -> list[SSEEvent]:
    """Parse a complete body at once (fixtures, tests)."""
    parser = SSEParser()
    return parser.feed(body) + parser.close()
