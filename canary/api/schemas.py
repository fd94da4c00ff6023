"""The API's request bodies and admin answers as pydantic models: FastAPI validates requests and
answers with them, and generates the OpenAPI document from them. Each limit is written here once.
The read routes answer the TypedDicts of :mod:`canary.views`, shared with the CLI.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool
from pydantic import StringConstraints as Text

from canary.views.records import parse_when

MAX_LIMIT = 1000
MAX_REASON = 500
MAX_BODY = 64 * 1024  # request bodies, counted as they stream in

Name = Annotated[str, Text(strict=True, strip_whitespace=True, min_length=1, max_length=MAX_REASON)]
Reason = Name
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
Time = str | None  # ISO-8601 UTC with a "Z"; null when unknown


def _when(value: str | datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty string")
    try:
        return parse_when(value)
    except ValueError:
        raise ValueError(f"is not an ISO-8601 time: {value[:40]!r}") from None


def _flag(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in ("true", "1", "false", "0", ""):
        raise ValueError("must be true or false")
    return text in ("true", "1")


When = Annotated[datetime, BeforeValidator(_when)]
Flag = Annotated[bool, BeforeValidator(_flag)]  # true/1 or false/0; empty is false


class Answer(BaseModel):
    """A response body: every field it carries is declared (an undeclared one is a bug)."""

    model_config = ConfigDict(extra="forbid")


class ErrorBody(Answer):
    error: str
    known: list[str] | None = Field(None, description="The known names, for an unknown one.")
    hint: str | None = None


# -- requests ---------------------------------------------------------------------------------


class ReleaseRequest(BaseModel):
    model: Name
    provider: Name
    reason: Reason


class MaintenanceRequest(ReleaseRequest):
    until: When = Field(description="When the window ends (ISO-8601, in the future).")


class ExclusionRequest(ReleaseRequest):
    until: When | None = Field(None, description="When it ends (ISO-8601, in the future).")
    force: StrictBool = Field(False, description="Exclude it even below the capacity floor.")


class ReportRequest(BaseModel):
    model: Name
    symptom: Name = Field(description="One of the closed set (docs/api.md); another is a 400.")
    provider: Name | None = Field(
        None, description="The `provider` the answer named (a display name, slug or tag)."
    )
    generation_id: Name | None = Field(None, description="The answer's `id` (X-Generation-Id).")
    language: Annotated[str, Text(strip_whitespace=True, min_length=2, max_length=8)] | None = None
    note: Annotated[str, Text(max_length=4000)] | None = None
    at: When | None = Field(None, description="When the app saw it (default: now).")


# -- the ignore list --------------------------------------------------------------------------


class IgnoreEntry(Answer):
    provider: str = Field(description="An endpoint tag or a provider slug.")
    name: str | None = Field(
        description="OpenRouter's display name (provider_name) of what it names, from the "
        "latest listing; null when not listed, or when a slug names providers of several names."
    )
    layer: Literal["builtin", "runtime", "quarantine", "control", "requirement"]
    reason: str = Field(
        description="Why; a requirement entry names the requirement and the measured value."
    )
    since: Time
    until: Time


class ProviderField(Answer):
    ignore: list[str]


class ProfileRef(Answer):
    name: str
    settings_hash: str = Field(description="A hash of the profile's settings.")


class IgnoreList(Answer):
    model: str
    ignore: list[str]
    provider: ProviderField = Field(
        description="Merge as-is into an OpenRouter request's `provider` object."
    )
    entries: list[IgnoreEntry]
    generated_at: Time
    stale: bool = Field(
        description="True: the store is unreachable and this is the last good list."
    )
    policy_version: str
    capacity_floor: int
    usable_endpoints: int | None = Field(
        description="Listed endpoints no entry of this list names (null before the first listing)."
    )
    withheld: list[str] = Field(
        description="Endpoints whose quarantine (or, on a profile's list, requirement entries) "
        "the floor left off the list."
    )
    needs: list[Literal["structured_outputs", "tools"]] | None = Field(
        description="The needs the list was cut for; null for the full list."
    )
    floor_breached: bool = Field(
        description="True: fewer usable endpoints than the capacity floor even with every "
        "helpful quarantine withheld."
    )
    profile: ProfileRef | None = Field(
        None, description="The task profile the list was published for (only on its list)."
    )


class IgnoreLists(Answer):
    """Several models' lists (model=a&model=b), in the order asked, under one ETag."""

    lists: list[IgnoreList]


# -- admin and operations ---------------------------------------------------------------------


class Released(Answer):
    released: Literal[True]
    model: str
    provider: str
    at: Time


class Window(Answer):
    """A maintenance window added: the endpoints it names are probed, but their results decide
    nothing until it ends."""

    id: int
    model: str
    provider: str
    reason: str
    until: Time


class Added(Window):
    """A runtime exclusion added."""

    force: bool
    usable_before: int | None
    usable_after: int | None
    floor: int


class Removed(Answer):
    id: int
    removed: Literal[True]


class Health(Answer):
    status: Literal["ok"]


class Readiness(Answer):
    ready: bool
    reasons: list[str] = Field(description="Why it is not ready (empty when ready).")
    last_round_at: Time
    ignore_list_stale: bool
    probing: str | None = Field(
        description="Why the latest rounds' probes never got past OpenRouter (auth_config, "
        "unreachable), else null."
    )
    probing_models: list[str] = Field(description="The models `probing` concerns.")


class Report(Answer):
    id: int
    at: str
    model: str
    provider: str | None
    endpoints: list[str] = Field(description="The endpoint tags the report names.")
    generation_id: str | None
    symptom: str
    contracts: list[str]
    language: str | None
    outcome: str
    reason: str | None
    checks: list[int] = Field(description="The focused checks (rounds) it started or joined.")
    note: str | None = Field(None, description="Only on the admin API (the admin token).")


class Reports(Answer):
    reports: list[Report]


class PublishedThen(Answer):
    """``GET /v1/ignore-list?at=T``: the document published at T, recorded when its ETag changed."""

    model: str
    at: str
    published_at: str = Field(description="When that document was first published.")
    etag: str
    document: IgnoreList
