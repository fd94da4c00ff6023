"""The ignore list in every call of an OpenAI SDK client pointed at OpenRouter.

    client = with_ignore_list(OpenAI(base_url=..., api_key=...), ignore)
    client.chat.completions.create(model="acme/roleplay-1", messages=[...])   # carries the list

:func:`with_ignore_list` wraps an ``OpenAI`` (with :class:`~canary_client.IgnoreListClient`
helpers) or an ``AsyncOpenAI`` (with :class:`~canary_client.AsyncIgnoreListClient` ones). Each
``create`` or ``parse`` call (streaming too: ``stream=True``) under ``chat.completions``, ``completions`` or
``responses`` whose ``model`` is one a helper keeps the list of gets ``provider.ignore`` in its
``extra_body``, merged with a ``provider`` object the call already sends
(:func:`~canary_client.merge_provider`). Everything else is the wrapped client's, unchanged.

With no list held (:class:`~canary_client.IgnoreListUnavailable`) the call goes out without
``ignore``: the helper has logged why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from canary_client.ignore_list import (
    AsyncIgnoreListClient,
    IgnoreListClient,
    IgnoreListUnavailable,
    merge_provider,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = ["with_ignore_list"]

log = logging.getLogger("canary_client")
Client = TypeVar("Client", "OpenAI", "AsyncOpenAI")
_RESOURCES = frozenset({"chat", "completions", "responses"})
_CALLS = frozenset({"create", "parse"})  # streaming: create(..., stream=True)


def with_ignore_list(client: Client, *lists: IgnoreListClient | AsyncIgnoreListClient) -> Client:
    """``client``, whose calls carry the lists of the helpers' models (see the module)."""
    import openai

    is_async = isinstance(client, openai.AsyncOpenAI)
    kind = AsyncIgnoreListClient if is_async else IgnoreListClient
    if not all(isinstance(ignore, kind) for ignore in lists):
        raise TypeError(f"{type(client).__name__} takes {kind.__name__} helpers")
    by_model = {ignore.model: ignore for ignore in lists}
    return cast("Client", _Wrapped(client, by_model, is_async))


class _Wrapped:
    """A client or one of its resources: calls that name a model get its list."""

    def __init__(
        self, target: Any, lists: dict[str, IgnoreListClient | AsyncIgnoreListClient], is_async: bool
    ) -> None:
        self._target, self._lists, self._async = target, lists, is_async

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name in _RESOURCES:
            return _Wrapped(value, self._lists, self._async)
        if name in _CALLS and callable(value):
            return self._async_call(value) if self._async else self._sync_call(value)
        return value

    def __enter__(self) -> _Wrapped:  # `with with_ignore_list(OpenAI(...), ignore) as client`
        self._target.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._target.__exit__(*exc)

    async def __aenter__(self) -> _Wrapped:
        await self._target.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._target.__aexit__(*exc)

    def _sync_call(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def with_list(*args: Any, **kwargs: Any) -> Any:
            ignore = self._lists.get(kwargs.get("model", ""))
            if isinstance(ignore, IgnoreListClient):
                try:
                    kwargs = _with_tags(kwargs, ignore.get())
                except IgnoreListUnavailable as exc:
                    log.debug("call sent without ignore: %s", exc)
            return call(*args, **kwargs)

        return with_list

    def _async_call(self, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def with_list(*args: Any, **kwargs: Any) -> Any:
            ignore = self._lists.get(kwargs.get("model", ""))
            if isinstance(ignore, AsyncIgnoreListClient):
                try:
                    kwargs = _with_tags(kwargs, await ignore.get())
                except IgnoreListUnavailable as exc:
                    log.debug("call sent without ignore: %s", exc)
            return await call(*args, **kwargs)

        return with_list


def _with_tags(kwargs: dict[str, Any], tags: list[str]) -> dict[str, Any]:
    extra = dict(kwargs.get("extra_body") or {})
    extra["provider"] = merge_provider(extra.get("provider"), tags)
    return {**kwargs, "extra_body": extra}
