"""Admin calls: bearer-token auth (constant-time), manual release, runtime exclusions.

Each call is audited by the store with its reason and actor ``api``, and republishes the ignore
list at once.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Path, Query
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from canary.api.common import ApiError, Handlers
from canary.api.schemas import (
    MAX_REASON,
    Added,
    ExclusionRequest,
    Released,
    ReleaseRequest,
    Removed,
)
from canary.core.identity import InvalidTag
from canary.store.rows import FloorRefused, NoActiveQuarantine, UnknownExclusion
from canary.views.known import require_model, require_provider
from canary.views.records import iso, names

BEARER = HTTPBearer(auto_error=False, scheme_name="bearerAuth")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]


class AdminHandlers(Handlers):
    async def admin(self, credentials: Credentials) -> None:
        """The route dependency of every admin call: 403 without a configured token, 401 unless
        the request carries it as a bearer token."""
        token = self.settings.admin_token.get_secret_value()
        if not token:
            raise ApiError(403, "admin calls are disabled: no admin token is configured")
        given = "" if credentials is None else credentials.credentials
        if not hmac.compare_digest(given.strip().encode(), token.encode()):
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

    async def add_exclusion(self, body: ExclusionRequest) -> Added:
        """Add a runtime exclusion (audited with its reason)."""
        model, tag = body.model, body.provider
        now = self.clock()
        if body.until is not None and body.until <= now:
            raise ApiError(422, "until must be in the future")
        await self._store(require_model, self.settings.model_ids, self.store, model)
        builtin = [e for e in self.ignore.builtin if e.model == model]
        try:
            await self._store(require_provider, self.store, model, tag, [e.tag for e in builtin])
        except InvalidTag as exc:
            raise ApiError(422, str(exc)) from None
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

    async def remove_exclusion(
        self,
        exclusion_id: Annotated[int, Path(alias="id")],
        reason: Annotated[str | None, Query(max_length=MAX_REASON)] = None,
    ) -> Removed:
        """Remove a runtime exclusion (audited with its reason)."""
        if not 0 < exclusion_id < 2**63:
            raise ApiError(404, f"no active runtime exclusion with id {exclusion_id}")
        try:
            await self._store(
                self.store.remove_exclusion,
                exclusion_id,
                "api",
                (reason or "").strip() or "removed through the API",
                self.clock(),
                policy_version=self.ignore.policy_version,
            )
        except UnknownExclusion:
            raise ApiError(404, f"no active runtime exclusion with id {exclusion_id}") from None
        await self._refresh()
        return Removed(id=exclusion_id, removed=True)
