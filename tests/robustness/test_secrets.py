"""Secrets in every sink: after a run that used them (real rounds against the simulator, which
demands the key; a round with a wrong key; admin calls with right and wrong tokens; notifications;
CLI commands), the OpenRouter key and the admin token appear in no log line (structlog and stdlib),
no column of any table, no audit record, no webhook or Apprise body, no API body or header, no
CLI output; nor does an Apprise URL (its token) anywhere but the request Apprise sends.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from cli_runner import CliRunner
from notify_receiver import Receiver
from pydantic import SecretStr
from sqlalchemy import MetaData, select
from starlette.testclient import TestClient

from canary.api.app import create_app
from canary.cli.main import app as cli
from canary.config.settings import (
    AppriseNotifier,
    ModelSettings,
    OpenRouterSettings,
    Settings,
    Webhook,
)
from canary.core.plan import slot_of
from canary.rounds.runner import RoundRunner
from canary.rounds.wiring import build_wiring, openrouter_client
from canary.service.ignore_list import IgnoreListService
from canary.service.logs import configure_logging, scrub
from canary.service.notify import Notifier
from canary.sim.server import start_simulator

# a whole daemon run with every secret set: make test
pytestmark = pytest.mark.slow

KEY = "sk-or-v1-SECRETKEY123abcdef0123456789"
WRONG_KEY = "sk-or-v1-WRONGKEY999fedcba9876543210"
TOKEN = "admin-SECRET-TOKEN-456"
HOOK_SECRET = "whsec-SECRET-HOOK-789"
APPRISE_TOKEN = "apprise-SECRET-TOKEN-321"  # the secret part of an Apprise URL, as Slack's are
# Distinctive pieces too, so a truncated or re-encoded leak is caught as well.
NEEDLES = (
    KEY, TOKEN, "SECRETKEY123", "SECRET-TOKEN-456", WRONG_KEY, "WRONGKEY999", HOOK_SECRET,
    "SECRET-HOOK-789", APPRISE_TOKEN, "SECRET-TOKEN-321",
)  # fmt: skip
MODEL = "acme/secret-1"
START = datetime(2026, 4, 6, 8, 0, tzinfo=UTC)
FAST = {"ttft_ms": 5, "tokens_per_second": 4000}
SCENARIO: dict[str, Any] = {
    "seed": 11,
    "api_key": KEY,
    "models": [
        {
            "id": MODEL,
            "providers": [
                {"tag": "alpha", **FAST},
                {"tag": "bravo", **FAST, "faults": [{"kind": "garbage_prefix", "rate": 1.0}]},
                {"tag": "charlie", **FAST, "faults": [{"kind": "http_error", "status": 500}]},
                {"tag": "delta", **FAST, "faults": [{"kind": "midstream_error"}]},
                {"tag": "echo", **FAST, "faults": [{"kind": "http_error", "status": 429}]},
                {"tag": "foxtrot", **FAST},
            ],
        }
    ],
}


@dataclass
class Sinks:
    logs: str = ""
    stdlib_logs: str = ""
    tables: dict[str, list[str]] = field(default_factory=dict)
    audit: list[str] = field(default_factory=list)
    webhooks: list[str] = field(default_factory=list)
    notifiers: list[str] = field(default_factory=list)  # what Apprise sent (bodies and labels)
    api: list[str] = field(default_factory=list)
    cli: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    statuses: list[tuple[str, bool, int]] = field(default_factory=list)


def leaks(text: str) -> list[str]:
    return [needle for needle in NEEDLES if needle in text]


def settings_for(sim_url: str, db: Path, hook: str, apprise: str) -> Settings:
    return Settings(
        database_url=f"sqlite:///{db}",
        mode="enforce",
        languages=("en", "es"),
        ttft_samples=2,
        ttft_threshold_s=5,  # at most the first-token timeout, which is short here
        admin_token=TOKEN,
        log_format="json",
        models=(ModelSettings(id=MODEL),),
        webhooks=(Webhook(url=hook, secret=SecretStr(HOOK_SECRET)),),
        notifiers=(AppriseNotifier(url=SecretStr(apprise)),),
        openrouter=OpenRouterSettings(
            base_url=sim_url, api_key=KEY, first_token_timeout_s=5, stream_timeout_s=10
        ),
    )


def run_rounds(settings: Settings, sinks: Sinks) -> Any:
    wiring = build_wiring(settings)
    wrong = settings.replace(openrouter=settings.openrouter.replace(api_key=SecretStr(WRONG_KEY)))

    async def go(s: Settings, at: datetime) -> None:
        async with openrouter_client(s) as client:
            await RoundRunner(wiring, client, clock=lambda: at).run(slot_of(at, 30))

    for k, s in enumerate((settings, settings, wrong)):  # two failing rounds, then a 401 round
        asyncio.run(go(s, START + timedelta(minutes=30 * k)))
    sinks.quarantined = [q.tag for q in wiring.store.quarantines(MODEL, active_only=False)]
    Notifier(wiring.store, settings.webhooks, settings.notifiers).send_pending()
    return wiring


def call_api(settings: Settings, wiring: Any, sinks: Sinks) -> None:
    now = START + timedelta(hours=2)
    service = IgnoreListService(
        wiring.store, wiring.probes.builtin_exclusions, [MODEL], wiring.policy_version, lambda: now
    )
    service.refresh()
    client = TestClient(create_app(settings, wiring.store, service, clock=lambda: now))
    right = {"Authorization": f"Bearer {TOKEN}"}
    wrongs = [
        {},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {KEY}"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
    ]
    calls: list[tuple[str, str, dict[str, Any] | None, dict[str, str]]] = []
    # The secrets travel only where they belong (the Authorization header); the server must
    # echo them nowhere, whether they are right or wrong.
    body = {"model": MODEL, "provider": "alpha", "reason": "r"}
    for headers in wrongs:
        calls += [
            ("post", "/v1/exclusions", body, headers),
            ("post", "/v1/quarantines/release", {**body, "provider": "bravo"}, headers),
            ("delete", "/v1/exclusions/1", None, headers),
        ]
    calls += [
        ("post", "/v1/exclusions", {**body, "reason": "incident 42"}, right),
        ("post", "/v1/exclusions", {**body, "until": "not a time"}, right),
        (
            "post",
            "/v1/quarantines/release",
            {**body, "provider": "bravo", "reason": "fixed"},
            right,
        ),
        ("post", "/v1/quarantines/release", {**body, "provider": "alpha", "reason": "x"}, right),
        ("delete", "/v1/exclusions/1", None, right),
    ]
    for path in ("/v1/ignore-list", "/v1/providers", "/v1/rounds", "/v1/audit"):
        calls.append(("get", f"{path}?model={MODEL}", None, {}))
    for path in ("/", "/healthz", "/readyz", "/metrics", "/openapi.json"):
        calls.append(("get", path, None, {}))
    for method, path, payload, headers in calls:
        if method == "post":
            response = client.post(path, json=payload, headers=headers)
        elif method == "delete":
            response = client.delete(path, headers=headers)
        else:
            response = client.get(path, headers=headers)
        sinks.statuses.append((f"{method} {path}", headers == right, response.status_code))
        sinks.api.append(f"{response.status_code} {dict(response.headers)} {response.text}")


def call_cli(sim_url: str, db: Path, hook: str, sinks: Sinks) -> None:
    env = {
        "CANARY_DATABASE_URL": f"sqlite:///{db}",
        "OPENROUTER_API_KEY": KEY,
        "CANARY_ADMIN_TOKEN": TOKEN,
        "CANARY_OPENROUTER_BASE_URL": sim_url,
        "CANARY_MODELS": MODEL,
        "CANARY_LANGUAGES": "en",
        "CANARY_MODE": "enforce",
        "CANARY_LOG_FORMAT": "json",
    }
    runner = CliRunner()
    commands = [
        ["round", "--json"],
        ["probe", "--model", MODEL, "--provider", "alpha", "--provider", "charlie", "--json"],
        ["status", "--json"],
        ["status"],
        ["audit", "--json"],
        ["audit"],
        ["quarantine", "list", "--all", "--json"],
        ["history", "-m", MODEL, "-p", "bravo", "--json"],
        ["ignore-list", "-m", MODEL, "--json"],
        ["exclude", "add", "-m", MODEL, "-p", "foxtrot", "-r", "manual test"],
        ["exclude", "list", "--json"],
    ]
    for args in commands:
        result = runner.invoke(cli, args, env=env)
        sinks.cli.append(f"{args} exit={result.exit_code} {result.output} {result.exception!r}")
        assert result.exit_code == 0, (args, result.output, result.exception)
    # a configuration error that names the database must not show its password
    # (tried once: the error is the point, not start-up's retries for the wait)
    broken = {
        **env,
        "CANARY_DATABASE_URL": f"postgresql://canary:{TOKEN}@127.0.0.1:1/x",
        "CANARY_STARTUP_WAIT_S": "0",
    }
    for args in (["status"], ["round"]):
        result = runner.invoke(cli, args, env=broken)
        sinks.cli.append(f"{args} exit={result.exit_code} {result.output} {result.exception!r}")


def dump_tables(db: Path, sinks: Sinks) -> None:
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{db}")
    try:
        meta = MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            for name, table in meta.tables.items():
                rows = conn.execute(select(table)).all()
                sinks.tables[name] = [json.dumps([str(v) for v in row]) for row in rows]
                if name == "audit":
                    sinks.audit = sinks.tables[name]
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def sinks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sinks]:
    out = Sinks()
    db = tmp_path_factory.mktemp("secrets") / "canary.db"
    saved = structlog.get_config()
    log_stream, stdlib_stream = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(stdlib_stream)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with (
            start_simulator(SCENARIO, detector=False) as sim,
            Receiver() as receiver,
            Receiver() as apprise,
        ):
            hook = f"{receiver.url}/hook"
            # the token travels where it belongs (the path Apprise posts to), and nowhere else
            target = apprise.url.replace("http://", "json://") + f"/{APPRISE_TOKEN}"
            settings = settings_for(sim.base_url, db, hook, target)
            configure_logging(settings, stream=log_stream)
            wiring = run_rounds(settings, out)
            try:
                call_api(settings, wiring, out)
                # the admin calls' exclusion_added and exclusion_removed, to both targets
                Notifier(wiring.store, settings.webhooks, settings.notifiers).send_pending()
            finally:
                wiring.store.dispose()
            call_cli(sim.base_url, db, hook, out)
            out.webhooks = [json.dumps([p, h, b]) for p, h, b in receiver.requests]
            out.notifiers = [
                json.dumps(b) for p, _, b in apprise.requests if p == f"/{APPRISE_TOKEN}"
            ]
        dump_tables(db, out)
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        structlog.configure(**saved)
    out.logs, out.stdlib_logs = log_stream.getvalue(), stdlib_stream.getvalue()
    yield out


def test_the_run_used_the_secrets_and_produced_evidence(sinks: Sinks) -> None:
    """The run is worth searching: quarantines, 401s, notifications and admin calls happened."""
    assert "bravo" in sinks.quarantined
    assert any('"operator_alert"' in row for row in sinks.audit)
    assert any('"auth_config"' in row or "auth_config" in row for row in sinks.tables["probes"])
    assert len(sinks.webhooks) >= 2
    assert all("X-Canary-Signature" in delivery for delivery in sinks.webhooks)  # signed with it
    assert len(sinks.notifiers) >= 2  # the Apprise URL was used, token and all
    sent = " ".join(sinks.notifiers)
    assert "operator exclusion added" in sent and "operator exclusion removed" in sent
    assert any("notifiers[0]:json" in row for row in sinks.audit)  # named by its label
    admin = [(call, status) for call, right, status in sinks.statuses if right]
    assert ("post /v1/exclusions", 201) in admin and ("post /v1/quarantines/release", 200) in admin
    assert ("delete /v1/exclusions/1", 200) in admin
    denied = [status for call, right, status in sinks.statuses if not right and "/v1/" in call]
    assert denied.count(401) >= 15
    assert "probe_transport_error" in sinks.logs
    # stdlib records were captured (alembic's: the round no longer logs through httpx)
    assert "Context impl SQLiteImpl" in sinks.stdlib_logs


def test_no_log_line_holds_a_secret(sinks: Sinks) -> None:
    lines = sinks.logs.splitlines()
    assert len(lines) > 20
    assert [line for line in lines if leaks(line)] == []


def test_no_stdlib_log_record_holds_a_secret(sinks: Sinks) -> None:
    assert [line for line in sinks.stdlib_logs.splitlines() if leaks(line)] == []


def test_no_column_of_any_table_holds_a_secret(sinks: Sinks) -> None:
    assert {"rounds", "probes", "audit", "endpoint_state", "quarantines"} <= set(sinks.tables)
    assert sum(len(rows) for rows in sinks.tables.values()) > 50
    found = {name: [r for r in rows if leaks(r)] for name, rows in sinks.tables.items()}
    assert {name: rows for name, rows in found.items() if rows} == {}


def test_no_audit_record_or_notification_holds_a_secret(sinks: Sinks) -> None:
    assert sinks.audit
    assert [row for row in sinks.audit if leaks(row)] == []
    assert [body for body in sinks.webhooks + sinks.notifiers if leaks(body)] == []


def test_no_api_answer_holds_a_secret(sinks: Sinks) -> None:
    assert len(sinks.api) >= 25
    assert [answer for answer in sinks.api if leaks(answer)] == []


def test_no_cli_output_holds_a_secret(sinks: Sinks) -> None:
    assert len(sinks.cli) >= 12
    assert [output for output in sinks.cli if leaks(output)] == []


def test_scrub_masks_bearer_headers_url_passwords_and_registered_secrets() -> None:
    from canary.service.logs import register_secret

    register_secret("registered-secret-789")
    text = (
        "Authorization: Bearer abc.DEF-123_456 "
        "url=postgresql://canary:hunter2pass@db:5432/canary "
        "and registered-secret-789 inline"
    )
    masked = scrub(text)
    assert "abc.DEF-123_456" not in masked and "Bearer ***" in masked
    assert "hunter2pass" not in masked and "postgresql://canary:***@db:5432" in masked
    assert "registered-secret-789" not in masked


def test_log_events_mask_secret_keys_and_values_anywhere() -> None:
    saved = structlog.get_config()
    stream = io.StringIO()
    try:
        configure_logging(Settings(admin_token=TOKEN, log_format="json"), stream=stream)
        log = structlog.get_logger("test")
        log.info("call", api_key="plain-value", headers={"Authorization": f"Bearer {KEY}"})
        log.info("nested", detail=[f"token={TOKEN}", {"password": "pw-123456"}])
        log.info(f"event text with {TOKEN}")
    finally:
        structlog.configure(**saved)
    out = stream.getvalue()
    assert len(out.splitlines()) == 3
    assert "plain-value" not in out and "pw-123456" not in out
    assert not leaks(out)
