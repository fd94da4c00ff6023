"""Chat-completion chunks -> what the stream said. The one place that reads chunk JSON.

:class:`StreamAssembler` takes each SSE event's data with the time it arrived (seconds since the
request was sent, measured by the caller's clock) and reassembles the answer: content, the first
content and reasoning times, ``finish_reason`` and ``native_finish_reason`` (last non-null),
tool calls by index, usage, and every ``provider`` the chunks named. :meth:`finish` classifies the
ending:

- a chunk with a top-level ``error``, or a choice with ``finish_reason: "error"`` or its own
  ``error``: provider_error, with the message;
- an event whose data is not a JSON object: provider_error ("malformed event");
- no ``[DONE]`` and no ``finish_reason``: provider_error ("truncated stream");
- otherwise ok (a ``[DONE]`` without a finish reason, or a finish reason without ``[DONE]``, is
  tolerated: the generation ended on the wire).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from canary.core.classify import classify_status, error_message, error_of
from canary.core.model import ToolCall, Transport, Usage
from canary.openrouter.sse import DONE, SSEParser

_loads = json.JSONDecoder().decode  # json.loads without its per-call checks
_fast_loads = orjson.loads
_FastError = orjson.JSONDecodeError
# Bytes that end, escape or invalidate a JSON string: a content string without them is its text.
_NOT_PLAIN = re.compile(rb'["\\\x00-\x1f]')
# The body of a JSON string up to its closing quote (escapes included, the quote not).
_STRING_BODY = re.compile(rb'(?:[^"\\]|\\.)*', re.DOTALL)
_SENTINEL = "\u2603"


@dataclass(frozen=True)
class StreamOutcome:
    transport: Transport
    error: str | None = None
    content: str = ""
    finish_reason: str | None = None
    native_finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    served_by: str | None = None  # the first `provider` named
    providers: tuple[str, ...] = ()  # every distinct `provider` named, in order
    served_model: str | None = None  # the first `model` the chunks named
    response_id: str | None = None  # the first `id` the chunks named
    ttft_s: float | None = None
    reasoning_s: float | None = None
    first_token_s: float | None = (
        None  # first generated token of any kind (content, reasoning, tool call)
    )
    done: bool = False
    events: int = 0


@dataclass
class _ToolCallParts:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Template:
    """A chunk of the stream cut around its one varying string: the delta's content, or one tool
    call's arguments (``tool``: that call's index). Chunks that differ from it only in that string
    do only one thing when parsed, append it, so they are read without parsing (see _learn)."""

    prefix: bytes
    suffix: bytes
    tool: int | None
    # The same as SSE bytes (see feed_plain_run): an event's start (empty when the chunk spans
    # several lines), its end, and both.
    event_head: bytes
    event_end: bytes
    between: bytes


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class StreamAssembler:
    def __init__(self) -> None:
        self._content: list[str] = []
        self._finish: str | None = None
        self._native: str | None = None
        self._tools: dict[int, _ToolCallParts] = {}
        self._usage = Usage()
        self._providers: list[str] = []
        self._model: str | None = None
        self._id: str | None = None
        self._ttft: float | None = None
        self._reasoning: float | None = None
        self._first_token: float | None = None
        self._error: str | None = None
        self._malformed: str | None = None
        self.done = False
        self._events = 0
        # The plain content chunk and the tool-call fragment learned so far, at most one of
        # each (see _learn).
        self._templates: tuple[_Template, ...] = ()

    @property
    def first_token_s(self) -> float | None:
        return self._first_token

    @property
    def ttft_s(self) -> float | None:
        """When the first content delta arrived."""
        return self._ttft

    @property
    def reasoning_s(self) -> float | None:
        """When the first reasoning delta arrived."""
        return self._reasoning

    @property
    def failed(self) -> bool:
        """An error chunk or a malformed event was seen: reading on cannot change the outcome."""
        return self._error is not None or self._malformed is not None

    def feed(self, data: str | bytes, at: float) -> None:
        """One SSE event's data (text, or the raw bytes of :meth:`SSEParser.feed_data`, read as
        UTF-8 with replacement), received ``at`` seconds after the request was sent."""
        if type(data) is bytes:
            for template in self._templates:
                prefix, suffix = template.prefix, template.suffix
                if data.startswith(prefix) and data.endswith(suffix):
                    # The same chunk as a learned one but for its varying string: what parsing
                    # it would do is only to append that text.
                    text = data[len(prefix) : len(data) - len(suffix)]
                    value = _string_body(text) if text else None
                    if value:
                        self._append(template, value)
                        self._events += 1
                        return
            if data[:1] == b"{":
                # orjson accepts a subset of what json accepts (valid UTF-8, no NaN, 64-bit
                # integers, nesting under 1024) and reads it the same: anything else takes the
                # text path below, which classifies it exactly as before.
                try:
                    chunk = _fast_loads(data)
                except _FastError:
                    pass
                else:
                    self._events += 1
                    self.feed_chunk(chunk, at)
                    if len(self._templates) < 2:  # one kind is still to learn
                        self._learn(data, chunk)
                    return
            data = data.decode("utf-8", errors="replace")
        self._events += 1
        if data == DONE or (data[:1] != "{" and data.strip() == DONE):
            self.done = True
            return
        try:
            chunk = _loads(data)  # type: ignore[arg-type]
        except json.JSONDecodeError as exc:
            if self._malformed is None:
                self._malformed = f"malformed event #{self._events}: {exc.msg} at char {exc.pos}"
            return
        except RecursionError:
            if self._malformed is None:
                self._malformed = f"malformed event #{self._events}: nested too deeply"
            return
        if not isinstance(chunk, dict):
            if self._malformed is None:
                self._malformed = f"malformed event #{self._events}: not a JSON object"
            return
        self.feed_chunk(chunk, at)

    def _learn(self, data: bytes, chunk: dict[str, Any]) -> None:
        """Keep the bytes around the varying string of ``data`` when feeding it again with any
        other string there would only append that string: one choice, and a delta of role and
        content alone (once the first content token is timed) or of one tool call's arguments
        alone (no id, no name), with no finish reason, usage or error. Chunks of a stream differ
        by that string alone (same id, provider, model), so the rest of them are read without
        parsing."""
        choices = chunk.get("choices")
        if (
            "usage" in chunk
            or "error" in chunk
            or type(choices) is not list
            or len(choices) != 1
            or type(choices[0]) is not dict
        ):
            return
        choice = choices[0]
        learned = {t.tool is None for t in self._templates}  # True: the content's
        if True not in learned and self._ttft is not None and _plain_choice(choice):
            self._learn_slot(data, chunk, None)
        elif False not in learned and self._first_token is not None:
            index = _tool_fragment_index(choice)
            if index is not None:
                self._learn_slot(data, chunk, index)

    def _learn_slot(self, data: bytes, chunk: dict[str, Any], tool: int | None) -> None:
        name = "content" if tool is None else "arguments"
        key = f'"{name}":"'.encode()
        if data.count(key) != 1:
            return
        start = data.index(key) + len(key)
        end = _STRING_BODY.match(data, start).end()  # type: ignore[union-attr]  # always matches
        if data[end : end + 1] != b'"':
            return
        prefix, suffix = data[:start], data[end:]
        # Proof that the string there is the varying one and nothing else: the same bytes with
        # another string in its place parse to the same chunk with that string.
        try:
            other = _fast_loads(prefix + _SENTINEL.encode() + suffix)
        except _FastError:
            return
        holder = _holder(other, tool)
        if holder is None or holder.get(name) != _SENTINEL:
            return
        holder[name] = _holder(chunk, tool)[name]  # type: ignore[index]  # the same shape
        if other != chunk:
            return
        if b"\n" in data or b"\r" in data:
            head = end_ = b""  # data of several lines: its events are not one "data: " line each
        else:
            head, end_ = b"data: " + prefix, suffix + b"\n\n"
        self._templates += (_Template(prefix, suffix, tool, head, end_, end_ + head),)

    def _append(self, template: _Template, text: str) -> None:
        if template.tool is None:
            self._content.append(text)
        else:
            self._tools[template.tool].arguments.append(text)

    def feed_plain_run(self, block: bytes) -> int:
        """Read at once the events at the start of ``block`` (SSE bytes, from an event boundary)
        that are a learned chunk with another non-empty string in its place (see _learn);
        returns how many bytes they took (0: none, read the block event by event).

        Such events are ``data: <prefix><string><suffix>`` and a blank line each, so one split
        on what lies between two strings cuts them all. Whatever is not such an event (another
        chunk, a comment, CRLF) leaves a raw line end or an unescaped quote in its part, and then
        nothing is taken here: :meth:`feed` reads it all as before."""
        for template in self._templates:
            head = template.event_head
            if head and block.startswith(head):
                return self._read_run(template, block)
        return 0

    def _read_run(self, template: _Template, block: bytes) -> int:
        head, between, event_end = template.event_head, template.between, template.event_end
        parts = block[len(head) :].split(between)
        last = parts.pop()
        end = last.find(event_end)
        if end >= 0:  # the last event is complete too
            parts.append(last[:end])
            taken = len(block) - len(last) + end + len(event_end)
        elif parts:  # the block stops inside the last event: the ones before it are taken
            taken = len(block) - len(last) - len(between) + len(event_end)
        else:
            return 0
        if b"" in parts:
            return 0
        if _NOT_PLAIN.search(b"".join(parts)) is None:
            try:
                # NUL between the strings: one that is not UTF-8 on its own fails here even
                # where joining it to the next one would make a valid character
                text = b"\0".join(parts).decode()
            except UnicodeDecodeError:
                return 0
            text = text.replace("\0", "")
        else:
            strings = _string_bodies(parts)
            if strings is None:
                return 0
            text = "".join(strings)
        self._append(template, text)
        self._events += len(parts)
        return taken

    def feed_chunk(self, chunk: dict[str, Any], at: float) -> None:
        get = chunk.get
        provider = get("provider")
        if provider and type(provider) is str and provider not in self._providers:
            self._providers.append(provider)
        if self._model is None:
            model = get("model")
            if model and type(model) is str:
                self._model = model
        if self._id is None:
            answer_id = get("id")
            if answer_id and type(answer_id) is str:
                self._id = answer_id
        if "error" in chunk and self._error is None and error_of(chunk) is not None:
            self._error = "mid-stream " + error_message(None, chunk)
        usage = get("usage")
        if usage is not None and isinstance(usage, dict):
            self._usage = Usage(
                prompt_tokens=_int(usage.get("prompt_tokens")),
                completion_tokens=_int(usage.get("completion_tokens")),
                cost_usd=_float(usage.get("cost")),
            )
        choices = get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
                self._choice(choice, at)

    def _choice(self, choice: dict[str, Any], at: float) -> None:
        get = choice.get
        delta = get("delta")
        if type(delta) is not dict:
            delta = get("message")  # a non-streaming choice, fed by assemble_completion
        if type(delta) is dict:
            content = delta.get("content")
            if content and type(content) is str:
                self._content.append(content)
                if self._ttft is None:
                    self._ttft = at
                    if self._first_token is None:
                        self._first_token = at
            # A plain content delta ({"role", "content"}) has nothing more to read.
            if len(delta) > 2 or (len(delta) == 2 and "role" not in delta) or content is None:
                self._delta_rest(delta, at)
        finish = get("finish_reason")
        if finish and type(finish) is str:
            self._finish = finish
        native = get("native_finish_reason")
        if native and type(native) is str:
            self._native = native
        if self._error is None and ("error" in choice or finish == "error"):
            if isinstance(get("error"), dict):
                self._error = "mid-stream " + error_message(None, {"error": choice["error"]})
            elif finish == "error":
                self._error = "mid-stream error: finish_reason error"

    def _delta_rest(self, delta: dict[str, Any], at: float) -> None:
        """Reasoning and tool-call parts of a delta."""
        if "reasoning" in delta or "reasoning_details" in delta:
            details = delta.get("reasoning_details")
            if _text(delta.get("reasoning")) or (isinstance(details, list) and details):
                if self._reasoning is None:
                    self._reasoning = at
                self._token(at)
        tool_calls = delta.get("tool_calls")
        if tool_calls is not None and isinstance(tool_calls, list):
            for position, part in enumerate(tool_calls):
                if isinstance(part, dict):
                    self._tool_call(position, part)
                    self._token(at)

    def _token(self, at: float) -> None:
        if self._first_token is None:
            self._first_token = at

    def _tool_call(self, position: int, part: dict[str, Any]) -> None:
        index = _int(part.get("index"))
        parts = self._tools.setdefault(position if index is None else index, _ToolCallParts())
        if parts.id is None and _text(part.get("id")):
            parts.id = part["id"]
        function = part.get("function")
        if isinstance(function, dict):
            # The name arrives whole (some hosts repeat it in every fragment): the first one wins.
            if parts.name is None and _text(function.get("name")):
                parts.name = function["name"]
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                parts.arguments.append(arguments)
            elif isinstance(arguments, dict):  # a host that sends parsed arguments
                parts.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def finish(self) -> StreamOutcome:
        transport, error = Transport.ok, None
        if self._error is not None:
            transport, error = Transport.provider_error, self._error
        elif self._malformed is not None:
            transport, error = Transport.provider_error, self._malformed
        elif not self.done and self._finish is None:
            transport, error = (
                Transport.provider_error,
                "truncated stream: no [DONE] and no finish_reason",
            )
        tool_calls = tuple(
            ToolCall(index=i, id=p.id, name=p.name, arguments="".join(p.arguments))
            for i, p in sorted(self._tools.items())
        )
        return StreamOutcome(
            transport=transport,
            error=error,
            content="".join(self._content),
            finish_reason=self._finish,
            native_finish_reason=self._native,
            tool_calls=tool_calls,
            usage=self._usage,
            served_by=self._providers[0] if self._providers else None,
            providers=tuple(self._providers),
            served_model=self._model,
            response_id=self._id,
            ttft_s=self._ttft,
            reasoning_s=self._reasoning,
            first_token_s=self._first_token,
            done=self.done,
            events=self._events,
        )


def feed_piece(
    parser: SSEParser, assembler: StreamAssembler, piece: bytes, since_sent: Callable[[], float]
) -> None:
    """One read of the body: the plain content events at its start at once when the parser
    stands between two events (no time needed: the first token is in), then the rest event by
    event, each timed by ``since_sent()``."""
    if parser.between_events:
        taken = assembler.feed_plain_run(piece)
        if taken:
            piece = piece[taken:]
    feed = assembler.feed
    for data in parser.feed_data(piece):
        feed(data, since_sent())


def _string_body(text: bytes) -> str | None:
    """The string that ``text`` spells between two quotes of JSON, when it is one string."""
    if _NOT_PLAIN.search(text) is None:
        try:
            return text.decode()
        except UnicodeDecodeError:
            return None
    try:  # escapes: one string exactly, or an error (an unescaped quote ends it early)
        value = _fast_loads(b'"' + text + b'"')
    except _FastError:
        return None
    return value if type(value) is str else None


def _string_bodies(parts: list[bytes]) -> list[str] | None:
    """The strings that ``parts`` spell between quotes of JSON, when each is exactly one
    non-empty string (escapes allowed). One joined with the next by an unescaped quote would
    make more strings than parts, or no JSON at all."""
    try:
        values = _fast_loads(b'["' + b'","'.join(parts) + b'"]')
    except _FastError:
        return None
    if len(values) != len(parts) or not all(type(v) is str and v for v in values):
        return None
    return values  # type: ignore[no-any-return]


def _holder(chunk: Any, tool: int | None) -> dict[str, Any] | None:
    """The dict that holds a chunk's varying string: the first choice's delta (its
    ``content``), or its first tool call's function (its ``arguments``)."""
    try:
        delta = chunk["choices"][0]["delta"]
        holder = delta if tool is None else delta["tool_calls"][0]["function"]
    except (KeyError, IndexError, TypeError):
        return None
    return holder if type(holder) is dict else None


