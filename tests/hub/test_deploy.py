"""The Zero to JupyterHub recipe (deploy/jupyterhub/), checked as far as a machine
without Kubernetes or Docker allows; deploy/jupyterhub/README.md says what is not.

The chart's values schema is published only with the chart (not on PyPI or npm),
so every key used is checked against the keys documented in the chart's
configuration reference (z2jh.jupyter.org, "Configuration Reference", chart 4.x),
listed below.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hubsetup import hubenv

DEPLOY = hubenv.ROOT / "deploy" / "jupyterhub"

# Documented chart keys (prefixes); anything under hub.config.<Class> is a
# traitlets setting passed to JupyterHub as is, so only the class is listed.
DOCUMENTED = {
    "hub.config.JupyterHub.authenticator_class",
    "hub.config.Authenticator.admin_users",
    "hub.config.Authenticator.allow_all",
    "hub.loadRoles",
    "hub.extraConfig",
    "singleuser.image.name",
    "singleuser.image.tag",
    "singleuser.image.pullPolicy",
    "singleuser.defaultUrl",
    "singleuser.memory.guarantee",
    "singleuser.memory.limit",
    "singleuser.cpu.guarantee",
    "singleuser.cpu.limit",
    "singleuser.storage.type",
    "singleuser.storage.capacity",
    "singleuser.storage.extraVolumes",
    "singleuser.storage.extraVolumeMounts",
    "singleuser.extraFiles",
    "singleuser.fsGid",
    "cull.enabled",
    "cull.timeout",
    "cull.every",
    "cull.maxAge",
    "cull.users",
    "scheduling.userScheduler.enabled",
    "scheduling.podPriority.enabled",
    "scheduling.userPlaceholder.enabled",
    "scheduling.userPlaceholder.replicas",
}
# Keys whose values are free-form (lists, maps of names) in the schema.
FREE_FORM = (
    "hub.loadRoles",
    "hub.extraConfig",
    "singleuser.extraFiles",
    "singleuser.storage.extra",
)


@pytest.fixture(scope="module")
def config():
    return yaml.safe_load((DEPLOY / "config.yaml").read_text())


def leaves(tree, prefix=""):
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and not path.startswith(FREE_FORM):
            yield from leaves(value, path + ".")
        else:
            yield path


def test_every_key_is_a_documented_chart_key(config):
    used = set(leaves(config))
    assert used <= DOCUMENTED, f"undocumented keys: {sorted(used - DOCUMENTED)}"


def _bytes(size: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([KMG])", size).groups()
    return int(number) * 1000 ** "KMG".index(unit) * 1000


def test_resources_and_culling(config):
    user = config["singleuser"]
    assert _bytes(user["memory"]["guarantee"]) <= _bytes(user["memory"]["limit"])
    # The heaviest lesson kernel peaks near 300 MB (make bench); the guarantee covers it.
    assert _bytes(user["memory"]["guarantee"]) >= 300 * 10**6 + 150 * 10**6
    assert 0 < user["cpu"]["guarantee"] <= user["cpu"]["limit"]
    assert config["cull"]["enabled"] and config["cull"]["timeout"] > 0


def test_exchange_volume_is_read_write_many_and_nbgrader_uses_it(config):
    claim = yaml.safe_load((DEPLOY / "exchange-pvc.yaml").read_text())
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    storage = config["singleuser"]["storage"]
    volume = storage["extraVolumes"][0]
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    mount = storage["extraVolumeMounts"][0]
    assert mount["name"] == volume["name"]
    source = config["singleuser"]["extraFiles"]["nbgrader-config"]["stringData"]
    compile(source, "nbgrader_config.py", "exec")
    assert f'c.Exchange.root = "{mount["mountPath"]}"' in source


def test_extra_config_is_python(config):
    for name, source in config["hub"]["extraConfig"].items():
        compile(source, name, "exec")


def test_instructor_role_names_an_admin(config):
    admins = set(config["hub"]["config"]["Authenticator"]["admin_users"])
    for role in config["hub"]["loadRoles"].values():
        assert set(role["users"]) <= admins and role["scopes"]


def dockerfile_instructions():
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            yield word.upper(), rest.strip()


def test_dockerfile_copies_only_files_of_the_repository():
    instructions = list(dockerfile_instructions())
    assert instructions[0][0] == "FROM"
    for word, rest in instructions:
        assert word in {"FROM", "ENV", "RUN", "COPY", "WORKDIR", "EXPOSE", "CMD"}, word
        if word == "COPY":
            *sources, _ = shlex.split(rest)
            for source in sources:
                assert (hubenv.ROOT / source).exists(), f"COPY {source}: no such file"


def test_dockerfile_installs_the_set_make_test_hub_tests(tmp_path):
    """The image's constraints step gives exactly hubenv's constraints."""
    run = next(r for w, r in dockerfile_instructions() if w == "RUN" and "hub-constraints" in r)
    step = re.search(r'python -c "(.*?)" > hub-constraints.txt', run).group(1)
    (tmp_path / "constraints.txt").write_text((hubenv.ROOT / "constraints.txt").read_text())
    (tmp_path / "hub-requirements.txt").write_text(hubenv.REQUIREMENTS.read_text())
    out = subprocess.run(
        [sys.executable, "-c", step.replace('\\"', '"')],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == hubenv.constraints_for_hub()
    assert all(
        "==" in line for line in hubenv.REQUIREMENTS.read_text().splitlines() if line[:1].isalpha()
    )


def test_repo2docker_builds_the_dockerfile_from_the_repository_root(tmp_path):
    """repo2docker, which BinderHub and many hubs build their images with, accepts the
    image's build file as it is, with the repository's root as its build context (the
    paths its COPY lines name). Checked without Docker: --no-build prints the plan."""
    repo2docker = Path(sys.executable).parent / "jupyter-repo2docker"
    if not repo2docker.exists():
        pytest.fail("jupyter-repo2docker is missing: run `make env` (the `binder` extra)")
    files = subprocess.run(
        ["git", "ls-files"], cwd=hubenv.ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    copy = tmp_path / "attnlab"
    # Without binder/ (Binder's own recipe), with the hub's Dockerfile at the root.
    for name in files:
        if not name.startswith("binder/") and (hubenv.ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(hubenv.ROOT / name, copy / name)
    shutil.copy2(DEPLOY / "Dockerfile", copy / "Dockerfile")
    result = subprocess.run(
        [str(repo2docker), "--no-build", "--no-run", "--debug", str(copy)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    plan = result.stdout + result.stderr
    instructions = [
        line
        for line in (DEPLOY / "Dockerfile").read_text().splitlines()
        if line.startswith(("FROM", "COPY", "CMD", "WORKDIR"))
    ]
    assert instructions
    for line in instructions:
        assert line in plan, line
