"""deploy/: the YAML parses, the settings they carry load, and the files agree with the code."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from canary.config.settings import FILE_VARIANTS, Settings, load_settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
ENV_NAME = re.compile(r"\b(CANARY_[A-Z_]+|OPENROUTER_API_KEY)\b")


def k8s_documents() -> dict[tuple[str, str], dict[str, Any]]:
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()))
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def compose() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def container() -> dict[str, Any]:
    deployment = k8s_documents()[("Deployment", "canary")]
    (only,) = deployment["spec"]["template"]["spec"]["containers"]
    return only


def test_every_yaml_file_parses() -> None:
    files = sorted(DEPLOY.glob("*.y*ml"))
    assert {f.name for f in files} >= {"kubernetes.yaml", "docker-compose.yml"}
    for f in files:
        assert all(doc is not None for doc in yaml.safe_load_all(f.read_text())), f.name


def test_example_settings_load(tmp_path: Path) -> None:
    settings = load_settings(DEPLOY / "canary.toml", env={})
    assert settings.model_ids == ("acme/roleplay-1",)
    assert settings.mode == "observe"


def test_configmap_settings_load_and_match_the_example(tmp_path: Path) -> None:
    config = k8s_documents()[("ConfigMap", "canary-config")]
    path = tmp_path / "canary.toml"
    path.write_text(config["data"]["canary.toml"])
    from_configmap = load_settings(path, env={})
    assert from_configmap == load_settings(DEPLOY / "canary.toml", env={})


def test_kubernetes_deployment_runs_two_probed_limited_replicas() -> None:
    docs = k8s_documents()
    deployment = docs[("Deployment", "canary")]
    assert deployment["spec"]["replicas"] == 2
    c = container()
    assert c["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080"]
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"cpu", "memory"} <= set(c["resources"]["limits"])
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_kubernetes_references_resolve() -> None:
    docs = k8s_documents()
    c = container()
    volumes = {
        v["name"]: v for v in docs[("Deployment", "canary")]["spec"]["template"]["spec"]["volumes"]
    }
    secret = docs[("Secret", volumes["secrets"]["secret"]["secretName"])]
    assert secret["stringData"]["CANARY_DATABASE_URL"].startswith("postgresql+psycopg://")
    assert {"OPENROUTER_API_KEY", "CANARY_ADMIN_TOKEN"} <= set(secret["stringData"])
    assert ("ConfigMap", volumes["config"]["configMap"]["name"]) in docs
    env = {e["name"]: e["value"] for e in c["env"]}
    mount = next(m for m in c["volumeMounts"] if m["name"] == "config")
    assert env["CANARY_CONFIG"] == f"{mount['mountPath']}/canary.toml"
    labels = docs[("Deployment", "canary")]["spec"]["template"]["metadata"]["labels"]
    for kind, name in docs:
        if kind == "Service":
            assert docs[(kind, name)]["spec"]["selector"].items() <= labels.items()


def test_compose_runs_canary_on_postgres_16() -> None:
    services = compose()["services"]
    assert services["postgres"]["image"] == "postgres:16"
    canary = services["canary"]
    assert canary["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert canary["build"]["dockerfile"] == "deploy/Dockerfile"
    mounted = {v.split(":")[0] for v in canary["volumes"]}
    assert all((DEPLOY / m).resolve().exists() for m in mounted)


def test_compose_passes_every_secret_as_a_file_never_in_the_environment() -> None:
    data = compose()
    declared = data["secrets"]
    for name in ("canary", "postgres"):
        service = data["services"][name]
        env = service["environment"]
        files = {key: value for key, value in env.items() if key.endswith("_FILE")}
        assert files, name
        for path in files.values():
            secret = Path(path)
            assert secret.parent == Path("/run/secrets") and secret.name in service["secrets"]
            assert declared[secret.name]["file"] == f"./secrets/{secret.name}"
        assert not any(
            "PASSWORD" in key or "TOKEN" in key or "KEY" in key for key in env.keys() - files.keys()
        )
    canary_env = data["services"]["canary"]["environment"]
    assert {f"{name}_FILE" for name in FILE_VARIANTS} <= canary_env.keys()
    assert not any("${" in str(value) for value in canary_env.values())
    ignored = (REPO / ".gitignore").read_text().split()
    assert (
        "deploy/secrets/" in ignored
        and "deploy/secrets" in (REPO / ".dockerignore").read_text().split()
    )


def _systemd_install_steps() -> list[str]:
    """The `install` lines of deploy/README.md's systemd section, as written there."""
    text = (DEPLOY / "README.md").read_text()
    section = text.split("## canary.service (systemd)", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.strip().startswith("install ")]


