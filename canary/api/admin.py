"""Admin calls: bearer-token auth (constant-time), manual release, runtime exclusions.

Each call is audited by the store with its reason and actor ``api``, and republishes the ignore
list at once.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from canary.api import readmodel as rm
from canary.api.common import MAX_REASON, BadRequest, Handlers, error, text_field


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
        await self._store(rm.require_model, self.settings.model_ids, self.store, model)
        now = self.clock()
        try:
            await self._store(self.store.release_quarantine, model, tag, "api", reason, now)
        except LookupError:
            active = await self._store(self.store.active_quarantines, model, now)
            return error(
                404,
                f"provider {tag!r} of {model!r} has no active quarantine "
                f"(quarantined: {rm.names({q.tag for q in active})})",
            )
        await self._refresh()
        return JSONResponse({"released": True, "model": model, "provider": tag, "at": rm.iso(now)})

    async def add_exclusion(self, request: Request) -> Response:
        if (denied := self._admin(request)) is not None:
            return denied
        body = await self._json_body(request)
        model, tag, reason = (text_field(body, k) for k in ("model", "provider", "reason"))
        assert model is not None and tag is not None and reason is not None
        until_raw = text_field(body, "until", required=False)
        now = self.clock()
        until = None
        if until_raw is not None:
            try:
                until = rm.parse_when(until_raw)
            except ValueError:
                raise BadRequest(
                    422, f"until is not an ISO-8601 time: {until_raw[:40]!r}"
                ) from None
            if until <= now:
                raise BadRequest(422, "until must be in the future")
        await self._store(rm.require_model, self.settings.model_ids, self.store, model)
        builtin = [e.tag for e in self.ignore.builtin if e.model == model]
        await self._store(rm.require_provider, self.store, model, tag, builtin)
        new_id = await self._store(self.store.add_exclusion, model, tag, reason, "api", until, now)
        await self._refresh()
        return JSONResponse(
            {
                "id": new_id,
                "model": model,
                "provider": tag,
                "reason": reason,
                "until": rm.iso(until),
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
                self.store.remove_exclusion, exclusion_id, "api", reason, self.clock()
            )
        except LookupError:
            return error(404, f"no active runtime exclusion with id {exclusion_id}")
        await self._refresh()
        return JSONResponse({"id": exclusion_id, "removed": True})
