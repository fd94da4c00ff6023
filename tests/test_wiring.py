"""The wiring of a round: what the pieces are built from."""

from __future__ import annotations

from pathlib import Path

from canary.settings import Settings
from canary.wiring import build_wiring

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
