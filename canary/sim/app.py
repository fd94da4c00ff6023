"""The simulator's Starlette app: OpenRouter under /api/v1 and the control API under /_sim/."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable

from pydantic import JsonValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from canary.sim.answers import ChatRequest, compose
from canary.sim.control import control_routes
from canary.sim.routing import Unroutable, as_list, route, sent_parameters
from canary.sim.state import SimState, UnknownModel
from canary.sim.stream import Answer, CompletionResponse, StreamResponse
from canary.sim.wire import (
    endpoints_json,
    error_body,
    error_type,
    generation_json,
    model_json,
    providers_json,
)

PROVIDER_KEYS = frozenset({
    "order", "allow_fallbacks", "require_parameters", "data_collection", "zdr",
    "enforce_distillable_text", "only", "ignore", "quantizations", "sort",
    "preferred_min_throughput", "preferred_max_latency", "max_price",
})  # fmt: skip
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _error(
    code: int,
    message: str,
    metadata: dict[str, JsonValue] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(error_body(code, message, metadata), status_code=code, headers=headers)


def _text(content: JsonValue) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _chat_request(body: dict[str, JsonValue]) -> ChatRequest:
    messages = [m for m in as_list(body.get("messages")) if isinstance(m, dict)]
    users = [m for m in messages if m.get("role") == "user"]
    last = _text(users[-1].get("content")) if users else _text(messages[-1].get("content"))
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    tools = tuple(t for t in as_list(body.get("tools")) if isinstance(t, dict))
    fmt = body.get("response_format")
    temperature = body.get("temperature")
    return ChatRequest(
        model=str(body["model"]),
        last_user=last,
        stream=bool(body.get("stream")),
        max_tokens=int(max_tokens) if isinstance(max_tokens, int) else None,
        response_format=fmt if isinstance(fmt, dict) else None,
        tools=tools,
        tool_choice=body.get("tool_choice"),
        prompt_chars=sum(len(_text(m.get("content"))) for m in messages),
        temperature=float(temperature) if isinstance(temperature, int | float) else 1.0,
    )


def _validate(body: dict[str, JsonValue]) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Required"
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(isinstance(m, dict) for m in messages)
    ):
        return "messages: Expected a non-empty array of messages"
    prefs = body.get("provider")
    if prefs is not None:
        if not isinstance(prefs, dict):
            return "provider: Expected object"
        extra = sorted(set(prefs) - PROVIDER_KEYS)
        if extra:
            return f"provider: Unrecognized key(s) in object: {', '.join(map(repr, extra))}"
        for key in ("order", "only", "ignore", "quantizations"):
            if prefs.get(key) is not None and not isinstance(prefs[key], list):
                return f"provider.{key}: Expected array"
    return None


def build_app(state: SimState) -> SimApp:
    """The ASGI app serving `state`."""

    def root_url(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    async def list_models(request: Request) -> Response:
        models = list(state.models.values())
        wanted = request.query_params.get("supported_parameters")
        data = [model_json(m, root_url(request)) for m in models]
        if wanted:
            data = [d for d in data if wanted in as_list(d["supported_parameters"])]
        return JSONResponse({"data": data, "links": {"next": None}, "total_count": len(data)})

    async def list_endpoints(request: Request) -> Response:
        model_id = f"{request.path_params['author']}/{request.path_params['slug']}"
        try:
            model = state.model(model_id)
        except UnknownModel:
            return _error(404, f"Model {model_id} not found")
        return JSONResponse(endpoints_json(model))

    async def list_providers(request: Request) -> Response:
        return JSONResponse(providers_json(list(state.models.values())))

    def refused(request: Request) -> Response | None:
        auth = request.headers.get("authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        if not key or (state.api_key is not None and key != state.api_key):
            return _error(401, "No auth credentials found" if not key else "User not found.")
        return None

    async def generation(request: Request) -> Response:
        """``GET /generation?id=``: an answer's provider, model, latency and finish reason, a
        short while after the answer ended (as OpenRouter's own lags), 404 before."""
        if (no := refused(request)) is not None:
            return no
        gen_id = request.query_params.get("id", "")
        entry = state.generation(gen_id)
        if entry is None or time.perf_counter() < _ready_s(entry, state.generation_lag_s):
            return _error(404, f"Generation {gen_id} not found")
        return JSONResponse({"data": generation_json(entry)})

    async def chat(request: Request) -> ASGIApp:
        arrived = time.perf_counter()
        if (no := refused(request)) is not None:
            return no
        try:
            body: JsonValue = json.loads(await request.body())
        except ValueError:
            return _error(400, "Invalid JSON body")
        if not isinstance(body, dict):
            return _error(400, "Invalid JSON body")
        problem = _validate(body)
        if problem:
            return _error(400, problem)
        model_id = str(body["model"])
        attempts: list[JsonValue] = []
        log: dict[str, JsonValue] = {
            "model": model_id,
            "stream": bool(body.get("stream")),
            "arrived_s": arrived,
            "first_token_s": None,
            "first_token_delay_ms": None,
        }
        prefs = body.get("provider")
        if not isinstance(prefs, dict):
            prefs = {}
        log["pinned"] = as_list(prefs.get("only") or prefs.get("order"))
        log["attempts"] = attempts
        try:
            model = state.model(model_id)
        except UnknownModel:
            log.update(status=400, provider=None)
            state.record(log)
            return _error(400, f"{model_id} is not a valid model ID")
        chat_request = _chat_request(body)
        try:
            candidates = route(list(model.providers.values()), prefs, sent_parameters(body))
        except Unroutable as exc:
            log.update(status=exc.status, provider=None)
            state.record(log)
            return _error(exc.status, exc.message)
        for i, provider in enumerate(candidates):
            rng = state.rng(model_id, provider.tag)
            plan = compose(
                chat_request,
                provider,
                state.bank,
                rng,
                as_asked=state.scenario.answers == "as_asked",
            )
            attempts.append({"provider": provider.tag, "status": plan.http_status or 200})
            if plan.http_status is not None:
                if i + 1 < len(candidates):
                    continue
                status = plan.http_status
                headers = None
                if status in (429, 503):
                    headers = {"Retry-After": str(plan.retry_after or 1)}
                log.update(
                    status=status,
                    provider=provider.tag,
                    provider_name=provider.name,
                    faults=[*plan.fired],
                    configured_ttft_ms=provider.ttft_ms,
                )
                state.record(log)
                return _error(
                    status,
                    "Provider returned error",
                    {
                        "provider_name": provider.name,
                        "raw": f"upstream status {status}",
                        "error_type": error_type(status),
                    },
                    headers,
                )
            answering = provider
            if plan.served_by and plan.served_by in model.providers:
                answering = model.providers[plan.served_by]
            gen_id = f"gen-{int(time.time())}-" + "".join(rng.choice(_ALPHABET) for _ in range(20))
            log.update(
                status=200,
                provider=answering.tag,
                provider_name=answering.name,
                language=plan.language,
                faults=list(plan.fired),
                id=gen_id,
                configured_ttft_ms=round(plan.ttft_s * 1000, 3),
                # when the last token is due, counted from arrival (what no client can shorten)
                planned_ms=round(plan.planned_s * 1000, 3),
                completion_tokens=plan.completion_tokens,
                finish_reason=plan.finish_reason,
                ending=plan.ending,
            )
            state.record(log)
            answer = Answer(
                gen_id=gen_id,
                created=int(time.time()),
                model=plan.served_model or model_id,
                provider_name=answering.name,
                prompt_tokens=max(1, chat_request.prompt_chars // 4),
                price_prompt=provider.price.prompt,
                price_completion=provider.price.completion,
                arrived=arrived,
                log=log,
            )
            if chat_request.stream:
                return StreamResponse(plan, answer, state)
            return CompletionResponse(plan, answer, state)
        raise AssertionError("route() never returns an empty candidate list")

    async def not_found(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": {"message": "Not Found", "code": 404}}, status_code=404)

    routes = [
        Route("/api/v1/models", list_models, methods=["GET"]),
        Route("/api/v1/models/{author}/{slug}/endpoints", list_endpoints, methods=["GET"]),
        Route("/api/v1/providers", list_providers, methods=["GET"]),
        Route("/api/v1/generation", generation, methods=["GET"]),
        Route("/api/v1/chat/completions", _asgi_endpoint(chat), methods=["POST"]),
        *control_routes(state),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found})
    app.state.sim = state
    return SimApp(app, _asgi_endpoint(chat))


def _ready_s(entry: dict[str, JsonValue], lag_s: float) -> float:
    """When OpenRouter would first answer for a generation: its end, and a short lag."""
    arrived, planned = entry.get("arrived_s"), entry.get("planned_ms")
    start = arrived if isinstance(arrived, float) else 0.0
    took = planned / 1000 if isinstance(planned, (int, float)) else 0.0
    return start + took + lag_s


class _asgi_endpoint:  # noqa: N801 - used like a decorator
    """An ASGI endpoint for a handler returning a Response or one of our ASGI responses.

    Starlette treats plain functions as request/response handlers; an instance is raw ASGI.
    """

    def __init__(self, handler: Callable[[Request], Awaitable[ASGIApp]]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handler(Request(scope, receive))
        await response(scope, receive, send)


class SimApp:
    """Chat completions go straight to their handler, skipping Starlette's per-send middleware
    wrappers (a stream sends one message per token); everything else goes through Starlette."""

    def __init__(self, app: Starlette, chat: _asgi_endpoint) -> None:
        self.app = app
        self.chat = chat

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == "/api/v1/chat/completions"
            and scope["method"] == "POST"
        ):
            await self.chat(scope, receive, send)
        else:
            await self.app(scope, receive, send)
