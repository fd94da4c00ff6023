"""Compose one answer: the tokens, tool calls, timing and ending a provider will stream.

Everything is decided up front from the request and a per-request RNG, so the server only has
to send precomputed bytes at precomputed times.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import JsonValue

from canary.sim.ngram import equality_answer
from canary.sim.scenario import (
    Disconnect,
    Fault,
    FaultKind,
    HttpError,
    LanguageDrift,
    LanguageMix,
    MidstreamError,
    Provider,
    Quantized,
    ReasoningFirst,
    SchemaBreak,
    ServedBy,
    ServedModel,
    SlowFirstToken,
    Stall,
)
from canary.sim.schemagen import generate
from canary.sim.text import (
    REFUSALS,
    TextBank,
    asked_sentences,
    join_sentences,
    request_language,
    split_sentences,
    tokenize,
)

GARBAGE = ("*", ")", "ological", ",\u200b", '"', "]", "ing", "–", ":", "_", ".")
_JSON_PIECE = 6  # characters per streamed token of a JSON answer

MAX_REASONING_CHUNKS = 1000


@dataclass(frozen=True)
class ChatRequest:
    """The parts of a chat request an answer depends on."""

    model: str
    last_user: str
    stream: bool = False
    max_tokens: int | None = None
    response_format: dict[str, JsonValue] | None = None
    tools: tuple[dict[str, JsonValue], ...] = ()
    tool_choice: JsonValue = None
    prompt_chars: int = 0
    temperature: float = 1.0

    @property
    def wants_json(self) -> bool:
        kind = (self.response_format or {}).get("type")
        return kind in ("json_object", "json_schema")

    @property
    def calls_tool(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none"


@dataclass(frozen=True)
class ToolCallPlan:
    id: str
    name: str
    pieces: tuple[str, ...]  # the arguments text, split across deltas


@dataclass(frozen=True)
class Plan:
    language: str
    tokens: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()
    tool_call: ToolCallPlan | None = None
    finish_reason: str = "stop"
    native_finish_reason: str = "stop"
    ending: str = "done"  # done | stall | disconnect | error
    end_after: int = 0  # tokens (or tool pieces) sent before the abnormal ending
    error_code: int = 502
    ttft_s: float = 0.3  # arrival -> first content (or tool call) token
    reasoning_s: float = 0.0  # reasoning starts at ttft_s - reasoning_s
    interval_s: float = 0.0125
    fired: tuple[str, ...] = field(default_factory=tuple)
    http_status: int | None = None  # http_error: the attempt fails before any token
    retry_after: int | None = None
    served_by: str | None = None  # served_by: the tag that really answers
    served_model: str | None = None  # served_model: the model id the answers report

    @property
    def completion_tokens(self) -> int:
        n = len(self.tokens) + len(self.reasoning)
        if self.tool_call is not None:
            n += len(self.tool_call.pieces) + 1
        return n if self.ending == "done" else min(n, self.end_after + len(self.reasoning))

    @property
    def planned_s(self) -> float:
        """When the last token of a stream is due, in seconds after arrival."""
        count = len(self.tokens) + (len(self.tool_call.pieces) + 1 if self.tool_call else 0)
        if self.ending != "done":
            count = min(count, self.end_after)
        return self.ttft_s + max(0, count - 1) * self.interval_s


F = TypeVar("F")


def _of(by: dict[FaultKind, Fault], kind: type[F]) -> F | None:
    """The fired fault of that class, if one fired."""
    return next((f for f in by.values() if isinstance(f, kind)), None)


def fire(faults: tuple[Fault, ...], language: str, rng: random.Random) -> list[Fault]:
    """The faults that apply to this request (one draw per fault, so sequences stay stable)."""
    fired = []
    for fault in faults:
        draw = rng.random()
        if draw < fault.rate and fault.when_language in (None, language):
            fired.append(fault)
    return fired


def compose(
    request: ChatRequest,
    provider: Provider,
    bank: TextBank,
    rng: random.Random,
    *,
    as_asked: bool = True,
) -> Plan:
    """The answer `provider` gives to `request`, with its faults applied; ``as_asked``: a prose
    answer to one of canary's prompts is as long as that prompt asks (:func:`asked_sentences`)."""
    lang = request_language(request.last_user)
    faults = fire(provider.faults, lang, rng)
    by = {f.kind: f for f in faults}
    ttft_ms = provider.ttft_ms
    if (slow := _of(by, SlowFirstToken)) is not None:
        ttft_ms = float(slow.ttft_ms)
    if provider.jitter_ms:
        ttft_ms += rng.uniform(0, provider.jitter_ms)
    interval = 1.0 / provider.tokens_per_second
    drift = _of(by, LanguageDrift)
    answer_lang = drift.to if drift is not None else lang
    broken = _of(by, SchemaBreak)

    finish = native = "stop"
    tool_call: ToolCallPlan | None = None
    tokens: list[str]
    if request.calls_tool and FaultKind.tool_no_call not in by:
        tool_call = _tool_call(request, by, bank, answer_lang, rng)
        tokens = []
        finish = native = "tool_calls"
    elif request.wants_json and broken is None:
        tokens = _chunks(
            json.dumps(_json_answer(request, bank, answer_lang, rng), ensure_ascii=False)
        )
    elif request.wants_json and broken is not None and broken.how != "prose":
        value = _json_answer(request, bank, answer_lang, rng)
        if broken.how == "missing_field":
            schema = _obj(_obj((request.response_format or {}).get("json_schema")).get("schema"))
            required = schema.get("required")
            if isinstance(value, dict):
                keys = required if isinstance(required, list) and required else list(value)
                if keys:
                    value.pop(str(keys[0]), None)
            text = json.dumps(value, ensure_ascii=False)
        else:
            text = json.dumps(value, ensure_ascii=False)[:-1] + ","
        tokens = _chunks(text)
    elif (equal := _equality(request, by, rng)) is not None:
        tokens = tokenize(equal, "en")
    else:
        tokens = _prose(request, by, bank, lang, answer_lang, rng, as_asked)

    if tool_call is None and FaultKind.refusal in by:
        tokens = tokenize(REFUSALS[lang], lang)
    if tool_call is None and FaultKind.garbage_prefix in by and tokens:
        frag = rng.choice(GARBAGE)
        tokens = [frag + (" " if frag.isalpha() else "")] + tokens
    if request.max_tokens is not None and len(tokens) > request.max_tokens:
        tokens = tokens[: request.max_tokens]
        finish = native = "length"
    if FaultKind.content_filter in by:
        tokens = tokens[: rng.randint(0, 3)]
        finish, native = "content_filter", "content_filter"
        tool_call = None
    if FaultKind.empty in by:
        tokens, tool_call = [], None
        finish = native = "stop"
    if FaultKind.truncate in by:
        tokens = tokens[: rng.randint(3, 8)]
        finish = native = "length"

    reasoning: list[str] = []
    reasoning_s = 0.0
    if (thinking := _of(by, ReasoningFirst)) is not None:
        reasoning_s = thinking.ms / 1000.0
        # at most a thousand thought chunks, spread over the thinking time: a scenario with a
        # very fast stream would otherwise think in megabytes
        count = min(MAX_REASONING_CHUNKS, max(1, int(reasoning_s / interval)))
        thought = tokenize(" ".join(bank.sentences["en"][:6]), "en")
        reasoning = (thought * (count // max(1, len(thought)) + 1))[:count]
        ttft_ms += reasoning_s * 1000

    ending, end_after, code = "done", 0, 502
    cuts: tuple[tuple[type[Stall | Disconnect | MidstreamError], str], ...] = (
        (Stall, "stall"),
        (Disconnect, "disconnect"),
        (MidstreamError, "error"),
    )
    for kind, name in cuts:
        if (cut := _of(by, kind)) is not None:
            ending, end_after = name, cut.after_tokens
            if isinstance(cut, MidstreamError):
                code = cut.code
            break
    http, served_by, served_model = _of(by, HttpError), _of(by, ServedBy), _of(by, ServedModel)
    fired = tuple(str(f.kind) for f in faults)
    return Plan(
        language=lang,
        tokens=tuple(tokens),
        reasoning=tuple(reasoning),
        tool_call=tool_call,
        finish_reason=finish,
        native_finish_reason=native,
        ending=ending,
        end_after=end_after,
        error_code=code,
        ttft_s=ttft_ms / 1000.0,
        reasoning_s=reasoning_s,
        interval_s=interval,
        fired=fired,
        http_status=http.status if http is not None else None,
        retry_after=http.retry_after if http is not None else None,
        served_by=served_by.tag if served_by is not None else None,
        served_model=served_model.id if served_model is not None else None,
    )


def _equality(request: ChatRequest, by: dict[FaultKind, Fault], rng: random.Random) -> str | None:
    """The answer to an equality prompt (canary.sim.ngram), or None for another prompt."""
    quantized = _of(by, Quantized)
    return equality_answer(
        request.last_user,
        request.temperature,
        rng,
        quantized=quantized.temperature if quantized is not None else 1.0,
        substituted=FaultKind.substituted in by,
        template_broken=FaultKind.template_broken in by,
    )


def _prose(
    request: ChatRequest,
    by: dict[FaultKind, Fault],
    bank: TextBank,
    lang: str,
    answer_lang: str,
    rng: random.Random,
    as_asked: bool,
) -> list[str]:
    passages = bank.passages[answer_lang]
    picks = rng.sample(range(len(passages)), k=min(len(passages), rng.choice((2, 3))))
    sentences = [s for i in picks for s in split_sentences(passages[i], answer_lang)]
    asked = asked_sentences(request.last_user) if as_asked else None
    if asked is not None:
        wanted = rng.randint(*asked)
        # a bank of short passages (the shared corpus has a sentence a line) takes more of them
        while len(sentences) < wanted and len(picks) < len(passages):
            more = rng.randrange(len(passages))
            if more not in picks:
                picks.append(more)
                sentences += split_sentences(passages[more], answer_lang)
        sentences = sentences[:wanted]
    if request.max_tokens is not None:
        sizes = [len(tokenize(s, answer_lang)) for s in sentences]
        while len(sentences) > 1 and sum(sizes) > request.max_tokens:
            sentences.pop()
            sizes.pop()
    if (mix := _of(by, LanguageMix)) is not None:
        other, share = mix.with_, mix.share
        # rounded at random so that the foreign share holds whatever the answer's length: a
        # one-sentence answer is foreign with chance `share`, where rounding made it never so
        whole, part = divmod(share * len(sentences), 1)
        count = int(whole) + (rng.random() < part)
        for i in rng.sample(range(len(sentences)), k=count):
            sentences[i] = rng.choice(bank.sentences[other])
    if FaultKind.repetition in by:
        words = sentences[0].split()
        phrase = " ".join(words[:5]) if len(words) > 3 else sentences[0][:10]
        sentences = [sentences[0]] + [phrase] * 15
    if FaultKind.mojibake in by:
        sentences = [_mojibake(s, rng) if i % 2 == 0 else s for i, s in enumerate(sentences)]
    return tokenize(join_sentences(sentences, answer_lang), answer_lang)


def _mojibake(sentence: str, rng: random.Random) -> str:
    if not sentence.isascii():
        return sentence.encode("utf-8").decode("latin-1")
    chars = list(sentence)
    for i in range(3, len(chars), 7):
        chars[i] = "\ufffd"
    return "".join(chars)


def _chunks(text: str) -> list[str]:
    return [text[i : i + _JSON_PIECE] for i in range(0, len(text), _JSON_PIECE)]


def _phrases(bank: TextBank, lang: str) -> list[str]:
    return [s for s in bank.sentences[lang] if len(s) <= 160] or list(bank.sentences[lang])


def _obj(value: JsonValue) -> dict[str, JsonValue]:
    return value if isinstance(value, dict) else {}


def _json_answer(request: ChatRequest, bank: TextBank, lang: str, rng: random.Random) -> JsonValue:
    fmt = request.response_format or {}
    phrases = _phrases(bank, lang)
    if fmt.get("type") == "json_schema":
        schema = _obj(fmt.get("json_schema")).get("schema") or {}
        return generate(schema, phrases, rng)
    return {"character": "Mira", "reply": rng.choice(phrases), "mood": "calm"}


def _tool_call(
    request: ChatRequest,
    by: dict[FaultKind, Fault],
    bank: TextBank,
    lang: str,
    rng: random.Random,
) -> ToolCallPlan:
    functions = [_obj(t.get("function")) for t in request.tools]
    chosen = functions[0] if functions else {}
    choice = request.tool_choice
    if isinstance(choice, dict):
        wanted = _obj(choice.get("function")).get("name")
        chosen = next((f for f in functions if f.get("name") == wanted), chosen)
    name = str(chosen.get("name") or "tool")
    schema = _obj(chosen.get("parameters")) or {"type": "object", "properties": {}}
    args = generate(schema, _phrases(bank, lang), rng)
    if FaultKind.tool_unknown_name in by:
        known = {f.get("name") for f in functions}
        name = next(
            n for n in ("narrate_scene", "unknown_function", name + "_v2") if n not in known
        )
    if FaultKind.tool_schema_mismatch in by and isinstance(args, dict):
        required = schema.get("required")
        if isinstance(required, list) and required:
            args.pop(str(required[0]), None)
        elif args:
            key = next(iter(args))
            args[key] = 12345 if isinstance(args[key], str) else "not the declared type"
        else:
            args["unexpected"] = {"nested": True}
            if schema.get("additionalProperties") is not False:
                args = ["not", "an", "object"]
    text = json.dumps(args, ensure_ascii=False)
    if FaultKind.tool_invalid_json in by:
        text = text.replace('"', "'", 2)[:-1]
    pieces = tuple(_chunks(text)) or ("",)
    call_id = "call_" + "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24)
    )
    return ToolCallPlan(id=call_id, name=name, pieces=pieces)
