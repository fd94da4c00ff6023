"""ASGI responses that send a precomputed answer at precomputed times.

Every event's bytes and its deadline (seconds after the request arrived) are computed before the
first send; the sender sleeps to absolute deadlines, so lateness never accumulates, and sends
every event that is already due in one write.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from pydantic import JsonValue
from starlette.types import Receive, Scope, Send

from canary.sim.answers import Plan
from canary.sim.state import SimState
from canary.sim.wire import DONE, KEEPALIVE, error_type

WHITESPACE = b"\n         \n"  # what OpenRouter sends before a non-streaming body
_KEEPALIVE_EVERY_S = 1.0
_SLACK_S = 0.002


class SimulatedDisconnect(Exception):
    """Raised inside the ASGI app to make the server drop the connection mid-body."""


@dataclass
class Answer:
    """Who answers and what: everything the response needs besides the plan."""

    gen_id: str
    created: int
    model: str
    provider_name: str
    prompt_tokens: int
    price_prompt: float  # USD per million
    price_completion: float
    arrived: float  # perf_counter at arrival
    log: dict[str, JsonValue]  # the request log entry, updated as tokens go out

    def usage(self, plan: Plan) -> dict[str, JsonValue]:
        completion = plan.completion_tokens
        cost = (self.prompt_tokens * self.price_prompt + completion * self.price_completion) / 1e6
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
            "cost": round(cost, 12),
            "is_byok": False,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": len(plan.reasoning)},
        }

    def mark_first_token(self, now: float) -> None:
        if self.log.get("first_token_s") is None:
            self.log["first_token_s"] = now
            self.log["first_token_delay_ms"] = round((now - self.arrived) * 1000, 3)


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


async def _sleep_until(deadline: float, slack: float = 0.0) -> None:
    """Sleep to an absolute perf_counter() deadline (or within `slack` before it); the loop's
    timers can fire a bit early."""
    for _ in range(1000):
        delay = deadline - time.perf_counter()
        if delay <= slack:
            return
        await asyncio.sleep(delay)


async def _wait_disconnect(receive: Receive, state: SimState) -> None:
    while not state.closing.is_set():
        try:
            message = await asyncio.wait_for(receive(), 0.25)
        except TimeoutError:
            continue
        if message["type"] == "http.disconnect":
            return


class StreamResponse:
    """`stream: true`: SSE with keep-alives, token chunks, finish, usage and [DONE]."""

    def __init__(self, plan: Plan, answer: Answer, state: SimState) -> None:
        self.plan, self.answer, self.state = plan, answer, state
        self.gone = False

    def _events(self) -> tuple[list[tuple[float, bytes, bool]], list[tuple[float, bytes, bool]]]:
        """(head, tail): head holds (deadline, bytes, is_token) up to the abnormal-ending point."""
        a, plan = self.answer, self.plan
        head = (
            f'data: {{"id":"{a.gen_id}","object":"chat.completion.chunk","created":{a.created},'
            f'"model":{_dumps(a.model)},"provider":{_dumps(a.provider_name)},"choices":[{{"index":0,'
            '"delta":{"role":"assistant",'
        )
        tail_open = '},"finish_reason":null,"native_finish_reason":null}]}\n\n'
        events: list[tuple[float, bytes, bool]] = [(0.0, KEEPALIVE + KEEPALIVE, False)]
        if plan.reasoning:
            start = plan.ttft_s - plan.reasoning_s
            step = plan.reasoning_s / len(plan.reasoning)
            for i, tok in enumerate(plan.reasoning):
                body = f'"content":"","reasoning":{_dumps(tok)}'
                events.append((start + i * step, (head + body + tail_open).encode(), False))
        t = plan.ttft_s
        tokens: list[str] = []
        if plan.tool_call is not None:
            call = plan.tool_call
            first = {
                "index": 0,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            tokens.append(f'"content":null,"tool_calls":[{_dumps(first)}]')
            for piece in call.pieces:
                frag = {"index": 0, "type": "function", "function": {"arguments": piece}}
                tokens.append(f'"content":null,"tool_calls":[{_dumps(frag)}]')
        tokens.extend(f'"content":{_dumps(tok)}' for tok in plan.tokens)
        cut = len(tokens) if plan.ending == "done" else min(plan.end_after, len(tokens))
        for i, body in enumerate(tokens[:cut]):
            events.append((t + i * plan.interval_s, (head + body + tail_open).encode(), True))
        end_t = t + max(0, cut - 1) * plan.interval_s
        base = {
            "id": a.gen_id,
            "object": "chat.completion.chunk",
            "created": a.created,
            "model": a.model,
            "provider": a.provider_name,
        }
        tail: list[tuple[float, bytes, bool]] = []
        if plan.ending == "done":
            finish = (
                head
                + '"content":""},"finish_reason":'
                + _dumps(plan.finish_reason)
                + ',"native_finish_reason":'
                + _dumps(plan.native_finish_reason)
                + "}]}\n\n"
            )
            usage = {**base, "choices": [], "usage": a.usage(plan)}
            tail.append((end_t, finish.encode(), False))
            tail.append(
                (end_t, KEEPALIVE + b"data: " + _dumps(usage).encode() + b"\n\n" + DONE, False)
            )
        elif plan.ending == "error":
            code = plan.error_code
            message = "Internal Server Error" if code >= 500 else "Provider returned error"
            chunk = {
                **base,
                "error": {
                    "code": code,
                    "message": message,
                    "metadata": {"error_type": error_type(code)},
                },
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": "error",
                        "native_finish_reason": "error",
                    }
                ],
            }
            tail.append((end_t, b"data: " + _dumps(chunk).encode() + b"\n\n", False))
        return events, tail

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        events, tail = self._events()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                    (b"x-generation-id", self.answer.gen_id.encode()),
                ],
            }
        )
        watcher = asyncio.ensure_future(self._watch(receive))
        try:
            await self._send_timed(events + tail, send)
        finally:
            watcher.cancel()
        if self.gone:
            return
        if self.plan.ending == "stall":
            await self._stall(receive, send)
        elif self.plan.ending == "disconnect":
            raise SimulatedDisconnect(self.answer.gen_id)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _stall(self, receive: Receive, send: Send) -> None:
        """A stream left open with no more tokens: keep-alive comments every second, as
        OpenRouter sends while a provider's queue holds the request, until the client goes."""
        while not self.state.closing.is_set():
            try:
                message = await asyncio.wait_for(receive(), _KEEPALIVE_EVERY_S)
            except TimeoutError:
                await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                continue
            if message["type"] == "http.disconnect":
                return

    async def _watch(self, receive: Receive) -> None:
        """Notice a client that went away, so its stream stops instead of writing into the void."""
        while (await receive())["type"] != "http.disconnect":
            pass
        self.gone = True

    async def _send_timed(self, events: list[tuple[float, bytes, bool]], send: Send) -> None:
        arrived = self.answer.arrived
        closing = self.state.closing
        i, n = 0, len(events)
        slack = 0.0  # the first token goes out on time; later ones may go up to _SLACK_S early,
        # which saves the event loop a second wake-up per token when its timer fires early
        while i < n:
            if self.gone or closing.is_set():
                return
            deadline = arrived + events[i][0]
            now = time.perf_counter()
            while deadline - now > _KEEPALIVE_EVERY_S * 1.5:
                await asyncio.sleep(_KEEPALIVE_EVERY_S)
                await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                now = time.perf_counter()
            if deadline > now + slack:
                await _sleep_until(deadline, slack)
                now = time.perf_counter()
            chunk = bytearray()
            token = False
            while i < n and arrived + events[i][0] <= now + max(slack, 0.0005):
                chunk += events[i][1]
                token = token or events[i][2]
                i += 1
            if token:
                self.answer.mark_first_token(time.perf_counter())
                slack = _SLACK_S
            await send({"type": "http.response.body", "body": bytes(chunk), "more_body": True})


