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
    """Feed bytes with :meth:`feed` (events) or :meth:`feed_data` (only each event's data, as
    the raw bytes: the probes' path, which hands them to the JSON parser undecoded); call
    :meth:`close` (or :meth:`close_data`) at the end of the body. Use one of the two per parser."""

    def __init__(self, *, max_line_bytes: int = 4 * 1024 * 1024) -> None:
        self._max_line = max_line_bytes
        self._buffer = bytearray()
        self._scanned = 0
        self._data: list[bytes] = []  # the data lines of the event being read, undecoded
        self._event: str | None = None
        self._id: str | None = None
        self._first_line = True
        self._raw = False
        self.comments = 0  # keep-alive comments seen, for diagnostics

    @property
    def between_events(self) -> bool:
        """Nothing of an event is pending: the next bytes start a new line of a new event."""
        return not (self._buffer or self._data or self._first_line or self._event is not None)

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._raw = False
        return self._feed(chunk)  # type: ignore[return-value]

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """Like :meth:`feed`, but only each event's data, undecoded (several data lines joined
        with LF); decoding it as UTF-8 with replacement gives :meth:`feed`'s ``data``."""
        self._raw = True
        if b"\r" not in chunk and not self._buffer.endswith(b"\r"):
            return self._feed_lf(chunk)  # type: ignore[return-value]
        return self._feed_any(chunk)  # type: ignore[return-value]

    def _feed(self, chunk: bytes) -> list[SSEEvent | bytes]:
        # The common case, LF line ends only: split in C. The buffer never holds an LF, and a CR
        # only as its last byte (the general path below consumes every other one).
        if b"\r" not in chunk and not self._buffer.endswith(b"\r"):
            return self._feed_lf(chunk)
        return self._feed_any(chunk)

    def _feed_lf(self, chunk: bytes) -> list[SSEEvent | bytes]:
        lines = chunk.split(b"\n")
        rest = lines.pop()  # after the last LF: an incomplete line
        buf = self._buffer
        if not lines:
            buf += rest
            self._scanned = len(buf)
            if len(buf) > self._max_line:
                raise SSEError(f"an event-stream line exceeds {self._max_line} bytes")
            return []
        if buf:
            buf += lines[0]
            lines[0] = bytes(buf)
            buf.clear()
        if rest:
            buf += rest
            if len(buf) > self._max_line:
                raise SSEError(f"an event-stream line exceeds {self._max_line} bytes")
        self._scanned = len(buf)
        events: list[SSEEvent | bytes] = []
        if self._first_line:
            event = self._line(lines[0])
            if event is not None:
                events.append(event)
            del lines[0]
        pending = self._data
        raw_mode = self._raw
        for raw in lines:
            if raw[:6] == b"data: ":
                pending.append(raw[6:])
            elif raw:
                self._line(raw)
            elif pending:  # a blank line: dispatch
                if raw_mode and self._event is None:
                    events.append(pending[0] if len(pending) == 1 else b"\n".join(pending))
                    pending.clear()
                else:
                    events.append(self._dispatch())  # type: ignore[arg-type]
            else:
                self._event = None
        return events

    def _feed_any(self, chunk: bytes) -> list[SSEEvent | bytes]:
        self._buffer.extend(chunk)
        events: list[SSEEvent | bytes] = []
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
        self._raw = False
        return self._close()  # type: ignore[return-value]

    def close_data(self) -> list[bytes]:
        """:meth:`close` for :meth:`feed_data`."""
        self._raw = True
        return self._close()  # type: ignore[return-value]

    def _close(self) -> list[SSEEvent | bytes]:
        events: list[SSEEvent | bytes] = []
        if self._buffer.endswith(b"\r"):
            events += self._feed(b"\n")  # the CR ended a line: nothing more can follow it
        self._buffer.clear()
        self._scanned = 0
        event = self._dispatch()
        return events + ([event] if event is not None else [])

    def _line(self, raw: bytes) -> SSEEvent | bytes | None:
        if self._first_line:
            self._first_line = False
            if raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
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

    def _dispatch(self) -> SSEEvent | bytes | None:
        data = self._data
        if not data:
            self._event = None
            return None
        raw = data[0] if len(data) == 1 else b"\n".join(data)
        data.clear()
        if self._raw:
            self._event = None
            return raw
        event = SSEEvent(data=raw.decode("utf-8", errors="replace"), event=self._event, id=self._id)
        self._event = None
        return event


def parse_all(body: bytes) -> list[SSEEvent]:
    """Parse a complete body at once (fixtures, tests)."""
    parser = SSEParser()
    return parser.feed(body) + parser.close()
