"""The OpenAPI 3.1 document of the HTTP API, written by hand (served at ``GET /openapi.json``)."""

from __future__ import annotations

from typing import Any

from canary import __version__
from canary.api.openapi_schemas import SCHEMAS

_ERROR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "Malformed request (missing parameter, bad JSON, bad number or time).",
        401: "Missing or wrong admin token.",
        403: "Admin calls are disabled: no admin token is configured.",
        404: "Unknown model, provider or id; the error names the known ones.",
        413: "The request body is larger than 64 KiB.",
        409: "Refused: it would leave fewer usable endpoints than the model's capacity floor "
        "(or the model was never listed); the error names the floor and the usable count. "
        'Send `"force": true` to do it anyway (audited as a floor breach).',
        422: "Well-formed but invalid request body.",
        503: "The store is unreachable (or the list was never read).",
    }
    return {str(code): _json(_ERROR, text[code]) for code in codes}


def _model_param(required: bool = True) -> dict[str, Any]:
    return {
        "name": "model",
        "in": "query",
        "required": required,
        "description": "OpenRouter model id, author/slug.",
        "schema": {"type": "string"},
    }


_LIMIT = {
    "name": "limit",
    "in": "query",
    "required": False,
    "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
}


def openapi_document() -> dict[str, Any]:
    admin: list[dict[str, list[str]]] = [{"bearerAuth": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "canary",
            "version": __version__,
            "description": "Keeps apps off degraded OpenRouter providers: the ignore list, "
            "provider states, rounds, audit, and admin calls.",
        },
        "paths": {
            "/v1/ignore-list": {
                "get": {
                    "summary": "The merged ignore list of a model (from memory; fails static).",
                    "parameters": [
                        _model_param(),
                        {
                            "name": "needs",
                            "in": "query",
                            "required": False,
                            "description": "Comma-separated capabilities the app uses "
                            "(structured_outputs, tools). A quarantine caused only by "
                            "contracts of capabilities it does not need is left out of its "
                            "list; ttft, refusal, language and hygiene always apply, and so do "
                            "built-in and runtime entries. Repeated (needs=a&needs=b), every "
                            "value counts. The capacity floor is held on each list itself "
                            "(usable_endpoints, withheld and floor_breached are its own). "
                            "Without it: the full list. An unknown need is a 400 naming the "
                            "known ones.",
                            "schema": {"type": "string"},
                        },
                        {
                            "name": "If-None-Match",
                            "in": "header",
                            "required": False,
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {
                        "200": {
                            **_json({"$ref": "#/components/schemas/IgnoreList"}, "The list."),
                            "headers": {
                                "ETag": {
                                    "description": "Weak, over everything the list says "
                                    "except generated_at: the same on every replica while the "
                                    "list is unchanged.",
                                    "schema": {"type": "string"},
                                },
                                "Cache-Control": {"schema": {"type": "string"}},
                            },
                        },
                        "304": {
                            "description": "Not modified (If-None-Match matched the ETag, "
                            "by weak comparison)."
                        },
                        **_errors(400, 404, 503),
                    },
                }
            },
            "/v1/providers": {
                "get": {
                    "summary": "Each provider's state, failing rounds, last results, ttft.",
                    "parameters": [_model_param()],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["model", "providers", "cost"],
                                "properties": {
                                    "model": {"type": "string"},
                                    "at": {"type": "string"},
                                    "providers": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/Provider"},
                                    },
                                    "cost": {"$ref": "#/components/schemas/ModelCost"},
                                },
                            },
                            "Providers, worst state first, and the model's probe cost.",
                        ),
                        **_errors(400, 404, 503),
                    },
                }
            },
            "/v1/cost": {
                "get": {
                    "summary": "Probe cost: latest round and last 24 h per model, today, budget.",
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["at", "day", "models"],
                                "properties": {
                                    "at": {"type": "string", "format": "date-time"},
                                    "day": {"$ref": "#/components/schemas/CostDay"},
                                    "models": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/ModelCost"},
                                    },
                                },
                            },
                            "Cost, from the rounds' recorded cost.",
                        ),
                        **_errors(503),
                    },
                }
            },
            "/v1/rounds": {
                "get": {
                    "summary": "Recent rounds of a model, newest first.",
                    "parameters": [_model_param(), _LIMIT],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["model", "rounds"],
                                "properties": {
                                    "model": {"type": "string"},
                                    "rounds": {"type": "array"},
                                },
                            },
                            "Rounds.",
                        ),
                        **_errors(400, 404, 503),
                    },
                }
            },
            "/v1/history": {
                "get": {
                    "summary": "One endpoint's round verdicts and contract results, newest "
                    "first (what `canary history --json` prints).",
                    "parameters": [
                        _model_param(),
                        {
                            "name": "provider",
                            "in": "query",
                            "required": True,
                            "description": "The endpoint's tag (or its provider slug).",
                            "schema": {"type": "string"},
                        },
                        _LIMIT,
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["model", "provider", "history"],
                                "properties": {
                                    "model": {"type": "string"},
                                    "provider": {"type": "string"},
                                    "history": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/HistoryRecord"},
                                    },
                                },
                            },
                            "History.",
                        ),
                        **_errors(400, 404, 503),
                    },
                }
            },
            "/v1/quarantines": {
                "get": {
                    "summary": "The quarantines in force, with their causes (read-only, no token).",
                    "parameters": [
                        _model_param(required=False),
                        {
                            "name": "all",
                            "in": "query",
                            "required": False,
                            "description": "true: every quarantine, ended ones too (with "
                            "released_at and release_why).",
                            "schema": {"type": "boolean"},
                        },
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["quarantines"],
                                "properties": {
                                    "model": {"type": ["string", "null"]},
                                    "at": {"type": "string", "format": "date-time"},
                                    "quarantines": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["model", "provider", "since", "until"],
                                        },
                                    },
                                },
                            },
                            "Quarantines: {id, model, provider, since, until, step, reason, "
                            "causes, withheld, evidence}.",
                        ),
                        **_errors(400, 404, 503),
                    },
                }
            },
            "/v1/audit": {
                "get": {
                    "summary": "Audit records (decisions and operator actions), newest first.",
                    "parameters": [
                        _model_param(required=False),
                        {
                            "name": "since",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "string", "format": "date-time"},
                        },
                        _LIMIT,
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["records"],
                                "properties": {
                                    "records": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/AuditRecord"},
                                    }
                                },
                            },
                            "Records.",
                        ),
                        **_errors(400, 503),
                    },
                }
            },
            "/v1/quarantines/release": {
                "post": {
                    "summary": "Release a quarantine by hand (audited with its reason).",
                    "security": admin,
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["model", "provider", "reason"],
                                    "properties": {
                                        "model": {"$ref": "#/components/schemas/Name"},
                                        "provider": {"$ref": "#/components/schemas/Name"},
                                        "reason": {"$ref": "#/components/schemas/Reason"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json({"type": "object"}, "Released."),
                        **_errors(400, 401, 403, 404, 413, 422, 503),
                    },
                }
            },
            "/v1/exclusions": {
                "get": {
                    "summary": "The built-in and runtime exclusions in force (read-only, no "
                    "token).",
                    "parameters": [_model_param(required=False)],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["exclusions"],
                                "properties": {
                                    "model": {"type": ["string", "null"]},
                                    "at": {"type": "string", "format": "date-time"},
                                    "exclusions": {
                                        "type": "array",
                                        "items": {"$ref": "#/components/schemas/Exclusion"},
                                    },
                                },
                            },
                            "Exclusions: {id, model, provider, layer, reason, since, until}.",
                        ),
                        **_errors(400, 404, 503),
                    },
                },
                "post": {
                    "summary": "Add a runtime exclusion (audited with its reason).",
                    "security": admin,
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["model", "provider", "reason"],
                                    "properties": {
                                        "model": {"$ref": "#/components/schemas/Name"},
                                        "provider": {"$ref": "#/components/schemas/Name"},
                                        "reason": {"$ref": "#/components/schemas/Reason"},
                                        "until": {"type": "string", "format": "date-time"},
                                        "force": {
                                            "type": "boolean",
                                            "description": "Exclude it even below the "
                                            "capacity floor.",
                                        },
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "201": _json(
                            {
                                "type": "object",
                                "required": ["id"],
                                "properties": {
                                    "id": {"type": "integer"},
                                    "usable_before": {"type": ["integer", "null"]},
                                    "usable_after": {"type": ["integer", "null"]},
                                    "floor": {"type": "integer"},
                                },
                            },
                            "Added.",
                        ),
                        **_errors(400, 401, 403, 404, 409, 413, 422, 503),
                    },
                },
            },
            "/v1/exclusions/{id}": {
                "delete": {
                    "summary": "Remove a runtime exclusion (audited with its reason).",
                    "security": admin,
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        },
                        {
                            "name": "reason",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {
                        "200": _json({"type": "object"}, "Removed."),
                        **_errors(400, 401, 403, 404, 422, 503),
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Liveness: 200 whenever the process runs.",
                    "responses": {"200": _json({"type": "object"}, "Alive.")},
                }
            },
            "/readyz": {
                "get": {
                    "summary": "Ready: store reachable, list loaded, a round in 3 intervals.",
                    "responses": {
                        "200": _json(
                            {"type": "object"},
                            "Ready. `probing` names why the latest rounds' probes never got "
                            "past OpenRouter (auth_config, unreachable), else null; "
                            "`probing_models` lists the models it concerns.",
                        ),
                        "503": _json({"type": "object"}, "Not ready; `reasons` says why."),
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics, names prefixed canary_.",
                    "responses": {
                        "200": {"description": "Exposition text.", "content": {"text/plain": {}}}
                    },
                }
            },
            "/": {
                "get": {
                    "summary": "The status page (HTML, no external assets).",
                    "responses": {"200": {"description": "HTML.", "content": {"text/html": {}}}},
                }
            },
        },
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
    }
