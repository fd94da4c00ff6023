"""Public reads through the ASGI app against a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from ops_seed import POLICY, TAGS, Api

from canary.api.page import FLOOR_BREACHED_COLOUR
from canary.core.model import looks_json
from canary.service import metrics


def test_ignore_list_has_the_documented_shape_and_merges_the_three_layers(reader: Api) -> None:
    response = reader.client.get("/v1/ignore-list", params={"model": reader.model})
    assert response.status_code == 200
    doc = response.json()
    assert set(doc) == {
        "model",
        "ignore",
        "provider",
        "entries",
        "generated_at",
        "stale",
        "policy_version",
        "capacity_floor",
        "usable_endpoints",
        "withheld",
        "floor_breached",
        "needs",
    }
    assert doc["model"] == reader.model
    # six listed, three excluded: alpha, charlie/fp8 and foxtrot are usable, floor 2
    assert (doc["usable_endpoints"], doc["capacity_floor"]) == (3, 2)
    assert doc["floor_breached"] is False and doc["withheld"] == []
    assert doc["ignore"] == ["bravo", "delta", "echo"]
    assert doc["provider"] == {"ignore": ["bravo", "delta", "echo"]}
    assert [(e["provider"], e["layer"]) for e in doc["entries"]] == [
        ("bravo", "quarantine"),
        ("delta", "runtime"),
        ("echo", "builtin"),
    ]
    bravo = doc["entries"][0]
    assert bravo["until"] == "2026-05-02T11:30:00Z" and bravo["since"] == "2026-05-01T11:30:00Z"
    # each entry beside its tag: the display name OpenRouter's answers carry
    assert [e["name"] for e in doc["entries"]] == ["Bravo", "Delta", "Echo"]
    assert doc["stale"] is False and doc["policy_version"] == POLICY
    assert doc["generated_at"] == "2026-05-01T12:00:00Z"


def test_ignore_list_etag_is_weak_and_it_is_cacheable(reader: Api) -> None:
    response = reader.client.get("/v1/ignore-list", params={"model": reader.model})
    assert re.fullmatch(r'W/"[0-9a-f]{64}"', response.headers["etag"])
    assert response.headers["cache-control"] == "public, max-age=15"
    assert response.headers["content-type"] == "application/json"


def test_if_none_match_with_the_current_etag_gives_304_without_a_body(reader: Api) -> None:
    etag = reader.client.get("/v1/ignore-list", params={"model": reader.model}).headers["etag"]
    again = reader.client.get(
        "/v1/ignore-list", params={"model": reader.model}, headers={"If-None-Match": etag}
    )
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag
    opaque = etag.removeprefix("W/")
    for header in (f'"other", {etag}', opaque):  # weak comparison: W/ or not, the same tag
        listed = reader.client.get(
            "/v1/ignore-list", params={"model": reader.model}, headers={"If-None-Match": header}
        )
        assert listed.status_code == 304


def test_housekeeping_rebuilding_the_same_list_still_answers_304(api: Api) -> None:
    for needs in ({}, {"needs": "tools"}):
        params = {"model": api.model, **needs}
        first = api.client.get("/v1/ignore-list", params=params)
        api.clock.now += timedelta(seconds=15)
        assert api.service.refresh()  # what the daemon's housekeeping does every 15 s
        body = api.client.get("/v1/ignore-list", params=params)
        assert body.json()["generated_at"] != first.json()["generated_at"]
        again = api.client.get(
            "/v1/ignore-list", params=params, headers={"If-None-Match": first.headers["etag"]}
        )
        assert again.status_code == 304 and again.headers["etag"] == first.headers["etag"]


def test_head_answers_as_get_without_a_body(reader: Api) -> None:
    """Monitors probe with HEAD: the GET's status and headers, no body."""
    got = reader.client.get("/v1/ignore-list", params={"model": reader.model})
    head = reader.client.head("/v1/ignore-list", params={"model": reader.model})
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["etag"] == got.headers["etag"]
    assert head.headers["content-length"] == got.headers["content-length"]
    for path in ("/healthz", "/metrics", "/"):
        assert reader.client.head(path).status_code == 200, path
    assert reader.client.head("/v1/providers").status_code == 400  # as its GET: no model given


def test_a_stale_etag_gets_the_full_list(reader: Api) -> None:
    response = reader.client.get(
        "/v1/ignore-list", params={"model": reader.model}, headers={"If-None-Match": '"old"'}
    )
    assert response.status_code == 200 and response.json()["ignore"]


