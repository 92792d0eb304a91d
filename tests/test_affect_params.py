"""The shipped parameters: numbers only (no dev-set text), the right version, reproducible."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from intima.affect.config import SCORER_VERSION, AffectConfig
from intima.affect.fit import exemplar_centroids, fit_params, load_dev
from intima.affect.params import PARAMS_FILE, AffectParams, default_params

MIN_CHARS = 40


def _shipped_text() -> str:
    return resources.files("intima.data").joinpath(PARAMS_FILE).read_text(encoding="utf-8")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_params_are_numbers_for_this_scorer_version() -> None:
    params = default_params()
    assert params.version == SCORER_VERSION
    assert set(params.head_w) == set(params.thresholds) == set(params.head_b)
    assert all(len(w) == 384 for w in params.head_w.values())
    assert all(np.isclose(np.linalg.norm(c), 1.0, atol=1e-4) for c in params.centroids.values())
    # The only strings are keys, family names, labels of how it was fitted and a hash.
    assert max(len(s) for s in _strings(json.loads(_shipped_text()))) < MIN_CHARS + 25


def test_params_contain_no_dev_set_text(dev_set: Path) -> None:
    """No substring of 40+ characters of any dev response or message is in the params file.

    Text can only sit in the file's JSON strings (keys and values), so every 40-character window
    of every such string is looked up in the dev texts; the raw file is checked for whole-row
    fragments too."""
    rows = [json.loads(line) for line in dev_set.read_text(encoding="utf-8").splitlines() if line]
    texts = [r["response"] for r in rows] + [m["content"] for r in rows for m in r["messages"]]
    corpus = "\x00".join(texts).lower()
    strings = _strings(json.loads(_shipped_text()))
    assert strings  # keys at least
    for s in strings:
        for start in range(len(s) - MIN_CHARS + 1):
            assert s[start : start + MIN_CHARS].lower() not in corpus, s
    raw = _shipped_text().lower()
    for text in texts[::7]:
        assert text[:MIN_CHARS].lower() not in raw


def test_shipped_params_were_fitted_on_the_dev_set(dev_set: Path) -> None:
    digest = hashlib.sha256(dev_set.read_bytes()).hexdigest()
    assert default_params().notes["dev_sha256"] == digest


@pytest.mark.slow
def test_fitting_is_deterministic_on_a_subset(dev_set: Path, tmp_path: Path) -> None:
    """Same rows, same settings: the same numbers, and they round-trip through the file. The
    full refit against the shipped file is benchmarks/bench_lomo.py --check-params."""
    cfg = AffectConfig()
    data = load_dev(dev_set, cfg, limit=300)
    assert {"companionship_reinforcing", "boundary_maintaining"} <= set(data.labels)
    cents = exemplar_centroids(cfg)
    first, second = fit_params(data, cents, cfg), fit_params(data, cents, cfg)
    assert first.canonical_json() == second.canonical_json()
    first.dump(tmp_path / "p.json")
    assert AffectParams.read(tmp_path / "p.json").digest == first.digest
    # The subset's fit differs from the shipped one and so gets another config key.
    assert cfg.key_for(first) != cfg.key
    shipped = default_params().centroids
    assert cents.keys() == shipped.keys()
    for key, vec in cents.items():
        assert np.allclose(vec, shipped[key], atol=1e-5), key
