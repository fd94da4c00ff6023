"""Admin calls: bearer-token auth (constant-time), manual release, runtime exclusions,
maintenance windows.

Each call is audited by the store with its reason and actor ``api``, and republishes the ignore
list at once.
"""

from __future__ import annotations

import hmac
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Path, Query
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from canary.api.common import ApiError, Handlers
from canary.api.schemas import (
    MAX_REASON,
    Added,
    ExclusionRequest,
    MaintenanceRequest,
    Released,
    ReleaseRequest,
    Removed,
    Window,
)
from canary.core.identity import InvalidTag
from canary.core.model import Layer
from canary.store.rows import FloorRefused, NoActiveQuarantine, UnknownExclusion, WindowInForce
from canary.views.known import require_model, require_provider
from canary.views.records import iso, names

BEARER = HTTPBearer(auto_error=False, scheme_name="bearerAuth")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]


def bearer_is(credentials: Credentials, secret: str) -> bool:
    """Whether the request's bearer token is ``secret`` (compared in constant time; an empty
    secret is nobody's)."""
    given = "" if credentials is None else credentials.credentials.strip()
    return bool(secret) and hmac.compare_digest(given.encode(), secret.encode())


EntryId = Annotated[int, Path(alias="id")]
RemoveReason = Annotated[str | None, Query(max_length=MAX_REASON)]


class AdminHandlers(Handlers):
    async def admin(self, credentials: Credentials) -> None:
        """The route dependency of every admin call: 403 without a configured token, 401 unless
        the request carries it as a bearer token."""
        token = self.settings.admin_token.get_secret_value()
        if not token:
            raise ApiError(403, "admin calls are disabled: no admin token is configured")
        if not bearer_is(credentials, token):
            raise HTTPException(
                401, "missing or wrong admin token", headers={"WWW-Authenticate": "Bearer"}
            )

    async def release(self, body: ReleaseRequest) -> Released:
        """Release a quarantine by hand (audited with its reason)."""
        model, tag = body.model, body.provider
        await self._store(require_model, self.settings.model_ids, self.store, model)
        now = self.clock()
        try:
            await self._store(self.store.release_quarantine, model, tag, "api", body.reason, now)
        except NoActiveQuarantine:
            active = await self._store(self.store.active_quarantines, model, now)
            raise ApiError(
                404,
                f"provider {tag!r} of {model!r} has no active quarantine "
                f"(quarantined: {names({q.tag for q in active})})",
            ) from None
        await self._refresh()
        return Released(released=True, model=model, provider=tag, at=iso(now))

    async def _checked(
        self, body: MaintenanceRequest | ExclusionRequest, extra: list[str]
    ) -> datetime:
        """``now``, once the request's end is in the future and its model and provider (a tag or
        a base slug, see :func:`canary.views.known.require_provider`) are known."""
        now = self.clock()
        if body.until is not None and body.until <= now:
            raise ApiError(422, "until must be in the future")
        await self._store(require_model, self.settings.model_ids, self.store, body.model)
        try:
            await self._store(require_provider, self.store, body.model, body.provider, extra)
        except InvalidTag as exc:
            raise ApiError(422, str(exc)) from None
        return now

    async def add_exclusion(self, body: ExclusionRequest) -> Added:
        """Add a runtime exclusion (audited with its reason)."""
        model, tag = body.model, body.provider
        builtin = [e for e in self.ignore.builtin if e.model == model]
        now = await self._checked(body, [e.tag for e in builtin])
        floor = self.settings.model(model).capacity_floor
        try:
            added = await self._store(
                self.store.add_exclusion,
                model,
                tag,
                body.reason,
                "api",
                body.until,
                now,
                builtin=builtin,
                floor=floor,
                controls=self.settings.model(model).controls,
                force=body.force,
                policy_version=self.ignore.policy_version,
            )
        except FloorRefused as exc:
            raise ApiError(409, str(exc), hint='send "force": true to exclude it anyway') from None
        await self._refresh()
        return Added(
            id=added.id,
            model=model,
            provider=tag,
            reason=body.reason,
            until=iso(body.until),
            force=body.force,
            usable_before=added.check.usable_before,
            usable_after=added.check.usable_after,
            floor=floor,
        )

    async def remove_exclusion(self, exclusion_id: EntryId, reason: RemoveReason = None) -> Removed:
        """Remove a runtime exclusion (audited with its reason)."""
        await self._remove(exclusion_id, reason, Layer.runtime)
        await self._refresh()
        return Removed(id=exclusion_id, removed=True)

    async def add_maintenance(self, body: MaintenanceRequest) -> Window:
        """Put a provider (a tag or a base slug) under planned maintenance until a time (audited
        with its reason): it is still probed, but its results change no count, start or release
        no quarantine and raise no notification, and it stays usable capacity."""
        now = await self._checked(body, [])
        try:
            new_id = await self._store(
                self.store.add_maintenance, body.model, body.provider, body.reason, "api",
                body.until, now, policy_version=self.ignore.policy_version,
            )  # fmt: skip
        except WindowInForce as exc:
            raise ApiError(409, str(exc)) from None
        return Window(
            id=new_id, model=body.model, provider=body.provider, reason=body.reason,
            until=iso(body.until),
        )  # fmt: skip

    async def remove_maintenance(self, window_id: EntryId, reason: RemoveReason = None) -> Removed:
        """End a maintenance window now (audited with its reason)."""
        await self._remove(window_id, reason, Layer.maintenance)
        return Removed(id=window_id, removed=True)

    async def _remove(self, entry_id: int, reason: str | None, layer: Layer) -> None:
        try:
            if not 0 < entry_id < 2**63:
                raise UnknownExclusion(entry_id, layer)
            await self._store(
                self.store.remove_exclusion,
                entry_id,
                "api",
                (reason or "").strip() or "removed through the API",
                self.clock(),
                policy_version=self.ignore.policy_version,
                layer=layer,
            )
        except UnknownExclusion as exc:
            raise ApiError(404, str(exc)) from None