def test_ignore_list_without_model_is_400_and_unknown_model_is_404_naming_the_known(
    reader: Api,
) -> None:
    missing = reader.client.get("/v1/ignore-list")
    assert missing.status_code == 400 and "model" in missing.json()["error"]
    unknown = reader.client.get("/v1/ignore-list", params={"model": "nobody/none"})
    assert unknown.status_code == 404
    assert reader.model in unknown.json()["error"] and reader.model in unknown.json()["known"]


def test_an_expired_quarantine_leaves_the_list_at_its_end_without_a_refresh(api: Api) -> None:
    before = api.client.get("/v1/ignore-list", params={"model": api.model}).headers["etag"]
    api.clock.now = api.seeded.quarantine_until
    response = api.client.get("/v1/ignore-list", params={"model": api.model})
    assert response.json()["ignore"] == ["delta", "echo"]
    assert response.headers["etag"] != before


def test_providers_show_each_state_failing_rounds_results_and_ttft(reader: Api) -> None:
    response = reader.client.get("/v1/providers", params={"model": reader.model})
    assert response.status_code == 200
    providers = {p["provider"]: p for p in response.json()["providers"]}
    assert set(providers) == set(TAGS)
    assert {tag: p["state"] for tag, p in providers.items()} == {
        "alpha": "healthy",
        "bravo": "quarantined",
        "charlie/fp8": "suspect",
        "delta": "excluded",
        "echo": "excluded",
        "foxtrot": "healthy",  # slow, but latency never changes the routing state
    }
    assert {tag: p["latency"]["state"] for tag, p in providers.items()} == {
        **{tag: "healthy" for tag in TAGS},
        "foxtrot": "degraded",
    }
    bravo = providers["bravo"]
    assert bravo["failing_rounds"] == 2
    assert bravo["quarantine"] == {
        "since": "2026-05-01T11:30:00Z",
        "until": "2026-05-02T11:30:00Z",
        "step": 1,
        "causes": ["hygiene"],
        "withheld": False,
    }
    assert bravo["failing_by_contract"] == {"hygiene": 2}
    assert bravo["last_round"]["hygiene"]["result"] == "fail"
    assert "stray fragment" in bravo["last_round"]["hygiene"]["detail"]
    assert providers["charlie/fp8"]["failing_rounds"] == 1
    assert providers["delta"]["exclusions"][0]["layer"] == "runtime"
    assert providers["echo"]["exclusions"][0]["layer"] == "builtin"
    foxtrot = providers["foxtrot"]["ttft_s"]
    # 7.50, 7.51 and 7.52 s share one 2 % bucket: every percentile reports its largest sample
    assert foxtrot["24h"] == {"n": 6, "p50": 7.52, "p95": 7.52, "p99": 7.52}
    assert foxtrot["7d"]["n"] == 6
    assert [p["state"] for p in response.json()["providers"]][0] == "quarantined"  # worst first


def test_providers_ttft_windows_drop_old_samples(api: Api) -> None:
    api.clock.now += timedelta(days=2)
    providers = {
        p["provider"]: p
        for p in api.client.get("/v1/providers", params={"model": api.model}).json()["providers"]
    }
    assert providers["alpha"]["ttft_s"]["24h"] == {"p50": None, "p95": None, "p99": None, "n": 0}
    assert providers["alpha"]["ttft_s"]["7d"]["n"] == 6


def test_providers_need_a_known_model(reader: Api) -> None:
    assert reader.client.get("/v1/providers").status_code == 400
    unknown = reader.client.get("/v1/providers", params={"model": "nobody/none"})
    assert unknown.status_code == 404 and reader.model in unknown.json()["error"]


def test_rounds_are_newest_first_and_limited(reader: Api) -> None:
    rounds = reader.client.get("/v1/rounds", params={"model": reader.model}).json()["rounds"]
    assert [r["id"] for r in rounds] == sorted(reader.seeded.rounds, reverse=True)
    assert rounds[0]["status"] == "finished" and rounds[0]["policy_version"] == POLICY
    one = reader.client.get("/v1/rounds", params={"model": reader.model, "limit": 1}).json()[
        "rounds"
    ]
    assert len(one) == 1


