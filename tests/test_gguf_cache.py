"""The cache of converted GGUF files (``intima.providers.gguf_cache``), on real folders.

The conversion here is a stand-in that writes two small files (the real one, SmolLM2 through
transformers, is tested in test_models_transformers.py): what is under test is when an entry is
read, written, rebuilt or left alone, which does not depend on what the files hold.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from intima.providers import gguf_cache

SHA_A, SHA_B = "a" * 64, "b" * 64
VERSIONS = {"torch": "2.13.0", "transformers": "5.24.0", "gguf": "0.17.1"}


class Converter:
    """convert/read/write for :func:`gguf_cache.load_or_convert`, counting conversions."""

    def __init__(self, gguf: Path, barrier: threading.Barrier | None = None) -> None:
        self.gguf, self.barrier, self.conversions = gguf, barrier, 0

    def convert(self) -> dict[str, str]:
        self.conversions += 1
        if self.barrier:  # both converters are converting at once from here on
            self.barrier.wait(timeout=30)
        return {"weights": "w:" + self.gguf.read_text(), "tokenizer": "t:" + self.gguf.read_text()}

    def read(self, folder: Path) -> dict[str, str]:
        weights = (folder / "weights.bin").read_text()
        if not weights.startswith("w:"):
            raise ValueError("not weights")
        return {"weights": weights, "tokenizer": json.loads((folder / "tok.json").read_text())}

    @staticmethod
    def write(model: dict[str, str], folder: Path) -> None:
        (folder / "weights.bin").write_text(model["weights"])
        (folder / "tok.json").write_text(json.dumps(model["tokenizer"]))

    def load(self) -> dict[str, str]:
        return gguf_cache.load_or_convert(self.gguf, self.convert, self.read, self.write)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INTIMA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "gguf"


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_text("model one")
    return path


def _entry(cache: Path) -> Path:
    [entry] = [p for p in cache.iterdir() if not p.name.startswith(".")]
    return entry


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if p.name.startswith("."))


EXPECTED = {"weights": "w:model one", "tokenizer": "t:model one"}


def test_the_first_load_converts_and_writes_the_second_reads(cache: Path, gguf: Path) -> None:
    conv = Converter(gguf)
    assert conv.load() == EXPECTED and conv.conversions == 1
    entry = _entry(cache)
    assert sorted(p.name for p in entry.iterdir()) == ["intima-cache.json", "tok.json",
                                                       "weights.bin"]  # fmt: skip
    assert entry.name.startswith(gguf_cache.file_sha256(gguf)[:16])
    assert conv.load() == EXPECTED and conv.conversions == 1  # read, not converted
    assert _leftovers(cache) == []


@pytest.mark.parametrize(
    "damage",
    ["truncate", "remove", "no manifest", "garbage manifest", "rewritten", "unreadable"],
)
def test_a_damaged_entry_is_converted_again_and_replaced(
    cache: Path, gguf: Path, damage: str
) -> None:
    conv = Converter(gguf)
    conv.load()
    entry = _entry(cache)
    weights = entry / "weights.bin"
    if damage == "truncate":
        weights.write_bytes(weights.read_bytes()[:3])
    elif damage == "remove":
        (entry / "tok.json").unlink()
    elif damage == "no manifest":
        (entry / "intima-cache.json").unlink()
    elif damage == "garbage manifest":
        (entry / "intima-cache.json").write_text("{not json")
    elif damage == "rewritten":  # same size, other bytes, written a second later
        then = weights.stat().st_mtime_ns
        weights.write_text("x" * len(weights.read_text()))
        os.utime(weights, ns=(then + 10**9, then + 10**9))
    else:  # a file the reader rejects although the manifest matches it
        manifest = json.loads((entry / "intima-cache.json").read_text())
        weights.write_text("x" * len(weights.read_text()))
        manifest["files"]["weights.bin"]["mtime_ns"] = weights.stat().st_mtime_ns
        (entry / "intima-cache.json").write_text(json.dumps(manifest))
    assert conv.load() == EXPECTED and conv.conversions == 2
    assert conv.load() == EXPECTED and conv.conversions == 2  # the new entry is whole
    assert _entry(cache) == entry and _leftovers(cache) == []


def test_two_processes_converting_at_once_leave_one_whole_entry(cache: Path, gguf: Path) -> None:
    barrier = threading.Barrier(2)
    convs = [Converter(gguf, barrier), Converter(gguf, barrier)]
    results: list[dict[str, str]] = []
    threads = [threading.Thread(target=lambda c=c: results.append(c.load())) for c in convs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == [EXPECTED, EXPECTED]
    assert [c.conversions for c in convs] == [1, 1]
    entry = _entry(cache)
    assert gguf_cache.intact(entry, entry.name) and _leftovers(cache) == []
    late = Converter(gguf)
    assert late.load() == EXPECTED and late.conversions == 0


def test_the_loser_of_a_race_to_rename_discards_its_copy(
    cache: Path, gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process installs its entry between our check and our rename."""
    winner = Converter(gguf)
    winner.load()
    entry = _entry(cache)
    aside = cache / "winner"
    entry.rename(aside)
    real_rename = Path.rename

    def rename(self: Path, target: Path) -> Path:
        if Path(target) == entry and not entry.exists():
            real_rename(aside, entry)  # the other process finishes first
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", rename)
    loser = Converter(gguf)
    assert loser.load() == EXPECTED and loser.conversions == 1
    assert gguf_cache.intact(entry, entry.name) and _leftovers(cache) == []


