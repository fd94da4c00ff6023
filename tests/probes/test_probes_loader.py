"""Loading probes/: validation with readable errors, checksums, and the built-in exclusions."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from canary.config.probe_set import ProbeDefinitionError, ProbeSet, load_probes
from canary.config.settings import SUPPORTED_LANGUAGES
from canary.core.contracts.common import canonical_json
from canary.core.model import Layer, Look


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _error(directory: Path, languages: tuple[str, ...] = SUPPORTED_LANGUAGES) -> str:
    with pytest.raises(ProbeDefinitionError) as caught:
        load_probes(directory, languages)
    return str(caught.value)


def test_repository_probes_load_for_every_supported_language(probe_set: ProbeSet) -> None:
    assert probe_set.languages == SUPPORTED_LANGUAGES
    assert set(probe_set.prompts) == set(SUPPORTED_LANGUAGES)
    english = probe_set.patterns["en"]
    assert probe_set.refusal_patterns("en") == english
    for language in SUPPORTED_LANGUAGES[1:]:
        own = probe_set.patterns[language]
        assert own and probe_set.refusal_patterns(language) == own + english


def test_unknown_field_in_prompts_names_file_and_field(probes_copy: Path) -> None:
    with (probes_copy / "prompts" / "pt.yaml").open("a", encoding="utf-8") as f:
        f.write("greeting: Olá {nonce}\n")
    message = _error(probes_copy)
    assert "probes/prompts/pt.yaml" in message
    assert "unknown field 'greeting'" in message


def test_unknown_key_in_schema_json_is_rejected(probes_copy: Path) -> None:
    path = probes_copy / "schema.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["temperature"] = 0
    path.write_text(json.dumps(data), encoding="utf-8")
    message = _error(probes_copy)
    assert message == "probes/schema.json: unknown field 'temperature'"


def test_bad_regex_names_language_and_pattern(probes_copy: Path) -> None:
    _edit(probes_copy / "refusal_patterns.yaml", "'^(?:извините", "'^(?:извините(")
    message = _error(probes_copy)
    assert "probes/refusal_patterns.yaml" in message
    assert "languages.ru.patterns" in message
    assert "pattern #1" in message and "not a valid regex" in message


def test_missing_language_prompts_is_a_readable_error(probes_copy: Path) -> None:
    (probes_copy / "prompts" / "vi.yaml").unlink()
    assert _error(probes_copy) == "probes/prompts/vi.yaml: missing prompts"


def test_missing_language_prompts_is_fine_when_the_language_is_not_configured(
    probes_copy: Path,
) -> None:
    (probes_copy / "prompts" / "vi.yaml").unlink()
    probes = load_probes(probes_copy, ("en", "pt"))
    assert probes.languages == ("en", "pt")
    assert "prompts/vi" not in probes.checksums


def test_missing_refusal_patterns_for_a_language_is_rejected(probes_copy: Path) -> None:
    path = probes_copy / "refusal_patterns.yaml"
    text = path.read_text(encoding="utf-8")
    start, end = text.index("\n  ko:\n"), text.index("\n  zh:\n")
    path.write_text(text[:start] + text[end:], encoding="utf-8")
    assert _error(probes_copy) == "probes/refusal_patterns.yaml: missing patterns for 'ko'"


def test_prompt_without_nonce_is_rejected(probes_copy: Path) -> None:
    _edit(probes_copy / "prompts" / "de.yaml", "(Szene {nonce})\nrefusal", "\nrefusal")
    message = _error(probes_copy)
    assert message.startswith("probes/prompts/de.yaml: field 'ttft'")
    assert "{nonce}" in message


def test_file_for_an_unsupported_language_is_rejected(probes_copy: Path) -> None:
    (probes_copy / "prompts" / "xx.yaml").write_text("system: x\n", encoding="utf-8")
    assert _error(probes_copy) == "probes/prompts/xx.yaml: not a supported language"


def test_invalid_yaml_reports_the_line(probes_copy: Path) -> None:
    (probes_copy / "prompts" / "en.yaml").write_text("system: [unclosed\nttft: x\n")
    message = _error(probes_copy)
    assert message.startswith("probes/prompts/en.yaml: not valid YAML")
    assert "line" in message


def test_pattern_that_stops_catching_its_examples_stops_the_load(probes_copy: Path) -> None:
    _edit(probes_copy / "refusal_patterns.yaml", "(?:helfen|fortsetzen|", "(?:helfen|")
    message = _error(probes_copy)
    assert "de: no pattern catches refusal" in message
    assert "nicht fortsetzen" in message


def test_pattern_that_matches_a_benign_answer_stops_the_load(probes_copy: Path) -> None:
    with (probes_copy / "refusal_patterns.yaml").open("a", encoding="utf-8") as f:
        f.write("      - \"I'm sorry, but I can't continue.\"\n")  # appended to zh.benign
    message = _error(probes_copy)
    assert "zh: benign example" in message


def test_schema_that_is_not_strict_compatible_is_rejected(probes_copy: Path) -> None:
    path = probes_copy / "schema.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["schema"]["required"].remove("line")
    path.write_text(json.dumps(data), encoding="utf-8")
    message = _error(probes_copy)
    assert message.startswith("probes/schema.json: field 'schema'")
    assert "'line'" in message


def test_invalid_json_schema_in_tools_is_rejected(probes_copy: Path) -> None:
    path = probes_copy / "tools.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["tool"]["function"]["parameters"]["properties"]["summary"]["type"] = "text"
    path.write_text(json.dumps(data), encoding="utf-8")
    message = _error(probes_copy)
    assert message.startswith("probes/tools.json: field 'tool.function.parameters'")
    assert "not a valid JSON Schema" in message


def test_checksums_are_stable_across_loads(probe_set: ProbeSet) -> None:
    again = load_probes(Path(__file__).resolve().parents[2] / "probes", SUPPORTED_LANGUAGES)
    assert dict(again.checksums) == dict(probe_set.checksums)
    assert again.version == probe_set.version
    assert all(len(c) == 64 for c in probe_set.checksums.values())


def test_checksum_changes_with_content_but_not_with_comments(
    probes_copy: Path, probe_set: ProbeSet
) -> None:
    with (probes_copy / "prompts" / "fr.yaml").open("a", encoding="utf-8") as f:
        f.write("# a comment changes nothing\n")
    commented = load_probes(probes_copy, SUPPORTED_LANGUAGES)
    assert dict(commented.checksums) == dict(probe_set.checksums)

    _edit(probes_copy / "prompts" / "fr.yaml", "vieux gardien", "vieil homme, gardien")
    edited = load_probes(probes_copy, SUPPORTED_LANGUAGES)
    changed = {k for k in probe_set.checksums if edited.checksums[k] != probe_set.checksums[k]}
    assert changed == {"prompts/fr"}
    assert edited.version != probe_set.version


def test_builtin_exclusions_load_as_builtin_layer_entries(probes_copy: Path) -> None:
    (probes_copy / "builtin_exclusions.yaml").write_text(
        "entries:\n"
        "  - model: acme/roleplay-1\n"
        "    provider: badhost/fp4\n"
        "    reason: prefixed 19 of 20 answers with a stray fragment\n"
        "    since: 2026-01-15\n"
        "    evidence: canary probe --model acme/roleplay-1 --provider badhost/fp4\n"
        "    rounds: [12, 13]\n",
        encoding="utf-8",
    )
    (entry,) = load_probes(probes_copy, ("en",)).builtin_exclusions
    assert (entry.model, entry.tag, entry.layer) == (
        "acme/roleplay-1",
        "badhost/fp4",
        Layer.builtin,
    )
    assert entry.since == datetime(2026, 1, 15, tzinfo=UTC)
    assert entry.until is None
    assert entry.evidence == (Look.round(12, None), Look.round(13, None))
    assert "stray fragment" in entry.reason and "canary probe" in entry.reason
    assert entry.active(datetime(2026, 2, 1, tzinfo=UTC))


def test_the_builtin_list_checksum_is_its_entries_canonical_content(probes_copy: Path) -> None:
    """The checksum (part of the policy version) is the canonical JSON of the entries with every
    key present and dates as written: how the file is laid out, or which library reads it, does
    not move the policy version."""
    (probes_copy / "builtin_exclusions.yaml").write_text(
        "# reviewed\nentries:\n"
        "  - {provider: badhost/fp4, model: acme/roleplay-1, since: 2026-01-15, reason: r,\n"
        "     evidence: e, rounds: [12, 13]}\n"
        "  - {model: acme/roleplay-1, provider: other, reason: r2, since: '2026-02-01',\n"
        "     until: 2026-03-01, evidence: e2}\n",
        encoding="utf-8",
    )
    entries = [
        {"model": "acme/roleplay-1", "provider": "badhost/fp4", "reason": "r",
         "since": "2026-01-15", "until": None, "evidence": "e", "rounds": [12, 13]},
        {"model": "acme/roleplay-1", "provider": "other", "reason": "r2",
         "since": "2026-02-01", "until": "2026-03-01", "evidence": "e2", "rounds": []},
    ]  # fmt: skip
    expected = hashlib.sha256(canonical_json({"entries": entries}).encode("utf-8")).hexdigest()
    assert load_probes(probes_copy, ("en",)).checksums["builtin_exclusions"] == expected


def test_repository_builtin_list_is_valid(probe_set: ProbeSet) -> None:
    assert all(e.layer is Layer.builtin for e in probe_set.builtin_exclusions)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("provider: BadHost\n", "field 'entries.0.provider'"),
        ("provider: badhost\n    colour: red\n", "unknown field 'entries.0.colour'"),
        ("provider: badhost\n    since: soon\n", "field 'entries.0.since'"),
    ],
)
def test_builtin_exclusion_errors_name_the_field(
    probes_copy: Path, entry: str, expected: str
) -> None:
    base = (
        "entries:\n  - model: acme/roleplay-1\n    reason: r\n    evidence: e\n"
        "    since: 2026-01-15\n    "
    )
    text = base + entry
    if "since: soon" in entry:
        text = text.replace("    since: 2026-01-15\n", "", 1)
    (probes_copy / "builtin_exclusions.yaml").write_text(text, encoding="utf-8")
    message = _error(probes_copy, ("en",))
    assert message.startswith("probes/builtin_exclusions.yaml: ")
    assert expected in message


def test_duplicate_builtin_exclusion_is_rejected(probes_copy: Path) -> None:
    entry = "  - {model: a/b, provider: x, reason: r, since: 2026-01-01, evidence: e}\n"
    (probes_copy / "builtin_exclusions.yaml").write_text("entries:\n" + entry * 2)
    assert "duplicate entry for a/b / x" in _error(probes_copy, ("en",))