def test_rounds_reject_a_bad_limit_with_400(reader: Api) -> None:
    for limit in ("abc", "0", "100000", "-1"):
        response = reader.client.get("/v1/rounds", params={"model": reader.model, "limit": limit})
        assert response.status_code == 400, limit
        assert "limit" in response.json()["error"]


def test_audit_lists_records_with_the_documented_fields(reader: Api) -> None:
    records = reader.client.get("/v1/audit", params={"model": reader.model}).json()["records"]
    assert [r["event"] for r in records] == ["exclusion_added", "quarantine"]
    quarantine = records[1]
    assert {"at", "event", "actor", "model", "provider", "detail"} <= set(quarantine)
    assert quarantine["actor"] == "canary" and quarantine["provider"] == "bravo"
    assert quarantine["evidence"] == looks_json(reader.seeded.looks)
    assert [look["id"] for look in quarantine["evidence"]] == list(reader.seeded.rounds)


def test_audit_filters_by_since_and_rejects_a_bad_time(reader: Api) -> None:
    recent = reader.client.get(
        "/v1/audit", params={"model": reader.model, "since": "2026-05-01T11:45:00Z"}
    )
    assert [r["event"] for r in recent.json()["records"]] == ["exclusion_added"]
    bad = reader.client.get("/v1/audit", params={"since": "yesterday"})
    assert bad.status_code == 400 and "since" in bad.json()["error"]


def test_healthz_answers_200(reader: Api) -> None:
    response = reader.client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_is_ready_with_a_recent_round(reader: Api) -> None:
    response = reader.client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json()["ready"] is True


def test_readyz_is_503_when_the_last_round_is_older_than_three_intervals(api: Api) -> None:
    # Other models in the shared store may have later rounds; only this module's clock matters.
    api.clock.now += timedelta(days=30)
    response = api.client.get("/readyz")
    assert response.status_code == 503
    assert any("last round" in r for r in response.json()["reasons"])


def test_metrics_are_prometheus_text_with_canary_names(reader: Api) -> None:
    metrics.PROCESS.observe_probe("hygiene", "fail")
    metrics.PROCESS.observe_round(12.5, 0.004)
    response = reader.client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert re.search(r'canary_probes_total\{contract="hygiene",result="fail"\} [1-9]', text)
    # every (contract, result) series exists from the start (the process's counters are shared
    # by the tests one process runs, so its value is whatever they counted)
    assert re.search(r'canary_probes_total\{contract="tools",result="transport_error"\} \d', text)
    assert f'canary_quarantines_active{{model="{reader.model}"}} 1.0' in text
    assert f'canary_ignore_list_age_seconds{{model="{reader.model}"}} 0.0' in text
    assert f'canary_ignore_list_stale{{model="{reader.model}"}} 0.0' in text
    assert "canary_round_duration_seconds_bucket" in text
    # no per-process series per endpoint (they went stale on replicas that ran no round)
    assert "canary_ttft_seconds" not in text and "_created" not in text
    assert not re.search(
        r"^(?!#)(?!canary_)\w", text, re.M
    )  # only our registry, no process metrics


def test_openapi_document_describes_every_route(reader: Api) -> None:
    doc = reader.client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    routes = {r.path for r in reader.app.routes}  # type: ignore[attr-defined]
    assert routes - {"/openapi.json"} == set(doc["paths"])


def test_openapi_document_carries_the_models_limits_and_one_error_body(reader: Api) -> None:
    doc = reader.client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert schemas["ReleaseRequest"]["properties"]["reason"]["maxLength"] == 500
    limit = next(p for p in doc["paths"]["/v1/rounds"]["get"]["parameters"] if p["name"] == "limit")
    assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (1, 1000)
    assert "HTTPValidationError" not in schemas  # every error is documented as {"error": ...}
    for path, item in doc["paths"].items():
        for operation in item.values():
            for status, answer in operation["responses"].items():
                if status[0] in "45d" and path != "/readyz":  # its 503 says why it is not ready
                    ref = answer["content"]["application/json"]["schema"]["$ref"]
                    assert ref.endswith("/ErrorBody"), (path, status, ref)


