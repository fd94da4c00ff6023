"""The control API under /_sim/: change faults and endpoints at run time, read the request log.

Routes (provider tags may contain a slash, so model and provider go in the query string):

- ``GET    /_sim/state``                              the live models and providers
- ``POST   /_sim/reset``                              back to the scenario as loaded
- ``POST   /_sim/apply``                              body: a timeline entry (or a list of them)
- ``POST   /_sim/rounds/{n}``                         apply the scenario timeline entries of round n
- ``GET    /_sim/faults?model=M&provider=T``          a provider's faults
- ``PUT    /_sim/faults?model=M&provider=T``          body: ``{"faults": [...]}`` (or the list)
- ``PATCH  /_sim/provider?model=M&provider=T``        body: price, quantization,
                                                      supported_parameters,
                                                      context_length, ... (a timeline ``set``)
- ``DELETE /_sim/provider?model=M&provider=T``        remove the endpoint
- ``POST   /_sim/provider?model=M``                   body: a provider, as in the scenario (add)
- ``GET    /_sim/requests`` / ``DELETE /_sim/requests``  the request log / clear it
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from pydantic import JsonValue
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from canary.sim.scenario import ScenarioError
from canary.sim.state import SimState, UnknownModel, UnknownProvider

Handler = Callable[[Request], Awaitable[JsonValue]]


def _guard(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            result = await handler(request)
        except (UnknownModel, UnknownProvider) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        except (ScenarioError, ValueError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
        except KeyError as exc:
            return JSONResponse({"error": f"missing {exc.args[0]}"}, status_code=422)
        return JSONResponse(result)

    return endpoint


async def _json(request: Request) -> JsonValue:
    raw = await request.body()
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        raise ValueError("request body is not valid JSON") from None


def control_routes(state: SimState) -> list[Route]:
    def where(request: Request) -> tuple[str, str]:
        q = request.query_params
        return q["model"], q["provider"]

    async def get_state(request: Request) -> JsonValue:
        return state.snapshot()

    async def reset(request: Request) -> JsonValue:
        state.reset()
        return {"ok": True}

    async def apply(request: Request) -> JsonValue:
        body = await _json(request)
        entries = body if isinstance(body, list) else [body]
        applied: list[JsonValue] = [
            state.apply(e).model_dump(mode="json", exclude_none=True) for e in entries
        ]
        return {"applied": applied}

    async def apply_round(request: Request) -> JsonValue:
        applied = state.apply_round(int(request.path_params["n"]))
        dumped: list[JsonValue] = [e.model_dump(mode="json", exclude_none=True) for e in applied]
        return {"applied": dumped}

    async def get_faults(request: Request) -> JsonValue:
        model, tag = where(request)
        return {
            "faults": [f.model_dump(mode="json", by_alias=True) for f in state.faults(model, tag)]
        }

    async def put_faults(request: Request) -> JsonValue:
        model, tag = where(request)
        body = await _json(request)
        faults = body.get("faults") if isinstance(body, dict) else body
        if not isinstance(faults, list):
            raise ValueError('body: expected {"faults": [...]}')
        state.set_faults(model, tag, faults)
        return {
            "faults": [f.model_dump(mode="json", by_alias=True) for f in state.faults(model, tag)]
        }

    async def patch_provider(request: Request) -> JsonValue:
        model, tag = where(request)
        body = await _json(request)
        if not isinstance(body, dict):
            raise ValueError("body: expected an object of fields to set")
        return state.update(model, tag, body).model_dump(mode="json")

    async def delete_provider(request: Request) -> JsonValue:
        model, tag = where(request)
        state.remove(model, tag)
        return {"removed": tag}

    async def add_provider(request: Request) -> JsonValue:
        body = await _json(request)
        if not isinstance(body, dict):
            raise ValueError("body: expected a provider object")
        return state.add(request.query_params["model"], body).model_dump(mode="json")

    async def get_requests(request: Request) -> JsonValue:
        return {"requests": state.requests()}

    async def clear_requests(request: Request) -> JsonValue:
        state.clear_requests()
        return {"ok": True}

    return [
        Route("/_sim/state", _guard(get_state), methods=["GET"]),
        Route("/_sim/reset", _guard(reset), methods=["POST"]),
        Route("/_sim/apply", _guard(apply), methods=["POST"]),
        Route("/_sim/rounds/{n:int}", _guard(apply_round), methods=["POST"]),
        Route("/_sim/faults", _guard(get_faults), methods=["GET"]),
        Route("/_sim/faults", _guard(put_faults), methods=["PUT"]),
        Route("/_sim/provider", _guard(patch_provider), methods=["PATCH"]),
        Route("/_sim/provider", _guard(delete_provider), methods=["DELETE"]),
        Route("/_sim/provider", _guard(add_provider), methods=["POST"]),
        Route("/_sim/requests", _guard(get_requests), methods=["GET"]),
        Route("/_sim/requests", _guard(clear_requests), methods=["DELETE"]),
    ]
