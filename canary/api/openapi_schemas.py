"""The component schemas of the OpenAPI document (see :mod:`canary.api.openapi`)."""

from __future__ import annotations

from typing import Any

TIME = {"type": ["string", "null"], "format": "date-time"}

SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {"type": "string"},
            "known": {"type": "array", "items": {"type": "string"}},
        },
    },
    "IgnoreEntry": {
        "type": "object",
        "required": ["provider", "layer", "reason", "since", "until"],
        "properties": {
            "provider": {"type": "string"},
            "layer": {"enum": ["builtin", "runtime", "quarantine", "control"]},
            "reason": {"type": "string"},
            "since": TIME,
            "until": TIME,
        },
    },
    "Exclusion": {
        "type": "object",
        "description": "A built-in or runtime entry in force.",
        "required": ["id", "model", "provider", "layer", "reason", "since", "until"],
        "properties": {
            "id": {"type": ["integer", "null"], "description": "Runtime entries only."},
            "model": {"type": "string"},
            "provider": {"type": "string", "description": "An endpoint tag or a provider slug."},
            "layer": {"type": "string"},
            "reason": {"type": "string"},
            "since": TIME,
            "until": TIME,
        },
    },
    "IgnoreList": {
        "type": "object",
        "required": [
            "model",
            "ignore",
            "provider",
            "entries",
            "generated_at",
            "stale",
            "policy_version",
            "floor_breached",
            "capacity_floor",
            "usable_endpoints",
            "withheld",
            "needs",
        ],
        "properties": {
            "model": {"type": "string"},
            "ignore": {"type": "array", "items": {"type": "string"}},
            "provider": {
                "type": "object",
                "description": "Merge as-is into an OpenRouter request's `provider` object.",
                "required": ["ignore"],
                "properties": {"ignore": {"type": "array", "items": {"type": "string"}}},
            },
            "entries": {"type": "array", "items": {"$ref": "#/components/schemas/IgnoreEntry"}},
            "generated_at": {"type": "string", "format": "date-time"},
            "stale": {
                "type": "boolean",
                "description": "True: the store is unreachable and this is the last good list.",
            },
            "policy_version": {"type": "string"},
            "capacity_floor": {"type": "integer"},
            "usable_endpoints": {
                "type": ["integer", "null"],
                "description": "Listed endpoints no entry of this list names (null before the "
                "first listing).",
            },
            "withheld": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Quarantined endpoints left off the list to hold the floor.",
            },
            "needs": {
                "type": ["array", "null"],
                "items": {"enum": ["structured_outputs", "tools"]},
                "description": "The needs the list was cut for; null for the full list.",
            },
            "floor_breached": {
                "type": "boolean",
                "description": "True: fewer usable endpoints than the capacity floor even with "
                "every helpful quarantine withheld.",
            },
        },
    },
    "Percentiles": {
        "type": "object",
        "properties": {
            "p50": {"type": ["number", "null"]},
            "p95": {"type": ["number", "null"]},
            "p99": {"type": ["number", "null"]},
            "n": {"type": "integer"},
        },
    },
    "Provider": {
        "type": "object",
        "required": ["provider", "state", "failing_rounds", "last_round", "ttft_s", "latency"],
        "properties": {
            "provider": {"type": "string"},
            "state": {
                "description": "Routing state. Latency has its own field and never changes it.",
                "enum": ["healthy", "suspect", "quarantined", "excluded", "unknown"],
            },
            "failing_rounds": {
                "type": "integer",
                "description": "The longest per-contract failing count.",
            },
            "failing_by_contract": {
                "type": "object",
                "additionalProperties": {"type": "integer"},
            },
            "recovery_rounds": {"type": "integer"},
            "quarantine": {
                "type": ["object", "null"],
                "properties": {
                    "since": TIME,
                    "until": TIME,
                    "step": {"type": ["integer", "null"]},
                    "causes": {"type": "array", "items": {"type": "string"}},
                    "withheld": {"type": "boolean"},
                },
            },
            "exclusions": {
                "type": "array",
                "description": "The built-in and runtime entries that name this endpoint (its "
                "tag, or its provider slug): why it is excluded.",
                "items": {"$ref": "#/components/schemas/Exclusion"},
            },
            "last_round": {
                "type": "object",
                "description": "Per contract: {result, detail, round_id} of the latest round.",
                "additionalProperties": {"type": "object"},
            },
            "ttft_s": {
                "type": "object",
                "properties": {
                    "24h": {"$ref": "#/components/schemas/Percentiles"},
                    "7d": {"$ref": "#/components/schemas/Percentiles"},
                },
            },
            "latency": {"$ref": "#/components/schemas/Latency"},
        },
    },
    "Latency": {
        "type": "object",
        "description": "Information only: a degraded latency never quarantines.",
        "required": ["state", "p95_bound_s", "peers_p95_24h_s", "openrouter_last_30m_ms"],
        "properties": {
            "state": {
                "enum": ["healthy", "degraded", "unknown"],
                "description": "degraded: our 24 h ttft p95 > p95_bound_s; unknown: no sample.",
            },
            "p95_bound_s": {"type": "number"},
            "peers_p95_24h_s": {
                "type": ["number", "null"],
                "description": "Median of the model's other endpoints' 24 h ttft p95, seconds.",
            },
            "peers": {"type": "integer", "description": "Other endpoints with samples."},
            "openrouter_last_30m_ms": {
                "type": ["object", "null"],
                "description": "OpenRouter's advertised time to first token {p50, p75, p90, p99}"
                " in ms, from the latest endpoints listing.",
                "additionalProperties": {"type": "number"},
            },
        },
    },
    "CostDay": {
        "type": "object",
        "required": ["day_start", "today_usd", "daily_budget_usd", "budget_left_usd"],
        "properties": {
            "day_start": {"type": "string", "format": "date-time"},
            "today_usd": {"type": "number", "description": "All models, since midnight UTC."},
            "daily_budget_usd": {"type": ["number", "null"]},
            "budget_left_usd": {"type": ["number", "null"]},
        },
    },
    "LastRound": {
        "type": ["object", "null"],
        "properties": {
            "id": {"type": "integer"},
            "scheduled_at": TIME,
            "finished_at": TIME,
            "status": {"type": "string"},
            "cost_usd": {"type": ["number", "null"]},
            "skipped": {
                "type": "array",
                "description": "Endpoints not probed in that round (budget), with why.",
                "items": {
                    "type": "object",
                    "properties": {
                        "provider": {"type": ["string", "null"]},
                        "reason": {"type": ["string", "null"]},
                    },
                },
            },
        },
    },
    "ModelCost": {
        "type": "object",
        "required": ["last_round", "last_24h_usd", "today_usd"],
        "properties": {
            "model": {"type": "string"},
            "last_round": {"$ref": "#/components/schemas/LastRound"},
            "last_24h_usd": {"type": "number"},
            "today_usd": {"type": "number"},
            "day": {"$ref": "#/components/schemas/CostDay"},
        },
    },
    "AuditRecord": {
        "type": "object",
        "required": ["at", "event", "actor", "model", "provider", "detail"],
        "properties": {
            "id": {"type": ["integer", "null"]},
            "at": TIME,
            "event": {"type": "string"},
            "actor": {"type": ["string", "null"]},
            "model": {"type": ["string", "null"]},
            "provider": {"type": ["string", "null"]},
            "detail": {"type": "object"},
        },
    },
    "HistoryRecord": {
        "type": "object",
        "required": ["round_id", "at", "round_status", "extra", "verdict", "results"],
        "properties": {
            "round_id": {"type": "integer"},
            "at": TIME,
            "round_status": {"type": "string"},
            "extra": {"type": "boolean", "description": "An extra round (`canary round --now`)."},
            "verdict": {"type": "string"},
            "language_anomaly_in": {"type": ["string", "null"]},
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "contract": {"type": "string"},
                        "result": {"type": "string"},
                        "detail": {"type": ["string", "null"]},
                    },
                },
            },
        },
    },
    "Reason": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": r"\S"},
    "Name": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": r"\S"},
}
