"""Reading a results repo on the Hub (``hf://datasets/OWNER/NAME``) bundle by bundle: for the
Space (:mod:`intima.leaderboard.space`) and ``intima board build --from``.

Each bundle (every ``bundles/*/``, and the repo's root if it holds a manifest.json too) is
downloaded, copied out of the Hub cache (whose files are links into its blob store) and
checked on its own with :func:`~intima.bundles.merge.load_bundle`, which verifies its
manifest hashes, protocol versions and every row. Each bundle is then imported alone into a
scratch store and read back as the board reads it (:func:`probe`): a bundle whose rows pass
every check but still cannot be shown is refused too. A bundle that fails is refused with the
reason and the others still go in, so one tampered or damaged bundle cannot hide the rest, and
it is named wherever the results are shown. Bundles that hold different rows under the same
ids (a forged copy of a real bundle, say) are all refused, each naming the others: which one
sorts or arrives first decides nothing (:mod:`intima.bundles.identity`). Only signed bundles
of the publishers in the board's trust set are taken (:mod:`intima.bundles.trust`); any other
is refused and named, so it changes nothing a trusted publisher published. A bundle holding a
random sample that is not what its seed and design give, over every bundle's rows, is refused
too (:mod:`intima.bundles.membership`). Every scratch file is removed, whatever happens.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from intima.core.errors import IntimaError
from intima.store import Store

if TYPE_CHECKING:
    from intima.bundles.merge import Loaded
    from intima.bundles.trust import TrustSet

#: Every bundle's files: ``bundles/*/`` (``intima publish``), and a bundle at the repo's root.
BUNDLE_PATTERNS = [
    "bundles/*/manifest.json", "bundles/*/*.jsonl", "bundles/*/*.parquet",
    "manifest.json", "*.jsonl", "*.parquet",
]  # fmt: skip
#: How a bundle at the root of the results repo is named where refused bundles are listed.
ROOT = "(repo root)"
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}"
_DATASET_URL = re.compile(rf"^hf://datasets/{_NAME}/{_NAME}$")


class ResultsRepoError(IntimaError):
    """The results repo is misnamed or cannot be read."""


def dataset_url(url: str, what: str) -> str:
    """``url`` if it names a dataset repo (``hf://datasets/OWNER/NAME``); else an error."""
    if not _DATASET_URL.match(url) or ".." in url:
        raise ResultsRepoError(f"{what} must be hf://datasets/OWNER/NAME, not {url[:200]!r}")
    return url


@dataclass
class Imported:
    """One read of the results repo: its commit, the bundles imported and those refused."""

    commit: str
    imported: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def head_commit(url: str) -> str:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    repo_id = dataset_url(url, "the results repo")[len("hf://datasets/") :]
    try:
        return str(HfApi().repo_info(repo_id, repo_type="dataset").sha)
    except RepositoryNotFoundError as exc:
        raise ResultsRepoError(
            f"the results repo {url} does not exist or is private; create it, or set HF_TOKEN "
            "to a token that can read it"
        ) from exc
    except Exception as exc:  # huggingface_hub lets httpx and OS errors through
        raise ResultsRepoError(
            f"could not reach the results repo {url} ({type(exc).__name__}); check the network "
            "and HF_ENDPOINT"
        ) from exc


def import_results(
    store: Store,
    url: str,
    workdir: Path,
    commit: str | None = None,
    trust: TrustSet | None = None,
) -> Imported:
    """Import every bundle of the results repo at ``commit`` (default: its head) into ``store``:
    a bundle that fails verification, or whose publisher is not in ``trust`` (default: this
    machine's publisher alone), is refused (with the reason) and the others still go in;
    bundles that hold different rows under the same ids are all refused, each naming the
    others (:mod:`intima.bundles.identity`): their names and order decide nothing."""
    from intima.bundles.identity import Ledger
    from intima.bundles.membership import unseeded
    from intima.bundles.merge import load_bundle, merge_bundle
    from intima.bundles.trust import default_trust
    from intima.dataset.hub import snapshot

    trust = default_trust() if trust is None else trust
    commit = commit or head_commit(url)
    repo_id = url[len("hf://datasets/") :]
    folder = snapshot(
        repo_id, repo_type="dataset", revision=commit, allow_patterns=BUNDLE_PATTERNS,
        error=ResultsRepoError, hint="check the results repo (bundles from `intima publish`)",
    )  # fmt: skip
    done = Imported(commit)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        shown: list[tuple[str, Loaded]] = []
        for n, (name, bundle) in enumerate(_bundles(folder)):
            # A local copy of the bundle's own files (the snapshot's are links into the cache).
            copy = Path(tmp) / str(n) / "bundle"
            try:
                copy.mkdir(parents=True)
                for f in bundle.iterdir():
                    if f.is_file():
                        shutil.copyfile(f, copy / f.name)
                shown.append((name, probe(copy, Path(tmp) / "probe.db", trust, name)))
            except Exception as exc:  # whatever one bundle does, the others still go in
                done.refused.append((name, _said(exc, copy, name, tmp)))
        ledger = Ledger(store)
        for name, loaded in shown:
            ledger.add(name, loaded.data, loaded.fingerprint)
        conflicts = ledger.refused()
        # A hand-picked sample (members not its seed's first N) is refused too.
        for name, why in unseeded(store, [(n, b.data) for n, b in shown]).items():
            conflicts.setdefault(name, why)
        for name, loaded in shown:
            try:
                if name in conflicts:
                    raise ResultsRepoError(conflicts[name])
                merge_bundle(store, load_bundle(store, loaded.folder, trust=trust), url)
            except Exception as exc:
                done.refused.append((name, _said(exc, loaded.folder, name, tmp)))
                continue
            done.imported.append(name)
    return done


def _bundles(folder: Path) -> list[tuple[str, Path]]:
    """(name, folder) of every bundle in the snapshot: ``bundles/*/``, and the repo's root if
    it holds a manifest.json too (never the one instead of the others)."""
    root = [(ROOT, folder)] if (folder / "manifest.json").exists() else []
    return [
        *root,
        *((m.parent.name, m.parent) for m in sorted(folder.glob("bundles/*/manifest.json"))),
    ]


def _said(exc: Exception, copy: Path, name: str, tmp: str) -> str:
    """Why a bundle is refused, in the words of the results repo (no scratch paths)."""
    reason = _reason(exc).replace(str(copy), name).replace(tmp, "")
    return reason.removeprefix(f"{name}: ")[:600]


def _reason(exc: Exception) -> str:
    if isinstance(exc, IntimaError | OSError | ValueError):
        return str(exc)
    return f"it could not be imported ({type(exc).__name__})"


def probe(
    bundle: Path, scratch: Path, trust: TrustSet | None = None, name: str | None = None
) -> Loaded:
    """Import ``bundle`` alone into a new store at ``scratch`` and read it back as the board
    does; its checked rows, or a ResultsRepoError naming what failed if it cannot be shown.
    ``scratch`` is removed."""
    from intima.bundles.merge import load_bundle, merge_bundle
    from intima.results.conversations import load_conversations
    from intima.results.data import load_board
    from intima.results.table import score_table

    try:
        with Store.open(scratch) as store:
            loaded = load_bundle(store, bundle, trust=trust, name=name)
            merge_bundle(store, loaded, str(bundle))
            try:
                data = load_board(store)
                score_table(data.infos(), data.rating_sets, bootstrap=2, seed=0)
                load_conversations(store)
            except Exception as exc:  # any reader's failure: this bundle is not shown
                raise ResultsRepoError(
                    f"its rows pass the import checks but cannot be shown ({type(exc).__name__}"
                    f": {str(exc)[:200]})"
                ) from exc
    finally:
        remove_store(scratch)
    return loaded


def remove_store(path: Path) -> None:
    """A store file and the journal files SQLite may leave beside it."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
