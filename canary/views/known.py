"""The models and providers canary knows, and the readable errors for the ones it does not."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from canary.core.identity import base_slug, check_tag
from canary.service.ignore_list import UnknownModel
from canary.store.repository import Store
from canary.views.records import names


def known_models(configured: Iterable[str], store: Store) -> list[str]:
    """Watched models (settings) plus any the store has seen."""
    models = set(configured)
    models.update(store.known_models())
    return sorted(models)


def known_tags(store: Store, model: str, extra: Iterable[str] = ()) -> list[str]:
    return sorted({*store.known_tags(model), *extra})


class UnknownProvider(LookupError):
    """The provider was never seen for the model; the message names the known ones."""

    def __init__(self, model: str, tag: str, known: Collection[str]) -> None:
        self.known = tuple(sorted(known))
        super().__init__(f"unknown provider {tag!r} of {model!r} (known: {names(known)})")


def require_model(configured: Iterable[str], store: Store, model: str) -> str:
    """The model when it is watched or known to the store; else UnknownModel naming the known."""
    known = known_models(configured, store)
    if model not in known:
        raise UnknownModel(model, known)
    return model


def require_provider(store: Store, model: str, tag: str, extra: Iterable[str] = ()) -> str:
    """The tag when it is a lowercase slug that names an endpoint the store (or ``extra``, e.g.
    the built-in list) knows for the model: its full tag, or its base slug (every endpoint of that
    provider). Raises :class:`canary.core.identity.InvalidTag` or :class:`UnknownProvider`.

    Before the first round nothing is known yet, and any slug is accepted: an operator may
    exclude a provider before canary has seen it.
    """
    check_tag(tag)
    tags = known_tags(store, model, extra)
    if tags and tag not in tags and tag not in {base_slug(t) for t in tags}:
        raise UnknownProvider(model, tag, tags)
    return tag
