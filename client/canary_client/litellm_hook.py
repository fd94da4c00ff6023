"""The ignore list in LiteLLM's OpenRouter calls: a callback whose pre-call hook merges it into
the request's ``provider`` preferences.

    litellm.callbacks.append(IgnoreListCallback(ignore))   # ignore: an AsyncIgnoreListClient

LiteLLM runs the hook (``async_pre_call_deployment_hook``) on its async calls
(``litellm.acompletion``, the Router's). A call to ``openrouter/<model>`` for a model one of the
helpers keeps the list of gets ``provider.ignore`` merged in (a ``provider`` the call passes,
directly or in ``extra_body``, keeps its keys and its own tags). With no list held the call goes
out without ``ignore``: the helper has logged why.
"""

from __future__ import annotations

import logging
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from canary_client.ignore_list import AsyncIgnoreListClient, IgnoreListUnavailable, merge_provider

__all__ = ["IgnoreListCallback"]

log = logging.getLogger("canary_client")
_PREFIX = "openrouter/"


class IgnoreListCallback(CustomLogger):
    """Adds canary's list to LiteLLM's OpenRouter calls of the helpers' models."""

    def __init__(self, *lists: AsyncIgnoreListClient) -> None:
        super().__init__()
        self._lists = {ignore.model: ignore for ignore in lists}

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        model = kwargs.get("model")
        if not isinstance(model, str):
            return None
        if kwargs.get("custom_llm_provider") not in (None, "openrouter"):
            return None
        ignore = self._lists.get(model.removeprefix(_PREFIX))
        if ignore is None:
            return None
        try:
            tags = await ignore.get()
        except IgnoreListUnavailable as exc:
            log.debug("call sent without ignore: %s", exc)
            return None
        extra = kwargs.get("extra_body")
        if isinstance(extra, dict) and "provider" in extra:
            return {**kwargs, "extra_body": {**extra, "provider": merge_provider(extra["provider"], tags)}}
        return {**kwargs, "provider": merge_provider(kwargs.get("provider"), tags)}
