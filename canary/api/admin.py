"""Admin calls: bearer-token auth (constant-time), manual release, runtime exclusions.

Each call is audited by the store with its reason and actor ``api``, and republishes the ignore
list at once.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from canary.api.common import MAX_REASON, BadRequest, Handlers, error, text_field
from canary.core.identity import InvalidTag
from canary.store.rows import FloorRefused, NoActiveQuarantine, UnknownExclusion
from canary.views.known import require_model, require_provider
from canary.views.records import iso, names, parse_when


class AdminHandlers(Handlers):
    def _admin(self, request: Request) -> JSONResponse | None:
        token = self.settings.admin_token.get_secret_value()
        if not token:
            return error(403, "admin calls are disabled: no admin token is configured")
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return JSONResponse(
                {"error": "missing or wrong admin token"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return None

    async def release(self, request: Request) -> Response:
        if (denied := self._admin(request)) is not None:
            return denied
        body = await self._json_body(request)
        model, tag, reason = (text_field(body, k) for k in ("model", "provider", "reason"))
        assert model is not None and tag is not None and reason is not None
        await self._store(require_model, self.settings.model_ids, self.store, model)
        now = self.clock()
        try:
            await self._store(self.store.release_quarantine, model, tag, "api", reason, now)
        except NoActiveQuarantine:
            active = await self._store(self.store.active_quarantines, model, now)
            return error(
                404,
                f"provider {tag!r} of {model!r} has no active quarantine "
                f"(quarantined: {names({q.tag for q in active})})",
            )
        await self._refresh()
        return JSONResponse({"released": True, "model": model, "provider": tag, "at": iso(now)})

    async def add_exclusion(self, request: Request) -> Response:
        if (denied := self._admin(request)) is not None:
            return denied
        body = await self._json_body(request)
        model, tag, reason = (text_field(body, k) for k in ("model", "provider", "reason"))
        assert model is not None and tag is not None and reason is not None
        until_raw = text_field(body, "until", required=False)
        force = body.get("force", False)
        if not isinstance(force, bool):
            raise BadRequest(422, "'force' must be true or false")
        now = self.clock()
        until = None
        if until_raw is not None:
            try:
                until = parse_when(until_raw)
            except ValueError:
                raise BadRequest(
                    422, f"until is not an ISO-8601 time: {until_raw[:40]!r}"
                ) from None
            if until <= now:
                raise BadRequest(422, "until must be in the future")
        await self._store(require_model, self.settings.model_ids, self.store, model)
        builtin = [e for e in self.ignore.builtin if e.model == model]
        try:
            await self._store(require_provider, self.store, model, tag, [e.tag for e in builtin])
        except InvalidTag as exc:
            raise BadRequest(422, str(exc)) from None
        try:
            added = await self._store(
                self.store.add_exclusion,
                model,
                tag,
                reason,
                "api",
                until,
                now,
                builtin=builtin,
                floor=self.settings.model(model).capacity_floor,
                controls=self.settings.model(model).controls,
                force=force,
                policy_version=self.ignore.policy_version,
            )
        except FloorRefused as exc:
            return error(409, str(exc), hint='send "force": true to exclude it anyway')
        await self._refresh()
        return JSONResponse(
            {
                "id": added.id,
                "model": model,
                "provider": tag,
                "reason": reason,
                "until": iso(until),
                "force": force,
                "usable_before": added.check.usable_before,
                "usable_after": added.check.usable_after,
                "floor": self.settings.model(model).capacity_floor,
            },
            status_code=201,
        )

    async def remove_exclusion(self, request: Request) -> Response:
        if (denied := self._admin(request)) is not None:
            return denied
        raw_id = request.path_params["id"]
        try:
            exclusion_id = int(raw_id)
        except ValueError:
            return error(400, f"exclusion id must be an integer, not {raw_id[:40]!r}")
        if not 0 < exclusion_id < 2**63:
            return error(404, f"no active runtime exclusion with id {exclusion_id}")
        reason = request.query_params.get("reason", "").strip() or "removed through the API"
        if len(reason) > MAX_REASON:
            return error(422, f"'reason' is longer than {MAX_REASON} characters")
        try:
            await self._store(
                self.store.remove_exclusion,
                exclusion_id,
                "api",
                reason,
                self.clock(),
                policy_version=self.ignore.policy_version,
            )
        except UnknownExclusion:
            return error(404, f"no active runtime exclusion with id {exclusion_id}")
        await self._refresh()
        return JSONResponse({"id": exclusion_id, "removed": True})