def test_status_page_gives_times_ago_or_ahead_as_people_say_them(reader: Api) -> None:
    html = reader.client.get("/").text
    # rounds 60 and 30 min before now, each finished 2 min after it started; slots every 30 min
    assert "last round 28 min ago · next in 30 min · list read under 1 min ago" in html
    # bravo's one-day quarantine started 30 min ago
    assert re.search(r"quarantined until \S+ \(in 24 h\), step 1", html)  # 23.5 h
    assert re.search(r'title="[^"]+">10 min ago</span> <b>', html)  # the exclusion, as a decision
    spans = re.findall(
        r"(?:in )?(?:[\d,.]+|under 1) ?(?:s|min|h|d) ago|in [\d,.]+ ?(?:s|min|h|d)\b", html
    )
    assert spans and all(re.search(r"(min|h)\b", span) for span in spans), spans
    assert "how long ago or until something happens is in minutes (min), hours (h) or days" in html
    assert "Times are in seconds" not in html


def test_status_page_counts_long_spans_in_days(api: Api) -> None:
    api.clock.now += timedelta(days=2)
    html = api.client.get("/").text
    assert "last round 2 days ago" in html and " min ago" not in html.split("last round")[1][:20]
    api.clock.now += timedelta(days=5)
    assert "last round 7 days ago" in api.client.get("/").text


def test_status_page_shows_every_provider_with_its_state_and_uses_no_external_asset(
    api: Api,
) -> None:
    response = api.client.get("/")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    html = response.text
    for tag in TAGS:
        assert f"<code>{tag}</code>" in html
    for state in ("quarantined", "suspect", "excluded", "healthy"):
        assert f">{state}</span>" in html
    assert "degraded-latency" not in html and ">degraded</span>" in html
    assert '<meta http-equiv="refresh"' in html and "<svg" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html and "<link" not in html


def listhead(html: str) -> str:
    found = re.search(r'<div class="listhead">.*?</div>', html, re.S)
    assert found, "no list head on the page"
    return found.group(0)


def test_a_fresh_list_with_the_floor_held_is_shown_fresh_in_green(reader: Api) -> None:
    head = listhead(reader.client.get("/").text)
    assert '<span class="pill" style="background:#1a7f37">fresh</span>' in head
    assert "floor breached" not in head


def test_a_breached_floor_is_never_shown_next_to_a_green_fresh_pill(api: Api) -> None:
    for tag in ("alpha", "charlie/fp8", "foxtrot"):  # one usable endpoint left, floor 2
        api.store.add_exclusion(
            api.model, tag, "incident", "ops", None, api.clock.now, builtin=(), floor=2, force=True
        )
    assert api.service.refresh()
    html = api.client.get("/").text
    head = listhead(html)
    assert f'background:{FLOOR_BREACHED_COLOUR}">floor breached</span>' in head
    assert ">fresh</span>" not in head and "#1a7f37" not in head
    assert "up to date, built" in head  # the freshness is still said, without the all-clear
    assert '<div class="floor breached">1 usable endpoint(s), below the capacity floor' in html


def test_unknown_paths_and_methods_answer_json(api: Api) -> None:
    missing = api.client.get("/nope")
    assert missing.status_code == 404 and "error" in missing.json()
    wrong = api.client.put("/v1/ignore-list")
    assert wrong.status_code == 405 and "error" in wrong.json()


def test_an_app_that_needs_no_structured_output_keeps_a_host_quarantined_for_the_schema(
    api: Api,
) -> None:
    from canary.core.model import Contract, EndpointState, Look, Streak
    from canary.core.quarantine import QuarantineStart

    since = api.clock.now - timedelta(minutes=5)
    until = since + timedelta(days=1)
    looks = (Look.round(1, since - timedelta(minutes=30)), Look.round(2, since))
    state = EndpointState(
        api.model,
        "alpha",
        streaks=(Streak(Contract.schema, 2, since, looks),),
        quarantined_since=since,
        quarantined_until=until,
        causes=("schema",),
        ladder_step=1,
        last_quarantine_at=since,
    )
    start = QuarantineStart(api.model, "alpha", since, until, 1, "schema broke", looks, ("schema",))
    assert api.store.apply_decision(
        round_id=None, model=api.model, before=api.store.load_states(api.model),
        after={"alpha": state}, events=[], quarantines_started=[start], actor="canary",
        policy_version=POLICY, at=since,
    )  # fmt: skip
    api.service.refresh()

    def get(needs: str | None) -> Any:
        params = {"model": api.model, **({"needs": needs} if needs is not None else {})}
        return api.client.get("/v1/ignore-list", params=params)

    full, tools, structured = get(None), get("tools"), get("structured_outputs,tools")
    assert "alpha" in full.json()["ignore"] and full.json()["needs"] is None
    assert "alpha" not in tools.json()["ignore"] and tools.json()["needs"] == ["tools"]
    assert "bravo" in tools.json()["ignore"]  # bravo's cause (hygiene) concerns every app
    assert "alpha" in structured.json()["ignore"]
    etags = {r.headers["etag"] for r in (full, tools, structured)}
    assert len(etags) == 3  # each variant has its own ETag
    again = api.client.get(
        "/v1/ignore-list",
        params={"model": api.model, "needs": "tools"},
        headers={"If-None-Match": tools.headers["etag"]},
    )
    assert again.status_code == 304
    unknown = get("vision")
    assert unknown.status_code == 400 and unknown.json()["known"] == ["structured_outputs", "tools"]