@pytest.mark.slow  # runs the install lines in a shell
def test_the_systemd_install_steps_run_on_a_fresh_host(tmp_path: Path) -> None:
    """The README's `install` lines, run into an empty root: no folder needs to exist first."""
    steps = _systemd_install_steps()
    assert len(steps) == 3
    checkout = tmp_path / "opt" / "canary"
    (checkout / "deploy").mkdir(parents=True)
    for name in ("canary.toml", "canary.service"):
        shutil.copy(DEPLOY / name, checkout / "deploy" / name)
    for step in steps:
        rooted = (
            step.split("#", 1)[0]
            .replace(" /etc/", f" {tmp_path}/etc/")
            .replace(" /opt/", f" {tmp_path}/opt/")
        )
        subprocess.run(["sh", "-c", rooted], check=True)
    modes = {
        "etc/canary/canary.toml": 0o644,
        "etc/canary/canary.env": 0o600,
        "etc/systemd/system/canary.service": 0o644,
    }
    for path, mode in modes.items():
        assert (tmp_path / path).stat().st_mode & 0o777 == mode, path
    assert (tmp_path / "etc/systemd/system/canary.service").read_text() == (
        DEPLOY / "canary.service"
    ).read_text()


@pytest.mark.slow  # runs systemd-analyze
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    unit = tmp_path / "canary.service"
    # the unit names the install path; verify checks that ExecStart's binary exists
    binary = tmp_path / "canary"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    unit.write_text(
        (DEPLOY / "canary.service").read_text().replace("/opt/canary/.venv/bin/canary", str(binary))
    )
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)], capture_output=True, text=True
    )
    problems = [
        line for line in result.stderr.splitlines() if str(unit) in line or "canary" in line
    ]
    assert result.returncode == 0 and not problems, result.stderr


def test_dockerfile_builds_a_non_root_serving_image() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.M)
    # with the tracing extra: an OTEL_EXPORTER_OTLP_ENDPOINT injected by the platform gets traces
    assert re.search(r'^RUN pip install "\.\[otel\]"', text, re.M)
    user = re.search(r"^USER (\S+)", text, re.M)
    assert user is not None and user.group(1).split(":")[0] not in ("root", "0")
    assert "/healthz" in re.search(r"^HEALTHCHECK .*(?:\n\s+.*)*", text, re.M).group(0)  # type: ignore[union-attr]
    assert '["serve", "--host", "0.0.0.0", "--port", "8080"]' in text


def test_dockerfile_copies_paths_that_exist() -> None:
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), source


def test_every_environment_variable_named_is_read_by_canary() -> None:
    source = "\n".join(p.read_text() for p in (REPO / "canary").rglob("*.py"))
    known = set(re.findall(r"[\"'](CANARY_[A-Z_]+|OPENROUTER_API_KEY)[\"']", source))
    known |= {f"{name}_FILE" for name in FILE_VARIANTS}  # built from the names they vary
    # pydantic-settings reads CANARY_<SETTING> and CANARY_<TABLE>_<SETTING> from the fields
    for name, field in Settings.model_fields.items():
        known.add(f"CANARY_{name.upper()}")
        table = getattr(field.annotation, "model_fields", {})
        known |= {f"CANARY_{name.upper()}_{inner.upper()}" for inner in table}
    for name in (
        "Dockerfile",
        "docker-compose.yml",
        "canary.service",
        "kubernetes.yaml",
        "README.md",
    ):
        used = set(ENV_NAME.findall((DEPLOY / name).read_text()))
        assert used <= known, (name, used - known)


def systemd_unit() -> dict[str, list[tuple[str, str]]]:
    sections: dict[str, list[tuple[str, str]]] = {}
    current = ""
    for raw in (DEPLOY / "canary.service").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = []
        else:
            key, _, value = line.partition("=")
            sections[current].append((key, value))
    return sections


def test_systemd_unit_serves_with_secrets_from_a_file_and_hardening() -> None:
    service = dict(systemd_unit()["Service"])  # last value of repeated keys is enough here
    assert service["ExecStart"].split()[1:2] == ["serve"]
    assert service["EnvironmentFile"].startswith("/etc/canary/")
    assert service["DynamicUser"] == "yes"
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
    }.items():
        assert service[key] == value
    assert service["CapabilityBoundingSet"] == ""
    assert "OPENROUTER_API_KEY" not in "".join(v for _, v in systemd_unit()["Service"])


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)
def test_systemd_unit_verifies(tmp_path: Path) -> None:
    executable = Path(sys.executable).parent / "canary"
    if not executable.exists():
        pytest.skip("the canary command is not installed beside the interpreter")
    unit = tmp_path / "canary.service"
    unit.write_text(
        (DEPLOY / "canary.service")
        .read_text()
        .replace("/opt/canary/.venv/bin/canary", str(executable))
    )
    result = subprocess.run(
        ["systemd-analyze", "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr
