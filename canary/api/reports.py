"""``POST /v1/reports`` (a named report token, never the admin token) and ``GET /v1/reports``
(notes only with the admin token)."""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import Query
from pydantic import JsonValue
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse

from canary.api.admin import Credentials, bearer_is
from canary.api.common import ApiError, Handlers, OptionalModel
from canary.api.schemas import Limit, ReportRequest, Reports, When
from canary.service.reports import Said, TooManyReports, UnknownSymptom, report_json, take_report


class ReportHandlers(Handlers):
    def _sender(self, credentials: Credentials) -> str:
        """The name of the report token the request carries (401 otherwise, 403 with none
        configured)."""
        tokens = self.settings.reports.tokens
        if not tokens:
            raise ApiError(403, "reports are disabled: no report token is configured")
        for token in tokens:
            if bearer_is(credentials, token.token.get_secret_value()):
                return token.name
        raise HTTPException(
            401, "missing or wrong report token", headers={"WWW-Authenticate": "Bearer"}
        )

    def _is_admin(self, credentials: Credentials) -> bool:
        return bearer_is(credentials, self.settings.admin_token.get_secret_value())

    async def add_report(self, body: ReportRequest, credentials: Credentials) -> JSONResponse:
        """Report what an app saw: 201 stored, 200 for a generation id reported already; a
        report starts a focused check, it is never evidence by itself."""
        sender = self._sender(credentials)
        model = await self._model(body.model)
        said = Said(
            model, body.symptom, body.provider, body.generation_id, body.language, body.note,
            body.at,
        )  # fmt: skip
        try:
            taken = await self._store(
                take_report, self.store, self.settings, said, sender, self.clock()
            )
        except UnknownSymptom as exc:
            raise ApiError(400, str(exc)) from None
        except TooManyReports as exc:
            return _too_many(str(exc), exc.seconds)
        shown = report_json(taken.report, notes=False)
        if taken.retry_after is not None:
            return _too_many("too many reports on this endpoint", taken.retry_after, shown)
        return JSONResponse(shown, status_code=201 if taken.created else 200)

    async def list_reports(
        self,
        credentials: Credentials,
        model: OptionalModel = None,
        since: When | None = None,
        outcome: Annotated[str | None, Query(max_length=32)] = None,
        limit: Limit = 100,
    ) -> Reports:
        """Reports, newest first; their notes only with the admin token."""
        wanted = await self._optional_model(model)
        rows = await self._store(
            self.store.reports,
            model=wanted,
            since=since,
            outcomes=[outcome] if outcome else [],
            limit=limit,
        )
        notes = self._is_admin(credentials)
        return Reports.model_validate({"reports": [report_json(r, notes=notes) for r in rows]})


def _too_many(
    message: str, seconds: float, report: dict[str, JsonValue] | None = None
) -> JSONResponse:
    body: dict[str, JsonValue] = {"error": message}
    if report is not None:
        body["report"] = report
    return JSONResponse(
        body, status_code=429, headers={"Retry-After": str(max(1, math.ceil(seconds)))}
    )