def _tool_fragment_index(choice: dict[str, Any]) -> int | None:
    """The tool call index of a choice whose only effect is one call's next arguments: a
    non-empty text, no id, no name, no content, no finish reason (None: not such a choice)."""
    delta = _delta_alone(choice)
    if (
        delta is None
        or not delta.keys() <= {"role", "content", "tool_calls"}
        or delta.get("content") not in (None, "")
    ):
        return None
    calls = delta.get("tool_calls")
    if type(calls) is not list or len(calls) != 1 or type(calls[0]) is not dict:
        return None
    call = calls[0]
    function = call.get("function")
    index = call.get("index")
    if (
        not call.keys() <= {"index", "type", "function"}
        or type(function) is not dict
        or function.keys() != {"arguments"}
        or type(function["arguments"]) is not str
        or not function["arguments"]
        or (index is not None and type(index) is not int)
    ):
        return None
    return 0 if index is None else index


def _plain_choice(choice: dict[str, Any]) -> bool:
    """A choice whose only effect is its content: a non-empty text, with no finish reason."""
    delta = _delta_alone(choice)
    return (
        delta is not None
        and delta.keys() <= {"role", "content"}
        and type(delta.get("content")) is str
        and bool(delta["content"])
    )


def _delta_alone(choice: dict[str, Any]) -> dict[str, Any] | None:
    """The delta of the first choice when it is all the choice says: no finish reason (nor a
    native one) and no error."""
    delta = choice.get("delta")
    if (
        choice.get("index", 0) not in (0, None)
        or choice.get("finish_reason")
        or choice.get("native_finish_reason")
        or "error" in choice
        or type(delta) is not dict
    ):
        return None
    return delta


def assemble_completion(body: dict[str, Any]) -> StreamOutcome:
    """A non-streaming chat completion body read with the same rules (times are all zero)."""
    status_class = classify_status(200, body)
    assembler = StreamAssembler()
    if status_class is not Transport.ok:
        return StreamOutcome(transport=status_class, error=error_message(200, body))
    assembler.feed_chunk(body, 0.0)
    assembler.done = True
    return assembler.finish()
