"""The deployment recipes are part of the product: docker-compose.yml checked against the Compose
Specification's schema (and by ``docker compose config`` where Docker's compose plugin is installed),
the Kubernetes manifests against Kubernetes' own schemas (strict: no unknown field), and what they are for
checked on top: the migrations run once before the replicas, the replicas serve on one address and scale,
health checks, a writable data volume, secrets from the environment. And ``serve`` binds the host its
settings name."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import kubernetes_validate
import pytest
import yaml
from check_jsonschema.builtin_schemas import get_builtin_schema

from tests.conftest import create_database, installed_template
from tests.live_server import ROOT, start_serve

COMPOSE = ROOT / "docker-compose.yml"
MANIFESTS = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
#: The Kubernetes version the manifests are checked against (and every later one kubernetes-validate knows).
KUBERNETES = "1.30"
SECRETS = {"POSTGRES_PASSWORD": "pw-from-env", "MASTER_AGENT_SECRET_KEY": "key-from-env"}


def _compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def _has_compose_plugin() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
    return probe.returncode == 0


def test_the_compose_file_follows_the_compose_specification() -> None:
    schema = get_builtin_schema("vendor.compose-spec")
    jsonschema.validate(_compose(), schema)
    misspelt = _compose()
    misspelt["services"]["app"]["depends_onn"] = misspelt["services"]["app"].pop("depends_on")
    with pytest.raises(jsonschema.ValidationError, match="depends_onn"):
        jsonschema.validate(misspelt, schema)


@pytest.mark.skipif(not _has_compose_plugin(), reason="no `docker compose` on this machine")
def test_docker_compose_config_accepts_it() -> None:
    env = {**os.environ, **SECRETS}
    checked = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    resolved = json.loads(checked.stdout)
    assert "pw-from-env" in resolved["services"]["app"]["environment"]["DATABASE_URL"]
    # Without the secrets it refuses to start, naming them.
    bare = {key: value for key, value in os.environ.items() if key not in SECRETS}
    refused = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config"],
        env=bare,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "POSTGRES_PASSWORD" in refused.stderr


def test_compose_migrates_once_then_serves_replicas_behind_one_address() -> None:
    services = _compose()["services"]
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    assert services["migrate"]["command"] == ["master-agent", "migrate"]
    app = services["app"]
    assert app["command"] == ["master-agent", "serve"]
    assert app["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    # Scalable: no host port of its own (the proxy publishes one), a replica count from the env.
    assert "ports" not in app and app["deploy"]["replicas"].startswith("${MASTER_AGENT_REPLICAS")
    assert app["environment"]["MASTER_AGENT_HOST"] == "0.0.0.0"
    assert "/ok" in " ".join(app["healthcheck"]["test"]) and "test" in services["db"]["healthcheck"]
    assert "appdata:/data" in app["volumes"] and app["environment"]["MASTER_AGENT_DATA_DIR"] == "/data"
    proxy = services["proxy"]
    assert proxy["ports"] == ["${MASTER_AGENT_PUBLISH_PORT:-8000}:8000"]
    assert proxy["depends_on"]["app"]["condition"] == "service_healthy"
    nginx = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "proxy_pass $app" in nginx and "resolver 127.0.0.11" in nginx and "proxy_buffering off" in nginx


def test_compose_secrets_come_from_the_environment() -> None:
    for service in ("app", "migrate"):
        environment = _compose()["services"][service]["environment"]
        assert "${POSTGRES_PASSWORD:?" in environment["DATABASE_URL"]
        assert environment["MASTER_AGENT_SECRET_KEY"].startswith("${MASTER_AGENT_SECRET_KEY:?")
    assert _compose()["services"]["db"]["environment"]["POSTGRES_PASSWORD"].startswith(
        "${POSTGRES_PASSWORD:?"
    )
    example = (ROOT / ".env.example").read_text()
    assert "POSTGRES_PASSWORD=" in example and "MASTER_AGENT_SECRET_KEY=" in example


def test_the_image_serves_as_a_numeric_unprivileged_user_with_a_writable_data_dir() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["master-agent", "serve"]' in dockerfile and "MASTER_AGENT_HOST=0.0.0.0" in dockerfile
    assert "USER 10001" in dockerfile and "chown 10001:10001 /data" in dockerfile
    assert "HEALTHCHECK" in dockerfile
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".venv*", ".master-agent", ".git", ".env"} <= ignored


def _documents() -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_each_kubernetes_manifest_is_valid(path: Path) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(document, KUBERNETES, strict=True)


def test_a_manifest_with_a_misspelt_field_is_refused() -> None:
    deployment = next(doc for doc in _documents() if doc["kind"] == "Deployment")
    deployment["spec"]["replica"] = deployment["spec"].pop("replicas")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def test_kubernetes_runs_a_migration_job_then_ready_replicas_behind_a_service() -> None:
    by_kind = {doc["kind"]: doc for doc in _documents()}
    assert set(by_kind) == {"Job", "Deployment", "Service"}
    job = by_kind["Job"]["spec"]["template"]["spec"]
    assert job["containers"][0]["command"] == ["master-agent", "migrate"] and job["restartPolicy"] == "Never"
    pod = by_kind["Deployment"]["spec"]["template"]
    api = pod["spec"]["containers"][0]
    assert api["command"] == ["master-agent", "serve"]
    assert api["readinessProbe"]["httpGet"]["path"] == "/ok"  # 503 until warm
    env = {item["name"]: item for item in api["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == "database-url"
    assert env["MASTER_AGENT_SECRET_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "master-agent"
    assert env["MASTER_AGENT_HOST"]["value"] == "0.0.0.0"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    service = by_kind["Service"]["spec"]
    assert service["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["ports"][0]["targetPort"] == api["ports"][0]["name"]


def _outside_address() -> str | None:
    """An address of this machine that is not loopback (None when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: only picks the outgoing interface
            address: str = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_serve_binds_the_host_its_settings_name(
    tmp_path: Path, pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = _outside_address()
    if outside is None:
        pytest.skip("this machine has no address but loopback")
    # A copy of the installed database: what the server holds is not what this test is about.
    installed = installed_template(pg_server_uri, tmp_path_factory)
    env = {
        **os.environ,
        "DATABASE_URL": create_database(pg_server_uri, "bind", template=installed),
        "MASTER_AGENT_DATA_DIR": str(tmp_path),
        "MASTER_AGENT_HOST": "0.0.0.0",
        "MASTER_AGENT_SCHEDULER": "disabled",
    }
    server, url = start_serve(env)
    try:
        port = url.rsplit(":", 1)[1]
        assert httpx.get(f"http://{outside}:{port}/ok", timeout=10).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
    # The default stays loopback only.
    env["MASTER_AGENT_HOST"] = ""
    server, url = start_serve(env)
    try:
        port = url.rsplit(":", 1)[1]
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://{outside}:{port}/ok", timeout=10)
    finally:
        server.terminate()
        server.wait(timeout=30)
