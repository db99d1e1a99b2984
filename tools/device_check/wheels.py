"""`make wheels`: levelfield's dependencies that a GPU node lacks, as wheels for the node's Python.

    python3 tools/device_check/wheels.py --python-version 3.12 --out build/wheels-py3.12

Many GPU nodes have no package index: the frameworks come preinstalled in an image, and whatever else
levelfield needs must arrive as files. This downloads (on a networked machine, with pip's own resolver)
the wheels of levelfield's core dependencies, read from pyproject.toml, and of pytest (the check's
equivalence step) for CPython at that version on manylinux x86-64, drops those such a node already holds
(PREINSTALLED), and puts the build backend that installing levelfield's own checkout needs into `build/`
beside them. tools/device_check/node.sh installs
both with `--no-index`. The folder must stay under MAX_MIB so that it travels with the repository.

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_MIB = 50
# What a GPU node of the kind the device check targets already holds besides the frameworks (issue 36:
# numpy, scipy, flax, optax, pyyaml, tabulate, tqdm, psutil), and the frameworks themselves: never shipped,
# whatever versions the node has are used and recorded.
PREINSTALLED = {
    "numpy",
    "scipy",
    "flax",
    "optax",
    "pyyaml",
    "tabulate",
    "tqdm",
    "psutil",
    "torch",
    "jax",
    "jaxlib",
    "tensorflow",
}
# The device check's equivalence step runs the tests with pytest, which a node may lack (pyproject's dev extra).
CHECK_NEEDS = ("pytest>=8",)
BUILD_BACKEND = ("setuptools>=69", "wheel")  # pyproject.toml's [build-system] requires, for `pip install .`
# pip matches a platform tag exactly: the manylinux levels wheels of these packages are published for.
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64")


def core_dependencies(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    return tomllib.loads(pyproject.read_text())["project"]["dependencies"]


def distribution_name(wheel: Path) -> str:
    """A wheel file's project name, normalised (PEP 503): "PyYAML-6.0-..." -> "pyyaml"."""
    return re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()


def download(requirements: list[str], python_version: str, folder: Path) -> None:
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", str(folder)]
    command += ["--python-version", python_version, "--implementation", "cp", *platforms, *requirements]
    subprocess.run(command, check=True)


def folder_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*.whl")) / 2**20


def build_folder(python_version: str, out: Path) -> list[str]:
    """Fill `out` (emptied first); the wheels kept, by file name."""
    if out.exists():
        shutil.rmtree(out)
    (out / "build").mkdir(parents=True)
    download(core_dependencies() + list(CHECK_NEEDS), python_version, out)
    for wheel in out.glob("*.whl"):
        if distribution_name(wheel) in PREINSTALLED:
            wheel.unlink()
    download(list(BUILD_BACKEND), python_version, out / "build")
    return sorted(str(w.relative_to(out)) for w in out.rglob("*.whl"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Download the wheels a GPU node without a package index needs to run levelfield.",
        epilog="example:\n  python3 tools/device_check/wheels.py --python-version 3.12 --out build/wheels-py3.12",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--python-version", required=True, help="the node's CPython, e.g. 3.12")
    parser.add_argument("--out", type=Path, required=True, help="the folder to fill (replaced)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"3\.\d+", args.python_version):
        print(f"wheels: --python-version {args.python_version!r}: expected 3.N, e.g. 3.12", file=sys.stderr)
        return 2
    try:
        wheels = build_folder(args.python_version, args.out)
    except subprocess.CalledProcessError as e:
        print(f"wheels: pip download failed (exit {e.returncode}); see its message above", file=sys.stderr)
        return 2
    size = folder_mib(args.out)
    print(f"{len(wheels)} wheels, {size:.1f} MiB in {args.out}:\n  " + "\n  ".join(wheels))
    if size > MAX_MIB:
        print(f"wheels: {args.out}: {size:.1f} MiB, expected at most {MAX_MIB} MiB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
