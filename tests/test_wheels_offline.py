"""`make wheels` (tools/device_check/wheels.py): a folder small enough to travel with the repository, and
enough to run levelfield offline beside the frameworks a GPU node already holds (issue 36).

    python -m pytest tests/test_wheels_offline.py

The node is modelled by a fresh virtual environment of this machine's Python that sees the frameworks and
the packages issue 36 counts as preinstalled, with their own dependency closure, and nothing else: the
copies already installed in the environment running the tests are linked into a folder a .pth file adds to
sys.path (installing the frameworks again would take many minutes). pip runs there with no configuration
and a dead proxy, so only the wheel folder can supply what levelfield needs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conftest import REPO, copy_sources

WHEELS_PY = REPO / "tools" / "device_check" / "wheels.py"
NODE_SH = REPO / "tools" / "device_check" / "node.sh"
# The checkout's own wheels.py, whichever levelfield the running environment has installed.
_spec = importlib.util.spec_from_file_location("device_check_wheels", WHEELS_PY)
wheels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wheels)


def _installed(name: str) -> bool:
    try:
        return bool(importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        return False


# What a GPU node already holds (issue 36), written out here: the folder is judged by the issue, not by wheels.py.
PREINSTALLED = {"torch", "tensorflow", "jax", "jaxlib", "numpy", "scipy", "flax", "optax"}
PREINSTALLED |= {"pyyaml", "tabulate", "tqdm", "psutil"}
# TensorFlow's distribution: tensorflow-cpu where the tensorflow extra installs that (x86-64), tensorflow elsewhere.
TENSORFLOW = next((name for name in ("tensorflow", "tensorflow-cpu") if _installed(name)), "tensorflow")
# The node image: those, with their own dependencies, and pip, which node.sh runs.
NODE_IMAGE = tuple(sorted(PREINSTALLED - {"tensorflow"})) + (TENSORFLOW, "pip")
# levelfield's core dependencies that only the wheel folder brings, by distribution and by module.
SHIPPED = {"mlcommons-loadgen": "mlperf_loadgen", "mlperf-logging": "mlperf_logging.mllog"}
SHIPPED |= {"jsonschema": "jsonschema", "cryptography": "cryptography.hazmat.primitives.asymmetric.ed25519"}
FRAMEWORKS = ("pytorch", "tensorflow", "jax")
NODE_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _name(text: str) -> str:
    """A project name, normalised (PEP 503)."""
    return re.sub(r"[-_.]+", "-", text).lower()


def _wheel_name(wheel: Path) -> str:
    return _name(wheel.name.split("-")[0])


def _run_wheels_py(python_version: str, out: Path) -> subprocess.CompletedProcess:
    """As `make wheels` runs it (networked: the download uses this machine's pip configuration)."""
    command = [sys.executable, str(WHEELS_PY), "--python-version", python_version, "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


def _offline_env(**extra: str) -> dict[str, str]:
    """No pip configuration (this machine's points at local wheel stores) and a dead proxy: no index, anywhere."""
    proxies = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV")) and k.lower() not in ("all_proxy", "no_proxy", *proxies)
    }
    env |= {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return env | dict.fromkeys(proxies, "http://127.0.0.1:9") | extra  # nothing listens there: any download fails


@pytest.fixture(scope="module")
def folder_312(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("wheels") / "wheels-py3.12"
    return _run_wheels_py("3.12", out), out


@pytest.fixture(scope="module")
def folder_node(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheels") / f"wheels-py{NODE_PYTHON}"
    done = _run_wheels_py(NODE_PYTHON, out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The sources as they would reach the node (pip builds in the tree it installs: never in this one)."""
    return copy_sources(tmp_path_factory.mktemp("src") / "levelfield")


def test_folder_for_312_travels_and_holds_what_a_node_lacks(folder_312):
    done, out = folder_312
    assert done.returncode == 0, done.stderr[-3000:]
    size_mib = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20
    assert wheels.MAX_MIB <= 50, "issue 36: repository and wheels together under 64 MiB, the wheels under 50 MiB"
    assert 0 < size_mib < wheels.MAX_MIB, f"{out}: {size_mib:.1f} MiB, expected under {wheels.MAX_MIB} MiB"
    shipped = {_wheel_name(w): w for w in out.glob("*.whl")}
    assert not set(shipped) & PREINSTALLED, f"a node holds these already: {sorted(set(shipped) & PREINSTALLED)}"
    assert set(SHIPPED) <= set(shipped), f"missing: {set(SHIPPED) - set(shipped)}"
    assert list(out.glob("mlcommons_loadgen-*-cp312-cp312-*.whl")), sorted(shipped)
    # Compiled wheels are for CPython 3.12 (or its stable ABI), never for the Python that downloaded them.
    for wheel in out.glob("*.whl"):
        python_tag, abi_tag = wheel.stem.split("-")[-3:-1]
        assert python_tag.startswith("py") or python_tag == "cp312" or abi_tag == "abi3", wheel.name
    backend = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    built = {_wheel_name(w) for w in (out / "build").glob("*.whl")}
    assert {_name(Requirement(r).name) for r in backend} <= built, f"build/ holds {sorted(built)}, expected {backend}"


@pytest.mark.parametrize("value", ["3.x", "312", "3.12.1", "python3.12"])
def test_a_python_version_that_is_not_3_n_is_refused(tmp_path, value):
    done = _run_wheels_py(value, tmp_path / "out")
    assert done.returncode == 2, done
    assert len(done.stderr.strip().splitlines()) == 1 and repr(value) in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def _closure(roots: tuple[str, ...]) -> list[importlib.metadata.Distribution]:
    """The installed distributions `roots` need (Requires-Dist, extras followed, markers evaluated here)."""
    installed = {}
    for dist in importlib.metadata.distributions():
        installed.setdefault(_name(dist.metadata["Name"]), dist)
    seen: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(root, ()) for root in roots]
    while todo:
        name, extras = todo.pop()
        if (_name(name), extras) in seen:
            continue
        seen.add((_name(name), extras))
        assert _name(name) in installed, f"{name}: needed by the node image, not installed in {sys.prefix}"
        for line in installed[_name(name)].requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in ("", *extras)):
                todo.append((requirement.name, tuple(sorted(requirement.extras))))
    return [installed[name] for name in sorted({name for name, _ in seen})]


def _node_venv(where: Path) -> Path:
    """A fresh virtual environment holding the node image, without levelfield or its other dependencies."""
    venv, image = where / "venv", where / "node-image"
    base = getattr(sys, "_base_executable", None) or "python3"
    # Without pip of its own: a venv's bundled setuptools would shadow the image's (the image brings pip).
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True, timeout=300)
    image.mkdir()
    for dist in _closure(NODE_IMAGE):
        assert dist.files, f"{dist.metadata['Name']}: no RECORD, its files cannot be found"
        for top in {f.parts[0] for f in dist.files} - {"..", "__pycache__"}:
            if not (image / top).exists():
                (image / top).symlink_to(dist.locate_file(top))
    (site,) = venv.glob("lib/python3.*/site-packages")
    (site / "node-image.pth").write_text(f"{image}\n")
    return venv / "bin" / "python"


def _assert_node_image(python: Path, cwd: Path) -> None:
    """The frameworks and the preinstalled packages are there; levelfield's other dependencies are not."""
    probe = "import importlib.metadata as m, numpy, scipy, yaml, tabulate, tqdm, psutil\n"
    probe += f"print([m.version(d) for d in ('torch', '{TENSORFLOW}', 'jax', 'flax', 'optax')])\n"
    done = subprocess.run([python, "-c", probe], cwd=cwd, env=_offline_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    for module in ("levelfield", *SHIPPED.values()):
        done = subprocess.run([python, "-c", f"import {module}"], cwd=cwd, env=_offline_env(), capture_output=True)
        assert done.returncode != 0, f"{module} importable before the wheels are installed"


def _pip_install(python: Path, folder: Path, checkout: Path) -> None:
    """tools/device_check/node.sh's install, offline, into the environment itself (node.sh: --target a folder)."""
    command = [str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile"]
    command += ["--no-warn-script-location", "--find-links", str(folder / "build")]
    command += [*map(str, sorted(folder.glob("*.whl"))), "."]
    done = subprocess.run(command, cwd=checkout, env=_offline_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _assert_levelfield_works(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    version = subprocess.run([*command, "--version"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("levelfield "), version.stderr[-3000:]
    listed = subprocess.run([*command, "list"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr[-3000:]
    rows = [line.split("|") for line in listed.stdout.splitlines() if line.startswith("| ")]
    runnable = {row[2].strip() for row in rows[1:] if row[4].strip() not in ("no", "")}
    assert runnable == set(FRAMEWORKS), listed.stdout
    registered, ready = re.search(r"(\d+) registered implementations, (\d+) runnable here", listed.stdout).groups()
    assert registered == ready != "0", listed.stdout


def test_folder_installs_offline_into_a_node_like_venv(tmp_path, folder_node, checkout):
    """The acceptance line: `--no-index` into a fresh virtual environment; then the CLI, and every shipped module."""
    python = _node_venv(tmp_path)
    _assert_node_image(python, tmp_path)
    _pip_install(python, folder_node, checkout)
    _assert_levelfield_works([str(python.parent / "levelfield")], tmp_path, _offline_env())
    modules = "; ".join(f"import {module}" for module in SHIPPED.values())
    done = subprocess.run([python, "-c", modules], cwd=tmp_path, env=_offline_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    # Every requirement of levelfield and of the shipped wheels is met by the folder and the node image together.
    checked = subprocess.run([python, "-m", "pip", "check"], env=_offline_env(), capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout[-3000:]


def test_node_sh_installs_into_a_folder_of_its_own(tmp_path, folder_node, checkout):
    """node.sh itself (its --target form, PYTHONPATH and PYTHONSAFEPATH), up to the device check's --help."""
    python = _node_venv(tmp_path)
    site = tmp_path / "levelfield-site"
    env = _offline_env(PYTHON=str(python), LEVELFIELD_NODE_SITE=str(site), LEVELFIELD_CHECK_ARGS="--help")
    done = subprocess.run(
        ["bash", str(NODE_SH), str(folder_node), str(tmp_path / "check")],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "levelfield device-check" in done.stdout, done.stderr[-3000:]
    _assert_node_image(python, tmp_path)  # the node's own environment is left as it was
    node_env = _offline_env(PYTHONPATH=str(site), PYTHONSAFEPATH="1")
    _assert_levelfield_works([str(python), "-m", "levelfield"], checkout, node_env)
