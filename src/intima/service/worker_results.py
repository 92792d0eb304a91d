"""Where a worker's results go (``intima worker --results``): a results repo on the Hub, or a
folder laid out like one, a bundle per finished request in ``bundles/BUNDLE_ID``."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from intima.bundles.publish import BundleError, BundleManifest, publish, write_bundle
from intima.core.errors import IntimaError
from intima.store import Store


def check_results(results: str) -> None:
    """Refuse, before anything is claimed, a folder the bundles cannot go into."""
    if results.startswith("hf://"):
        return
    folder = Path(results)
    if folder.exists() and not folder.is_dir():
        raise IntimaError(f"--results {results} is not a folder")
    if (folder / "manifest.json").exists():
        raise IntimaError(
            f"--results {results} holds one bundle already; give a new folder (each "
            "request's bundle goes in its bundles/ folder)"
        )


def publish_results(store: Store, dest: str, run_ids: list[str]) -> tuple[BundleManifest, str]:
    """Publish the runs' bundle; returns it and where it went (a BundleError fails the
    request with its reason)."""
    if dest.startswith("hf://"):
        manifest = publish(store, dest, run_ids)
        return manifest, f"bundles/{manifest.bundle_id}"
    return _to_folder(store, Path(dest), run_ids)


def _to_folder(store: Store, dest: Path, run_ids: list[str]) -> tuple[BundleManifest, str]:
    """Into ``dest/bundles/BUNDLE_ID``, as in a results repo (``intima import`` and ``board
    build --from`` read both): one bundle at ``dest`` itself left the folder "not empty" for the
    second request, after all its work. The bundle is written beside ``bundles/`` and moved in
    whole, so a half-written one is never read as a bundle."""
    (dest / "bundles").mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=dest))
    try:
        manifest = write_bundle(store, partial / "bundle", run_ids)
        final = dest / "bundles" / manifest.bundle_id
        if final.exists():
            raise BundleError(f"{final} already exists; a bundle is never overwritten")
        (partial / "bundle").rename(final)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return manifest, str(final)
