"""A small JSON Schema instance generator: values that satisfy the schema a request asks for."""

from __future__ import annotations

import random
from typing import Any

_MAX_DEPTH = 6


def generate(schema: Any, phrases: list[str], rng: random.Random) -> Any:
    """An instance of `schema` whose strings are taken from `phrases` (the request's language)."""
    return _Gen(schema if isinstance(schema, dict) else {}, phrases, rng).value(schema, 0)


class _Gen:
    def __init__(self, root: dict[str, Any], phrases: list[str], rng: random.Random) -> None:
        self.root = root
        self.phrases = phrases or ["..."]
        self.rng = rng

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in schema and seen < 10:
            ref = str(schema["$ref"])
            node: Any = self.root
            if ref.startswith("#"):
                for part in ref.lstrip("#/").split("/"):
                    if not part:
                        continue
                    node = node.get(part, {}) if isinstance(node, dict) else {}
            schema = node if isinstance(node, dict) else {}
            seen += 1
        return schema

    def value(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return self.string({}) if depth <= _MAX_DEPTH else None
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema and schema["enum"]:
            return self.rng.choice(list(schema["enum"]))
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                options = [s for s in schema[key] if not _is_null(s)] or schema[key]
                return self.value(options[0], depth + 1)
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                part = self.resolve(part) if isinstance(part, dict) else {}
                for k, v in part.items():
                    if k in ("properties",) and isinstance(v, dict):
                        merged.setdefault(k, {}).update(v)
                    elif k == "required":
                        merged.setdefault(k, []).extend(v)
                    else:
                        merged[k] = v
            return self.value(merged, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = (
                "object" if "properties" in schema else "array" if "items" in schema else "string"
            )
        if kind == "object":
            return self.object(schema, depth)
        if kind == "array":
            return self.array(schema, depth)
        if kind == "integer":
            return self.integer(schema)
        if kind == "number":
            return self.number(schema)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        return self.string(schema)

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props = schema.get("properties") or {}
        out = {name: self.value(sub, depth + 1) for name, sub in props.items()}
        for name in schema.get("required") or []:
            out.setdefault(name, self.string({}))
        return out

    def array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        low = int(schema.get("minItems", 1))
        high = int(schema.get("maxItems", max(low, 3)))
        count = self.rng.randint(low, max(low, min(high, low + 2)))
        items = schema.get("items", {})
        if isinstance(items, list):  # draft 4 tuple form
            return [self.value(s, depth + 1) for s in items]
        values = [self.value(items, depth + 1) for _ in range(count)]
        if schema.get("uniqueItems"):
            unique: list[Any] = []
            for v in values:
                if v not in unique:
                    unique.append(v)
            values = unique if len(unique) >= low else values
        return values

    def integer(self, schema: dict[str, Any]) -> int:
        low, high = _bounds(schema, 1, 10)
        low_i, high_i = int(_ceil(low)), int(high)
        value = self.rng.randint(low_i, max(low_i, high_i))
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            value = max(low_i, value - value % step)
            if value % step:
                value += step - value % step
        return value

    def number(self, schema: dict[str, Any]) -> float:
        low, high = _bounds(schema, 0.0, 1.0)
        return round(self.rng.uniform(low, max(low, high)), 3)

    def string(self, schema: dict[str, Any]) -> str:
        fmt = schema.get("format")
        if fmt == "date-time":
            return "2026-01-01T12:00:00Z"
        if fmt == "date":
            return "2026-01-01"
        if fmt == "email":
            return "mira@example.com"
        if fmt in ("uri", "url"):
            return "https://example.com/scene"
        text = self.rng.choice(self.phrases)
        high = schema.get("maxLength")
        low = int(schema.get("minLength", 0))
        if isinstance(high, int):
            text = text[:high]
        while len(text) < low:
            text += " " + self.rng.choice(self.phrases)
            if isinstance(high, int):
                text = text[:high]
        return text


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _ceil(x: float) -> float:
    return float(int(x)) if x == int(x) else float(int(x) + (1 if x > 0 else 0))


def _bounds(schema: dict[str, Any], low: float, high: float) -> tuple[float, float]:
    if "minimum" in schema:
        low = float(schema["minimum"])
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        low = float(schema["exclusiveMinimum"]) + 1
    if "maximum" in schema:
        high = float(schema["maximum"])
    if "exclusiveMaximum" in schema and not isinstance(schema["exclusiveMaximum"], bool):
        high = float(schema["exclusiveMaximum"]) - 1
    if high < low:
        high = low + (10 if "maximum" not in schema else 0)
    return low, high
