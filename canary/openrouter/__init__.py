"""The OpenRouter HTTP shell: endpoints listing, pinned streaming probes, SSE parsing."""

from __future__ import annotations

from canary.openrouter.client import ListingError, OpenRouterClient
from canary.openrouter.endpoints import parse_endpoints
from canary.openrouter.wire import pin_provider

__all__ = ["ListingError", "OpenRouterClient", "parse_endpoints", "pin_provider"]
