"""The wiring of a round: what the pieces are built from."""

from __future__ import annotations

from pathlib import Path

from canary.config.settings import Settings
from canary.rounds.wiring import build_wiring

SPANISH = (
    "La linterna se balancea sobre la puerta de la posada mientras Mira entra sacudiéndose la "
    "lluvia de la capa. Recorre la sala llena de gente hasta que sus ojos se detienen en ti. "
    "«Cumpliste tu promesa», dice en voz baja, y se sienta frente a ti."
)


def test_a_single_language_watcher_still_names_the_language_an_answer_drifted_into(
    tmp_path: Path,
) -> None:
    settings = Settings(languages=("pt",), database_url=f"sqlite:///{tmp_path / 'w.db'}")
    wiring = build_wiring(settings)
    try:
        analysis = wiring.analyze(SPANISH, "pt")
        assert analysis.verdict.value == "anomaly"
        assert analysis.foreign_language == "es"
    finally:
        wiring.store.dispose()


def test_the_look_gap_and_publish_controls_enter_the_policy_version(tmp_path: Path) -> None:
    """Both change decisions: a different gap counts other looks, an unpublished control
    changes the list; the version says which ones a decision was made under."""
    from canary.config.settings import ModelSettings, Policy
    from canary.core.policy import PolicyRules

    def version(**changes: object) -> tuple[str, PolicyRules]:
        base: dict[str, object] = {"database_url": f"sqlite:///{tmp_path / 'v.db'}"}
        wiring = build_wiring(Settings(**{**base, **changes}), upgrade=False)  # type: ignore[arg-type]
        try:
            return wiring.policy_version, wiring.rules
        finally:
            wiring.store.dispose()

    plain, rules = version()
    assert rules.min_look_gap_minutes == 10  # the smaller of 10 and half of 30
    assert version(interval_minutes=12.0)[1].min_look_gap_minutes == 6
    assert version(policy=Policy(min_look_gap_minutes=10.0))[0] == plain  # the same gap
    assert version(policy=Policy(min_look_gap_minutes=5.0))[0] != plain
    control = ModelSettings(id="acme/a", positive_controls=("ctl",))
    shown = version(models=(control,))[0]
    hidden = version(models=(control.replace(publish_controls=False),))[0]
    assert len({plain, shown, hidden}) == 3
