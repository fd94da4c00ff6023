"""A small JSON Schema instance generator: values that satisfy the schema a request asks for."""

from __future__ import annotations

import random

from pydantic import JsonValue

_MAX_DEPTH = 6
Schema = dict[str, JsonValue]


def generate(schema: JsonValue, phrases: list[str], rng: random.Random) -> JsonValue:
    """An instance of `schema` whose strings are taken from `phrases` (the request's language)."""
    return _Gen(schema if isinstance(schema, dict) else {}, phrases, rng).value(schema, 0)


class _Gen:
    def __init__(self, root: Schema, phrases: list[str], rng: random.Random) -> None:
        self.root = root
        self.phrases = phrases or ["..."]
        self.rng = rng

    def resolve(self, schema: Schema) -> Schema:
        seen = 0
        while "$ref" in schema and seen < 10:
            ref = str(schema["$ref"])
            node: JsonValue = self.root
            if ref.startswith("#"):
                for part in ref.lstrip("#/").split("/"):
                    if not part:
                        continue
                    node = node.get(part, {}) if isinstance(node, dict) else {}
            schema = node if isinstance(node, dict) else {}
            seen += 1
        return schema

    def value(self, schema: JsonValue, depth: int) -> JsonValue:
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return self.string({}) if depth <= _MAX_DEPTH else None
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return self.rng.choice(enum)
        for key in ("anyOf", "oneOf"):
            listed = schema.get(key)
            if isinstance(listed, list) and listed:
                options = [s for s in listed if not _is_null(s)] or listed
                return self.value(options[0], depth + 1)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            merged: Schema = {}
            for part in all_of:
                for k, v in (self.resolve(part) if isinstance(part, dict) else {}).items():
                    old = merged.get(k)
                    if k == "properties" and isinstance(v, dict) and isinstance(old, dict):
                        merged[k] = {**old, **v}
                    elif k == "required" and isinstance(v, list) and isinstance(old, list):
                        merged[k] = old + v
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

    def object(self, schema: Schema, depth: int) -> Schema:
        props = schema.get("properties")
        out: Schema = {}
        if isinstance(props, dict):
            out = {name: self.value(sub, depth + 1) for name, sub in props.items()}
        required = schema.get("required")
        for name in required if isinstance(required, list) else []:
            out.setdefault(str(name), self.string({}))
        return out

    def array(self, schema: Schema, depth: int) -> list[JsonValue]:
        low = int(_number(schema.get("minItems", 1)))
        high = int(_number(schema.get("maxItems", max(low, 3))))
        count = self.rng.randint(low, max(low, min(high, low + 2)))
        items = schema.get("items", {})
        if isinstance(items, list):  # draft 4 tuple form
            return [self.value(s, depth + 1) for s in items]
        values = [self.value(items, depth + 1) for _ in range(count)]
        if schema.get("uniqueItems"):
            unique: list[JsonValue] = []
            for v in values:
                if v not in unique:
                    unique.append(v)
            values = unique if len(unique) >= low else values
        return values

    def integer(self, schema: Schema) -> int:
        low, high = _bounds(schema, 1, 10)
        low_i, high_i = int(_ceil(low)), int(high)
        value = self.rng.randint(low_i, max(low_i, high_i))
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            value = max(low_i, value - value % step)
            if value % step:
                value += step - value % step
        return value

    def number(self, schema: Schema) -> float:
        low, high = _bounds(schema, 0.0, 1.0)
        return round(self.rng.uniform(low, max(low, high)), 3)

    def string(self, schema: Schema) -> str:
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
        low = int(_number(schema.get("minLength", 0)))
        if isinstance(high, int):
            text = text[:high]
        while len(text) < low:
            text += " " + self.rng.choice(self.phrases)
            if isinstance(high, int):
                text = text[:high]
        return text


def _is_null(schema: JsonValue) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _ceil(x: float) -> float:
    return float(int(x)) if x == int(x) else float(int(x) + (1 if x > 0 else 0))


def _number(value: JsonValue) -> float:
    """A schema's number (or numeric string); a ValueError for anything else, as float() has."""
    if isinstance(value, (int, float, str)):
        return float(value)
    raise ValueError(f"not a number: {value!r}")


def _bounds(schema: Schema, low: float, high: float) -> tuple[float, float]:
    if "minimum" in schema:
        low = _number(schema["minimum"])
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        low = _number(schema["exclusiveMinimum"]) + 1
    if "maximum" in schema:
        high = _number(schema["maximum"])
    if "exclusiveMaximum" in schema and not isinstance(schema["exclusiveMaximum"], bool):
        high = _number(schema["exclusiveMaximum"]) - 1
    if high < low:
        high = low + (10 if "maximum" not in schema else 0)
    return low, high
