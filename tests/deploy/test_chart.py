"""The image and the chart, checked without a container runtime or helm (neither runs here; docs/operations.md):
the chart's templates rendered by a renderer of the small template subset they use, each manifest parsed and
checked for what the deployment needs, its config loaded by the gateway's own settings loader, and the image's
entrypoint compared with the command the tests start."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
# One worker's peak RSS with the default configuration (NER, jieba, litellm loaded), as `make bench` measured it
# on 2026-12-03 (issue 41's baseline; docs/fleet.md): the chart's memory must hold this for every worker.
WORKER_PEAK_MB = 524
CHART = ROOT / "deploy" / "helm" / "ecgw"
RELEASE = "gw"
_EXPR = re.compile(r"[ \t]*\{\{-\s*toYaml\s+(\.Values[\w.]*)\s*\|\s*nindent\s+(\d+)\s*\}\}|"
                   r"\{\{\s*(\.Values[\w.]*|\.Release\.Name)\s*(\|\s*quote\s*)?\}\}")


def _mebibytes(quantity: str) -> float:
    """A Kubernetes memory quantity in MiB (the binary suffixes the chart uses)."""
    match = re.fullmatch(r"(\d+)(Mi|Gi)", quantity)
    assert match is not None, f"memory {quantity!r}: the chart writes Mi or Gi"
    return int(match[1]) * (1024 if match[2] == "Gi" else 1)


def _lookup(values: dict[str, Any], path: str) -> Any:
    if path == ".Release.Name":
        return RELEASE
    value: Any = values
    for key in path.removeprefix(".Values.").split("."):
        value = value[key]
    return value


def render(template: str, values: dict[str, Any]) -> str:
    """Helm's meaning of the forms the templates use: ``{{ .Values.x }}``, ``{{ .Release.Name }}``, ``| quote``,
    and ``{{- toYaml .Values.x | nindent N }}``; anything else is left in place and fails the test."""

    def one(match: re.Match[str]) -> str:
        if match.group(1):
            dumped = yaml.safe_dump(_lookup(values, match.group(1)), sort_keys=False).rstrip("\n")
            pad = " " * int(match.group(2))
            return "\n" + "\n".join(pad + line for line in dumped.splitlines())
        value = _lookup(values, match.group(3))
        return json.dumps(str(value)) if match.group(4) else str(value)

    out = _EXPR.sub(one, template)
    assert "{{" not in out, f"a template form the test renderer does not know: {out[out.index('{{'):][:80]}"
    return out


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict[str, Any]]:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    out = {}
    for path in sorted((CHART / "templates").glob("*.yaml")):
        document = yaml.safe_load(render(path.read_text(), values))
        out[document["kind"]] = document
    return out


def test_the_chart_renders_a_deployment_service_configmap_and_disruption_budget(manifests):
    assert set(manifests) == {"Deployment", "Service", "ConfigMap", "PodDisruptionBudget"}
    assert yaml.safe_load((CHART / "Chart.yaml").read_text())["apiVersion"] == "v2"
    for document in manifests.values():
        assert document["metadata"]["name"].startswith(RELEASE)
        assert document["apiVersion"] in ("v1", "apps/v1", "policy/v1")


KUBERNETES = "1.30.0"  # the oldest Kubernetes the chart's apiVersions (apps/v1, policy/v1) are checked against


def test_every_manifest_is_valid_against_the_kubernetes_schemas(manifests):
    """``kubernetes-validate`` ships the schemas of every Kubernetes release inside the package: no network. Strict:
    a field the schema does not know (a typo such as ``readinessprobe``) fails too."""
    import kubernetes_validate

    for kind, document in manifests.items():
        assert kubernetes_validate.validate(document, KUBERNETES, strict=True), kind
    broken = json.loads(json.dumps(manifests["Deployment"]))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}  # the check is not vacuous
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_the_deployment_probes_terminates_gracefully_and_takes_its_secrets_from_secrets(manifests):
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    spec = manifests["Deployment"]["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert spec["replicas"] == values["replicas"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert pod["securityContext"]["runAsNonRoot"] is True
    # long enough for a stream to finish: the edge's read timeout, the longest a step may wait for its upstream
    from gateway.config.settings import Settings

    assert pod["terminationGracePeriodSeconds"] >= Settings().edge.read_timeout_s
    env = {e["name"]: e for e in container["env"]}
    for secret in ("ECGW_DATABASE_URL", "ECGW_SECRET_KEY"):
        assert "secretKeyRef" in env[secret]["valueFrom"] and "value" not in env[secret]
    # docs/fleet.md: a core per worker, and each worker's measured peak memory
    workers = int(container["args"][container["args"].index("--workers") + 1])
    requests, limits = container["resources"]["requests"], container["resources"]["limits"]
    assert int(requests["cpu"]) == workers
    assert _mebibytes(requests["memory"]) * 2**20 >= workers * WORKER_PEAK_MB * 10**6
    assert _mebibytes(limits["memory"]) >= _mebibytes(requests["memory"]) * 1.25
    pdb = manifests["PodDisruptionBudget"]["spec"]
    assert 0 < pdb["minAvailable"] < spec["replicas"]
    assert pdb["selector"]["matchLabels"] == spec["selector"]["matchLabels"]
    assert manifests["Service"]["spec"]["selector"] == spec["selector"]["matchLabels"]


def test_the_working_directory_where_spills_and_journals_go_outlives_a_killed_container(manifests):
    """The default spill paths are relative to the image's working directory; the journals sit beside them, and a
    container restarted in its pod (after kill -9, out of memory) writes what its predecessor journaled only if it
    finds them: the directory is a volume of the pod, not the container's own layer."""
    workdir = [line.split()[1] for line in (ROOT / "Containerfile").read_text().splitlines()
               if line.startswith("WORKDIR ")][-1]
    pod = manifests["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert workdir in mounted and "emptyDir" in volumes[mounted[workdir]]


def test_the_configmap_and_the_pods_environment_load_as_the_gateway_would(manifests, tmp_path, monkeypatch):
    config = tmp_path / "config.yaml"
    config.write_text(manifests["ConfigMap"]["data"]["config.yaml"])
    (container,) = manifests["Deployment"]["spec"]["template"]["spec"]["containers"]
    for entry in container["env"]:
        monkeypatch.setenv(entry["name"], entry.get("value", "postgresql://u:p@db/ecgw" if "DATABASE" in entry["name"]
                                                   else "ab" * 32))
    settings = load_settings(config)
    assert settings.sessions.store == "redis" and settings.sessions.redis_url == "redis://redis:6379/0"
    assert settings.database_url.startswith("postgresql://") and settings.secrets.key_env == "ECGW_SECRET_KEY"
    assert settings.server.host == "0.0.0.0" and settings.edge.launch == "never"


def _instruction(containerfile: str, name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in containerfile.splitlines() if line.startswith(name + " ")]


def test_the_image_runs_the_same_serve_as_the_tests_non_root_from_the_hashed_lock():
    containerfile = (ROOT / "Containerfile").read_text()
    (entrypoint,) = _instruction(containerfile, "ENTRYPOINT")
    assert json.loads(entrypoint) == ["python", "-m", "gateway.cli", "serve"]  # tests: sys.executable -m gateway.cli serve
    (user,) = _instruction(containerfile, "USER")
    assert user.strip() != "0" and user.strip() != "root"
    installs = [r.split() for r in _instruction(containerfile, "RUN") if "pip install" in r]
    assert any("--require-hashes" in args and "/app/requirements.lock" in args for args in installs)
    lock = (ROOT / "requirements.lock").read_text()
    assert re.search(r"^en-core-web-sm[\w-]*==", lock, re.M)  # the spaCy model is in the image
    assert not re.search(r"^(vllm|torch)==", lock, re.M)  # no vLLM, no weights