class CompletionResponse:
    """`stream: false`: leading whitespace at once, then the whole body when generation ends."""

    def __init__(self, plan: Plan, answer: Answer, state: SimState) -> None:
        self.plan, self.answer, self.state = plan, answer, state

    def body(self) -> dict[str, JsonValue]:
        a, plan = self.answer, self.plan
        tokens = plan.tokens if plan.ending == "done" else plan.tokens[: plan.end_after]
        message: dict[str, JsonValue] = {
            "role": "assistant",
            "content": "".join(tokens),
            "refusal": None,
            "reasoning": "".join(plan.reasoning) or None,
        }
        choice: dict[str, JsonValue] = {
            "logprobs": None,
            "finish_reason": plan.finish_reason,
            "native_finish_reason": plan.native_finish_reason,
            "index": 0,
        }
        if plan.tool_call is not None and plan.ending == "done":
            call = plan.tool_call
            message["tool_calls"] = [
                {
                    "index": 0,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": "".join(call.pieces)},
                }
            ]
        if plan.ending == "error":
            code = plan.error_code
            choice["finish_reason"] = choice["native_finish_reason"] = "error"
            choice["error"] = {
                "code": code,
                "message": "Provider returned error",
                "metadata": {"error_type": error_type(code)},
            }
        choice["message"] = message
        return {
            "id": a.gen_id,
            "provider": a.provider_name,
            "model": a.model,
            "object": "chat.completion",
            "created": a.created,
            "choices": [choice],
            "system_fingerprint": None,
            "usage": a.usage(plan),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        plan = self.plan
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"x-generation-id", self.answer.gen_id.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": WHITESPACE, "more_body": True})
        count = len(plan.tokens) + (len(plan.tool_call.pieces) if plan.tool_call else 0)
        if plan.ending != "done":
            count = min(count, plan.end_after)
        finish = self.answer.arrived + plan.ttft_s + max(0, count - 1) * plan.interval_s
        await _sleep_until(finish)
        if plan.ending == "stall":
            await _wait_disconnect(receive, self.state)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if plan.ending == "disconnect":
            raise SimulatedDisconnect(self.answer.gen_id)
        if count:
            self.answer.mark_first_token(time.perf_counter())
        body = _dumps(self.body()).encode()
        await send({"type": "http.response.body", "body": body, "more_body": False})