def test_another_gguf_never_reads_this_ones_entry(cache: Path, gguf: Path) -> None:
    Converter(gguf).load()
    other = gguf.with_name("other.gguf")
    other.write_text("model two")
    conv = Converter(other)
    assert conv.load() == {"weights": "w:model two", "tokenizer": "t:model two"}
    assert conv.conversions == 1
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 2


def test_the_key_changes_with_the_file_and_the_converters_versions() -> None:
    key = gguf_cache.cache_key(SHA_A, VERSIONS)
    assert key == gguf_cache.cache_key(SHA_A, dict(reversed(VERSIONS.items())))
    assert gguf_cache.cache_key(SHA_B, VERSIONS) != key
    for name in VERSIONS:
        assert gguf_cache.cache_key(SHA_A, {**VERSIONS, name: "9.9"}) != key
    assert set(gguf_cache.converter_versions()) == {"torch", "transformers", "gguf"}


def test_the_cache_folder_follows_intima_cache_dir_else_xdg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTIMA_CACHE_DIR", str(tmp_path / "mine"))
    assert gguf_cache.cache_root() == tmp_path / "mine" / "gguf"
    monkeypatch.delenv("INTIMA_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert gguf_cache.cache_root() == tmp_path / "xdg" / "intima" / "gguf"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert gguf_cache.cache_root() == tmp_path / "home" / ".cache" / "intima" / "gguf"


def test_a_cache_that_cannot_be_written_is_one_warning_and_the_model_still_loads(
    tmp_path: Path, gguf: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("INTIMA_CACHE_DIR", str(blocker))
    conv = Converter(gguf)
    assert conv.load() == EXPECTED and conv.load() == EXPECTED and conv.conversions == 2
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 2 and warnings[0].startswith(
        f"warning: could not cache the converted model.gguf in {blocker / 'gguf'} ("
    )
    assert warnings[0].endswith("set INTIMA_CACHE_DIR to a writable folder)")


def test_a_temporary_folder_left_by_a_killed_writer_is_removed_once_stale(
    cache: Path, gguf: Path
) -> None:
    import time

    cache.mkdir(parents=True)
    stale, fresh = cache / ".dead.tmp", cache / ".busy.tmp"
    for folder in (stale, fresh):
        folder.mkdir()
        (folder / "weights.bin").write_text("partial")
    old = time.time() - gguf_cache.STALE_S - 60
    os.utime(stale, (old, old))
    Converter(gguf).load()
    assert _leftovers(cache) == [".busy.tmp"]