def test_exclusions_in_force_are_read_without_a_token(reader: Api) -> None:
    response = reader.client.get("/v1/exclusions", params={"model": reader.model})
    assert response.status_code == 200
    records = response.json()["exclusions"]
    assert [(r["provider"], r["layer"]) for r in records] == [
        ("delta", "runtime"),
        ("echo", "builtin"),
    ]
    assert records[0]["id"] == reader.seeded.exclusion_id and records[0]["reason"].startswith(
        "incident"
    )
    everyone = reader.client.get("/v1/exclusions").json()
    assert everyone["model"] is None and len(everyone["exclusions"]) >= 2
    assert reader.client.get("/v1/exclusions", params={"model": "acme/none"}).status_code == 404


def test_quarantines_in_force_carry_their_causes_without_a_token(api: Api) -> None:
    response = api.client.get("/v1/quarantines", params={"model": api.model})
    assert response.status_code == 200
    [bravo] = response.json()["quarantines"]
    assert bravo["provider"] == "bravo" and bravo["causes"] == ["hygiene"]
    assert bravo["withheld"] is False and bravo["until"] == "2026-05-02T11:30:00Z"
    api.clock.now += timedelta(days=2)  # over: no longer in force
    assert api.client.get("/v1/quarantines", params={"model": api.model}).json()[
        "quarantines"
    ] == []  # fmt: skip


def test_history_gives_one_endpoints_verdicts_and_names_the_known_providers(reader: Api) -> None:
    response = reader.client.get(
        "/v1/history", params={"model": reader.model, "provider": "charlie/fp8"}
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["model"], body["provider"]) == (reader.model, "charlie/fp8")
    assert [r["round_id"] for r in body["history"]] == sorted(reader.seeded.rounds, reverse=True)
    assert [r["verdict"] for r in body["history"]] == ["fail", "pass"]
    one = reader.client.get(
        "/v1/history", params={"model": reader.model, "provider": "charlie/fp8", "limit": 1}
    )
    assert len(one.json()["history"]) == 1
    missing = reader.client.get("/v1/history", params={"model": reader.model})
    assert missing.status_code == 400 and "provider" in missing.json()["error"]
    unknown = reader.client.get("/v1/history", params={"model": reader.model, "provider": "zulu"})
    assert unknown.status_code == 404 and "alpha" in unknown.json()["known"]
    invalid = reader.client.get(
        "/v1/history", params={"model": reader.model, "provider": "Bad Tag"}
    )
    assert invalid.status_code == 400 and "not a provider slug" in invalid.json()["error"]


def test_quarantines_with_all_include_the_ended_ones(api: Api) -> None:
    api.store.release_quarantine(api.model, "bravo", "api", "fixed", api.clock.now)
    params = {"model": api.model}
    assert api.client.get("/v1/quarantines", params=params).json()["quarantines"] == []
    ended = api.client.get("/v1/quarantines", params={**params, "all": "true"}).json()
    [bravo] = ended["quarantines"]
    assert (bravo["provider"], bravo["release_why"]) == ("bravo", "manual")
    assert bravo["released_at"] is not None
    bad = api.client.get("/v1/quarantines", params={**params, "all": "maybe"})
    assert bad.status_code == 400 and "all must be true or false" in bad.json()["error"]


def test_providers_carry_the_display_name_of_the_latest_listing_beside_the_tag(reader: Api) -> None:
    body = reader.client.get("/v1/providers", params={"model": reader.model}).json()
    named = {p["provider"]: p["name"] for p in body["providers"]}
    assert named["charlie/fp8"] == "Charlie" and named["alpha"] == "Alpha"
