"""The app-side helper, kept importable as ``canary.client``: it lives in :mod:`canary_client`
(a distribution of its own, ``canary-client``, with httpx as its only dependency)."""

from canary_client import (
    KNOWN_NEEDS,
    AsyncIgnoreListClient,
    EverythingExcluded,
    IgnoreListClient,
    IgnoreListUnavailable,
    UnknownNeed,
    merge_provider,
)

__all__ = [
    "KNOWN_NEEDS",
    "AsyncIgnoreListClient",
    "EverythingExcluded",
    "IgnoreListClient",
    "IgnoreListUnavailable",
    "UnknownNeed",
    "merge_provider",
]
