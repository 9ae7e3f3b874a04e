"""docker/: no Docker engine runs here, so the images and the compose file are checked against the
repository: what they copy exists, they install pyproject's Python, extras and torch, and the compose
cluster's training command composes and fits the cluster it starts."""
from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from launch.training import build
from tests.launch.configs import train_config

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
DOCKERFILES = ["Dockerfile", "Dockerfile.cuda"]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def instructions(name: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per line, comments and line continuations folded away."""
    text = re.sub(r"\\\n\s*", " ", (DOCKER / name).read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def runs(name: str) -> list[str]:
    return [args for op, args in instructions(name) if op == "RUN"]


def pinned_torch() -> str:
    torch = next(Requirement(d) for d in PYPROJECT["dependencies"] if Requirement(d).name == "torch")
    (spec,) = torch.specifier
    assert spec.operator == "=="
    return spec.version


@pytest.mark.parametrize("name", DOCKERFILES)
def test_what_the_image_copies_exists_and_is_not_docker_ignored(name):
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    copies = [shlex.split(args) for op, args in instructions(name) if op == "COPY"]
    assert copies
    for *sources, _ in copies:
        for source in sources:
            assert (ROOT / source).exists(), source
            assert source not in ignored, source
    copied = {source for *sources, _ in copies for source in sources}
    for package in ("ludo_env", "policies", "launch", "conf", "pyproject.toml", "README.md"):
        assert package in copied  # the editable install and conf/ lookup need every one of them
    assert "benchmarks/policies" in copied  # champion:<variant> plays a shipped policy (policies.champions)


@pytest.mark.parametrize("name", DOCKERFILES)
def test_the_base_image_is_a_pinned_python_that_pyproject_allows(name):
    base = next(args for op, args in instructions(name) if op == "FROM")
    version = re.fullmatch(r"python:(\d+\.\d+\.\d+)-slim-\w+", base).group(1)
    assert version in SpecifierSet(PYPROJECT["requires-python"])


@pytest.mark.parametrize("name", DOCKERFILES)
def test_the_extras_installed_are_pyprojects(name):
    installs = [args for args in runs(name) if "pip install" in args and "-e" in args]
    assert len(installs) == 1
    extras = re.search(r"\.\[([\w,-]+)\]", installs[0]).group(1).split(",")
    assert set(extras) <= set(PYPROJECT["optional-dependencies"])
    assert "cluster" in extras  # compose starts Ray nodes from these images: `ray start` needs ray[default]


@pytest.mark.parametrize("name", DOCKERFILES)
def test_the_project_installs_from_the_lock_it_copies(name):
    install = next(args for args in runs(name) if "pip install" in args and "-e" in args)
    assert shlex.split(install)[:4] == ["pip", "install", "-c", "requirements.lock"]
    copies = [args.split() for op, args in instructions(name) if op == "COPY"]
    assert any("requirements.lock" in sources for sources in copies)


def test_torch_is_the_version_pyproject_pins_cpu_build_in_one_image_cuda_in_the_other():
    version = pinned_torch()
    cpu = [args for args in runs("Dockerfile") if "torch" in args]
    cuda = [args for args in runs("Dockerfile.cuda") if "torch" in args]
    assert len(cpu) == len(cuda) == 1
    assert f"torch=={version}" in cpu[0] and "--index-url https://download.pytorch.org/whl/cpu" in cpu[0]
    # PyPI's Linux wheel is the CUDA build; any other index here would change that.
    assert shlex.split(cuda[0]) == ["pip", "install", f"torch=={version}"]
    for name in DOCKERFILES:  # torch before the project, so pip keeps this build
        steps = runs(name)
        assert steps.index(next(s for s in steps if "torch" in s)) < steps.index(
            next(s for s in steps if "-e" in s))


@pytest.mark.parametrize("name", DOCKERFILES)
def test_the_default_command_trains_an_experiment_that_exists(name):
    cmd = next(args for op, args in instructions(name) if op == "CMD")
    assert yaml.safe_load(cmd) == ["python", "launch/train.py", "+exp=dqn_selfplay"]
    assert (ROOT / "conf" / "exp" / "dqn_selfplay.yaml").is_file()


# ---------------------------------------------------------------- compose.yaml
def compose_file() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def with_defaults(text: str) -> str:
    """Compose's interpolation with nothing set: ${VAR:-default} -> default, $$ -> $."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text).replace("$$", "$")


def test_compose_parses_and_every_service_runs_an_image_built_from_a_dockerfile_here():
    services = compose_file()["services"]
    assert {"ray-head", "ray-worker", "train"} <= set(services)
    for name, service in services.items():
        context = (DOCKER / service["build"]["context"]).resolve()
        assert context == ROOT, name
        assert (context / service["build"]["dockerfile"]).is_file(), name
        assert service["environment"]["RAY_AUTH_MODE"] == "token"


def test_workers_and_the_training_job_join_the_head_on_its_port():
    services = compose_file()["services"]
    port = re.search(r"--port=(\d+)", services["ray-head"]["command"]).group(1)
    assert f"--address=ray-head:{port}" in services["ray-worker"]["command"]
    assert f"resources.ray_address=ray-head:{port}" in " ".join(services["train"]["command"])


def test_the_training_command_composes_and_fits_the_cluster_compose_starts():
    services = compose_file()["services"]
    script = with_defaults(services["train"]["command"][-1])
    steps = [shlex.split(step) for step in script.split("&&")]
    assert steps[0][:2] == ["ray", "start"]
    assert "--num-cpus=0" in steps[0]  # the driver's node hosts no runners
    wait_step = steps[1]
    assert wait_step[:3] == ["python", "launch/wait_for_nodes.py", "address=ray-head:6379"]
    assert (ROOT / wait_step[1]).is_file()
    workers = int(with_defaults(str(services["ray-worker"]["deploy"]["replicas"])))
    a, b = map(int, re.search(r"\$\(\( (\d+) \+ (\d+) \)\)", script).groups())
    assert a + b == 1 + workers + 1  # it waits for the head, every worker and its own node
    train = steps[2]
    assert train[:3] == ["exec", "python", "launch/train.py"]
    cfg = train_config(*train[3:])
    cpus = [int(re.search(r"--num-cpus=(\d+)", with_defaults(services[s]["command"])).group(1))
            for s in ("ray-head", "ray-worker")]
    build.check_resources(cfg, {"CPU": cpus[0] + workers * cpus[1]})  # what Ray reports once all joined
