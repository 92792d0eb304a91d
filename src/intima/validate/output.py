"""Where ``intima validate`` writes its files: a new or empty folder, or one holding nothing but
an earlier ``intima validate`` report (replaced, as ``board build`` replaces its own build);
never a folder of other files and never through a symbolic link."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from intima.core.errors import ConfigError

#: Every file validate writes into its folder.
REPORT_FILES: Final = frozenset({"report.json", "roc.png"})
#: Keys of every report.json validate writes (how an earlier report is recognised).
_REPORT_KEYS: Final = frozenset({"set_name", "set_sha256", "scorers"})


def check_out_dir(out: Path) -> None:
    """Refuse, in one line, a folder validate must not write into."""
    if out.is_symlink():
        raise ConfigError(
            f"--out {out} is a symlink; validate never writes through a link: give the real folder"
        )
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; validate writes into a folder")
    present = sorted(out.iterdir()) if out.is_dir() else []
    if not present:
        return
    links = [p.name for p in present if p.is_symlink()]
    if links:
        raise ConfigError(
            f"--out {out}: {links[0]} is a symlink; validate never writes through a link "
            "(choose an empty or new folder)"
        )
    others = [p.name for p in present if p.name not in REPORT_FILES]
    if others or not _earlier_report(out / "report.json"):
        held = ", ".join(others[:3]) or "a report.json intima validate did not write"
        raise ConfigError(
            f"--out {out} is not empty and not an earlier `intima validate` report (it holds "
            f"{held}); choose an empty or new folder"
        )


def _earlier_report(path: Path) -> bool:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(document, dict) and _REPORT_KEYS <= document.keys()


def write_files(out: Path, files: Mapping[str, bytes]) -> list[str]:
    """Write ``files`` (each name in :data:`REPORT_FILES`) into ``out``, checked again just
    before; each file goes to a new temporary file that then replaces the name (a link in its
    place would be replaced, never followed). An earlier report's other files are removed."""
    check_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in files.items():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=out)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, out / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(str(out / name))
    for stale in REPORT_FILES - set(files):
        (out / stale).unlink(missing_ok=True)
    return written
