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

import contextlib
import json
from dataclasses import dataclass, field

from pydantic import JsonValue

from canary.core.classify import error_message, error_of
from canary.core.model import ToolCall, Transport, Usage
from canary.openrouter.shapes import JSONObject, as_int, as_object, as_text
from canary.openrouter.sse import DONE


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
    first_token_s: float | None = None  # first generated token of any kind
    done: bool = False
    events: int = 0


@dataclass
class _ToolCallParts:
    id: str | None = None
    name: str | None = None
    arguments: list[str] = field(default_factory=list)


def _float(value: JsonValue) -> float | None:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        with contextlib.suppress(ValueError):
            return float(value)
    return None


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

    @property
    def first_token_s(self) -> float | None:
        """When the first generated token of any kind (content, reasoning, tool call) arrived."""
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
    def pausable(self) -> bool:
        """The first content token is in and no finish reason yet: the rest can be read late."""
        return self._ttft is not None and self._finish is None

    @property
    def failed(self) -> bool:
        """An error chunk or a malformed event was seen: reading on cannot change the outcome."""
        return self._error is not None or self._malformed is not None

    def feed(self, data: str, at: float) -> None:
        """One SSE event's data, received ``at`` seconds after the request was sent."""
        self._events += 1
        if data[:1] != "{" and data.strip() == DONE:
            self.done = True
            return
        try:
            chunk: JsonValue = json.loads(data)
        except json.JSONDecodeError as exc:
            self._malformed_event(f"{exc.msg} at char {exc.pos}")
            return
        except RecursionError:
            self._malformed_event("nested too deeply")
            return
        if not isinstance(chunk, dict):
            self._malformed_event("not a JSON object")
            return
        self.feed_chunk(chunk, at)

    def _malformed_event(self, why: str) -> None:
        if self._malformed is None:
            self._malformed = f"malformed event #{self._events}: {why}"

    def feed_chunk(self, chunk: JSONObject, at: float) -> None:
        provider = chunk.get("provider")
        if provider and isinstance(provider, str) and provider not in self._providers:
            self._providers.append(provider)
        self._model = self._model or as_text(chunk.get("model")) or None
        self._id = self._id or as_text(chunk.get("id")) or None
        if "error" in chunk and self._error is None and error_of(chunk) is not None:
            self._error = "mid-stream " + error_message(None, chunk)
        if "usage" in chunk and isinstance(usage := chunk["usage"], dict):
            self._usage = Usage(
                prompt_tokens=as_int(usage.get("prompt_tokens")),
                completion_tokens=as_int(usage.get("completion_tokens")),
                cost_usd=_float(usage.get("cost")),
            )
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
                    self._choice(choice, at)

    def _choice(self, choice: JSONObject, at: float) -> None:
        # a streaming choice has a delta; a chunk shaped as a whole completion, a message
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = choice.get("message")
        if isinstance(delta, dict):
            self._delta(delta, at)
        finish = choice.get("finish_reason")
        if finish and isinstance(finish, str):
            self._finish = finish
        native = choice.get("native_finish_reason")
        if native and isinstance(native, str):
            self._native = native
        if self._error is None and ("error" in choice or finish == "error"):
            error = as_object(choice.get("error"))
            if error is not None:
                self._error = "mid-stream " + error_message(None, {"error": error})
            elif finish == "error":
                self._error = "mid-stream error: finish_reason error"

    def _delta(self, delta: JSONObject, at: float) -> None:
        content = delta.get("content")
        if content and isinstance(content, str):
            self._content.append(content)
            if self._ttft is None:
                self._ttft = at
                self._token(at)
        if "reasoning" in delta or "reasoning_details" in delta:
            details = delta.get("reasoning_details")
            if as_text(delta.get("reasoning")) or (isinstance(details, list) and details):
                if self._reasoning is None:
                    self._reasoning = at
                self._token(at)
        tool_calls = delta.get("tool_calls")
        if tool_calls and isinstance(tool_calls, list):
            for position, part in enumerate(tool_calls):
                if isinstance(part, dict):
                    self._tool_call(position, part)
                    self._token(at)

    def _token(self, at: float) -> None:
        if self._first_token is None:
            self._first_token = at

    def _tool_call(self, position: int, part: JSONObject) -> None:
        index = as_int(part.get("index"))
        parts = self._tools.setdefault(position if index is None else index, _ToolCallParts())
        parts.id = parts.id or as_text(part.get("id")) or None
        function = as_object(part.get("function"))
        if function is not None:
            # The name arrives whole (some hosts repeat it in every fragment): the first one wins.
            parts.name = parts.name or as_text(function.get("name")) or None
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
