"""How the Space installs intima by default: a wheel of this checkout, built into the Space
folder, which ``requirements.txt`` names by its path there.

``intima==<version>`` (the default before) only builds once that version is on PyPI, and the
version a checkout carries usually is not: the Space failed to build. A wheel of the code that
wrote the folder always matches it. When intima runs from an installed package rather than a
checkout, there is no source to build from, and the package came from an index: the pin it
was installed by is the requirement (:data:`~intima.leaderboard.space.DEFAULT_REQUIREMENT`).

The wheel is built from a clean copy of the checkout (its ``pyproject.toml``, ``README.md``,
licence files and ``src/``), so nothing is written into the checkout and no stale ``build/``
folder of an earlier build can carry files the checkout no longer has.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from intima.core.errors import IntimaError

#: The wheels this module writes into a Space folder (an earlier one is replaced).
WHEEL_GLOB: Final = "intima-*.whl"
_LICENCE_GLOBS: Final = ("LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*")


class WheelError(IntimaError):
    """The checkout's wheel cannot be built."""


def checkout() -> Path | None:
    """The source checkout this intima runs from (``src/intima`` under a ``pyproject.toml``
    that names the project), or None for an installed package."""
    import intima

    root = Path(intima.__file__).resolve().parents[2]
    project = root / "pyproject.toml"
    try:
        text = project.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "intima"' in text and (root / "src" / "intima").is_dir() else None


def wheel_name() -> str:
    """The file name of this intima's wheel (pure Python: one wheel for every platform)."""
    from intima.core.version import __version__

    return f"intima-{__version__}-py3-none-any.whl"


def build_wheel(root: Path, into: Path) -> Path:
    """Build the wheel of the checkout at ``root`` into the folder ``into``; its path.

    First with the build tools this environment has (no network); if that fails (setuptools
    missing or too old), with pip's isolated build, which fetches them from the index."""
    with tempfile.TemporaryDirectory(prefix="intima-wheel-") as tmp:
        source = Path(tmp) / "intima"
        _copy_source(root, source)
        base = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(into)]
        for isolation in (["--no-build-isolation"], []):
            # an argument list of our own (no shell); the path is a folder this made
            done = subprocess.run([*base, *isolation, str(source)], capture_output=True, text=True)  # noqa: S603
            if done.returncode == 0:
                break
    wheel = into / wheel_name()
    if done.returncode != 0 or not wheel.is_file():
        last = (done.stderr.strip().splitlines() or [f"no {wheel.name} was written"])[-1][:300]
        raise WheelError(
            f"cannot build a wheel of the checkout {root} ({last}); the Space folder has no "
            "intima to install: run again with --force and --requirement (a pip line for intima)"
        )
    return wheel


def _copy_source(root: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, dest / name)
    for pattern in _LICENCE_GLOBS:
        for path in root.glob(pattern):
            if path.is_file():
                shutil.copy2(path, dest / path.name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(root / "src", dest / "src", ignore=ignore)


def place_wheel(wheel: Path, space: Path) -> Path:
    """Copy ``wheel`` into the Space folder, replacing an earlier intima wheel there."""
    for old in space.glob(WHEEL_GLOB):
        if old.name != wheel.name:
            old.unlink()
    return Path(shutil.copy2(wheel, space / wheel.name))
