"""deploy/ as an operator runs it: a writable data volume, secrets from files, a shutdown that
has time to finish a round, Prometheus scraping, a lean build context, and a README that names
every environment variable the code reads."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from canary.config.settings import FILE_VARIANTS, Settings, load_settings
from canary.service.daemon import UNWIND_S

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
GRACE_S = Settings().shutdown_grace_s


def _k8s() -> dict[tuple[str, str], dict[str, Any]]:
    docs = yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text())
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def _pod() -> dict[str, Any]:
    template: dict[str, Any] = _k8s()[("Deployment", "canary")]["spec"]["template"]
    return template


def test_the_image_runs_in_a_data_directory_its_user_owns() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    user = re.search(r"^USER (\d+)", text, re.M)
    assert user is not None
    assert re.search(rf"mkdir /data && chown {user.group(1)}:{user.group(1)} /data", text)
    assert re.search(r"^WORKDIR /data$", text, re.M)
    assert re.search(r'^VOLUME \["/data"\]$', text, re.M)
    # the default store is relative: inside the image it lands in the data directory
    assert Settings().database_url == "sqlite:///canary.db"


def _ignored(patterns: list[str], path: str) -> bool:
    for pattern in patterns:
        bare = pattern.removeprefix("**/")
        if fnmatch.fnmatch(path, pattern) or any(
            fnmatch.fnmatch(part, bare) for part in Path(path).parts
        ):
            return True
    return False


def test_the_build_context_leaves_out_the_venv_git_and_caches_but_not_what_is_copied() -> None:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for path in (".venv/bin/python", ".git/HEAD", "canary/__pycache__/x.pyc", ".mypy_cache/x",
                 ".pytest_cache/v", ".ruff_cache/x", "canary.db", "tests/conftest.py"):  # fmt: skip
        assert _ignored(patterns, path), path
    copied = [
        source
        for line in (DEPLOY / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
    ]
    for source in copied:
        assert not _ignored(patterns, source), source
        for file in (REPO / source).rglob("*.py") if (REPO / source).is_dir() else ():
            assert not _ignored(patterns, str(file.relative_to(REPO))) or "__pycache__" in str(file)


def test_kubernetes_reads_its_secrets_from_files_never_from_the_environment() -> None:
    pod = _pod()
    (container,) = pod["spec"]["containers"]
    assert "envFrom" not in container
    env = {e["name"]: e["value"] for e in container["env"]}
    mount = next(m for m in container["volumeMounts"] if m["name"] == "secrets")
    secret = _k8s()[("Secret", "canary-secrets")]["stringData"]
    for name in FILE_VARIANTS:
        assert name not in env
        path = Path(env[f"{name}_FILE"])
        assert path.parent == Path(mount["mountPath"]) and path.name in secret


def _readable_by(uid: int, gids: set[int], mode: int, owner: int, group: int) -> bool:
    return bool((owner == uid and mode & 0o400) or (group in gids and mode & 0o040) or mode & 0o004)


def test_kubernetes_mounts_files_the_pod_user_can_read() -> None:
    pod = _pod()["spec"]
    context = pod["securityContext"]
    uid, gids = context["runAsUser"], {context["runAsGroup"], context.get("fsGroup", 0)}
    assert context["fsGroup"] == context["runAsGroup"] == 10001
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["secrets"]["secret"]["defaultMode"] == 0o440  # root and the pod's group
    for volume in volumes.values():
        source = volume.get("secret") or volume.get("configMap")
        if source is None:
            continue
        # Secret and ConfigMap files belong to root, and to fsGroup when one is set
        mode, group = source.get("defaultMode", 0o644), context.get("fsGroup", 0)
        assert _readable_by(uid, gids, mode, 0, group), (volume["name"], oct(mode))


def test_the_image_and_the_unit_run_from_the_installed_package_alone() -> None:
    """The wheel carries the probe definitions and the migrations (tests/test_install.py): the
    image and the systemd unit point no variable at a copy of the checkout's, which a checkout
    made with umask 077 would leave unreadable to the service user."""
    for name in ("Dockerfile", "canary.service"):
        text = (DEPLOY / name).read_text()
        assert not re.search(r"CANARY_(PROBES|MIGRATIONS)_DIR", text), name


def test_kubernetes_waits_longer_than_the_shutdown_grace_and_is_scraped() -> None:
    pod = _pod()
    (container,) = pod["spec"]["containers"]
    grace = float({e["name"]: e["value"] for e in container["env"]}["CANARY_SHUTDOWN_GRACE_S"])
    assert pod["spec"]["terminationGracePeriodSeconds"] > grace + UNWIND_S
    annotations = pod["metadata"]["annotations"]
    port = next(p["containerPort"] for p in container["ports"] if p["name"] == "http")
    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(port),
        "prometheus.io/path": "/metrics",
    }


def test_compose_and_systemd_wait_longer_than_the_shutdown_grace() -> None:
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    stop = compose["services"]["canary"]["stop_grace_period"]
    assert float(stop.removesuffix("s")) > GRACE_S + UNWIND_S
    unit = (DEPLOY / "canary.service").read_text()
    timeout = re.search(r"^TimeoutStopSec=(\d+)$", unit, re.M)
    assert timeout is not None and int(timeout.group(1)) > GRACE_S + UNWIND_S


def test_the_prometheus_example_scrapes_metrics_and_honours_the_pod_annotations() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["canary"]["metrics_path"] == "/metrics"
    assert jobs["canary"]["static_configs"][0]["targets"] == ["127.0.0.1:8080"]
    relabels = jobs["canary-kubernetes"]["relabel_configs"]
    kept = {tuple(r["source_labels"]) for r in relabels if r.get("action") == "keep"}
    assert ("__meta_kubernetes_pod_annotation_prometheus_io_scrape",) in kept


ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _variables_read_by_the_code() -> set[str]:
    """Every variable name written as a string in a module of canary/ that reads the environment
    (``os.environ``, ``getenv``, or a mapping passed in its place): names are read directly, from
    tables (settings' ``SECRET_VARIABLES``) or tuples (tracing's endpoint variables); the
    ``_FILE`` variants are built from :data:`FILE_VARIANTS`."""
    read = set()
    for path in (REPO / "canary").rglob("*.py"):
        source = path.read_text()
        if "environ" not in source and "getenv" not in source:
            continue
        read |= {
            node.value
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and ENV_NAME.fullmatch(node.value)
        }
    return read | {f"{name}_FILE" for name in FILE_VARIANTS}


def _readme_table() -> set[str]:
    text = (REPO / "docs" / "configuration.md").read_text()
    table = text.split("| variable | setting |", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`", table))


def test_the_environment_scan_finds_variables_read_outside_the_settings() -> None:
    assert {"OTEL_EXPORTER_OTLP_ENDPOINT", "CANARY_MIGRATIONS_DIR"} <= _variables_read_by_the_code()


def _settings_variables() -> set[str]:
    """What pydantic-settings reads for the settings: ``CANARY_<SETTING>`` for a setting at the
    top, ``CANARY_<TABLE>_<SETTING>`` for one of a table."""
    names = set()
    for name, field in Settings.model_fields.items():
        names.add(f"CANARY_{name.upper()}")
        table = getattr(field.annotation, "model_fields", {})
        names |= {f"CANARY_{name.upper()}_{inner.upper()}" for inner in table}
    return names


# Documented in the table and read by a library canary hands them to: rich, for the tables.
READ_BY_LIBRARIES = {"NO_COLOR", "FORCE_COLOR"}


def test_the_readme_variable_table_lists_every_variable_the_code_reads() -> None:
    """Every name the code spells is in the table; every name the table gives is read, by name
    or by the settings' rule, which the table states."""
    table = _readme_table()
    assert _variables_read_by_the_code() <= table
    assert table <= _variables_read_by_the_code() | _settings_variables() | READ_BY_LIBRARIES
    text = (REPO / "docs" / "configuration.md").read_text()
    assert "`CANARY_<SETTING>`" in text and "`CANARY_<TABLE>_<SETTING>`" in text


def test_every_file_variant_is_accepted_by_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {}
    for name in FILE_VARIANTS:
        path = tmp_path / name
        path.write_text("postgresql+psycopg://u:p@db/c" if "DATABASE" in name else "value-1234")
        env[f"{name}_FILE"] = str(path)
    settings = load_settings(None, env=env)
    assert settings.database_url == "postgresql+psycopg://u:p@db/c"
