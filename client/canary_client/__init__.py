"""canary's ignore list in an app: keep it current and put it into OpenRouter's
``provider.ignore``. httpx is the only dependency; :mod:`canary_client.ignore_list` is the whole
helper (one file an app may copy). The hooks for the OpenAI SDK and LiteLLM are in
:mod:`canary_client.openai_hook` and :mod:`canary_client.litellm_hook`; reporting a bad answer
in :mod:`canary_client.reports`."""

from canary_client.ignore_list import (
    KNOWN_NEEDS,
    AsyncIgnoreListClient,
    Entry,
    EverythingExcluded,
    HeldList,
    IgnoreListClient,
    IgnoreListUnavailable,
    UnknownNeed,
    merge_provider,
)
from canary_client.reports import AsyncReporter, Reporter, ReportRefused

__all__ = [
    "KNOWN_NEEDS",
    "AsyncIgnoreListClient",
    "AsyncReporter",
    "Entry",
    "EverythingExcluded",
    "HeldList",
    "IgnoreListClient",
    "IgnoreListUnavailable",
    "ReportRefused",
    "Reporter",
    "UnknownNeed",
    "merge_provider",
]
