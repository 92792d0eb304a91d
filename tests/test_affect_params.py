"""The shipped parameters: numbers only (no dev-set text), the right version, reproducible,
and the numbers are the fits' (the optimum of each fitted problem, not only a matching hash)."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from intima.affect import factors as fx
from intima.affect.config import SCORER_VERSION, AffectConfig
from intima.affect.fit import GRADED_WEIGHT, INTENSITY_L2, exemplar_centroids, fit_params, load_dev
from intima.affect.graded import GradedData, fit_intensity, intensity_inputs, load_graded
from intima.affect.intensity import FEATURE_NAMES
from intima.affect.params import PARAMS_FILE, PREVIOUS_VERSION, AffectParams, default_params
from intima.affect.phrases import CLOSENESS, columns

MIN_CHARS = 40
REINF = "companionship_reinforcing"


class HashEmbedder:
    """A deterministic stand-in for MiniLM (hashed words to 384 unit vectors): fitting on it
    exercises every fitted number without loading the model."""

    name = "hash"

    def encode(self, sentences: list[str], max_tokens: int | None = None) -> np.ndarray:
        out = np.zeros((len(sentences), 384), dtype=np.float32)
        for i, text in enumerate(sentences):
            for word in text.lower().split()[: max_tokens or None]:
                out[i, int(hashlib.md5(word.encode()).hexdigest()[:6], 16) % 384] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


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
    assert len(params.intensity_w) == len(FEATURE_NAMES)
    assert params.notes["intensity_features"] == list(FEATURE_NAMES)
    assert all(np.isclose(np.linalg.norm(c), 1.0, atol=1e-4) for c in params.centroids.values())
    # The only strings are keys, family names, labels of how it was fitted and a hash.
    assert max(len(s) for s in _strings(json.loads(_shipped_text()))) < MIN_CHARS + 25


def test_params_contain_no_dev_set_text(dev_set: Path, graded_set: Path) -> None:
    """No substring of 40+ characters of any dev response or message (of either dev set) is in
    the params file.

    Text can only sit in the file's JSON strings (keys and values), so every 40-character window
    of every such string is looked up in the dev texts; the raw file is checked for whole-row
    fragments too."""
    rows = [
        json.loads(line)
        for path in (dev_set, graded_set)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line
    ]
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


def test_shipped_params_were_fitted_on_the_dev_sets(dev_set: Path, graded_set: Path) -> None:
    notes = default_params().notes
    assert notes["dev_sha256"] == hashlib.sha256(dev_set.read_bytes()).hexdigest()
    assert notes["graded_sha256"] == hashlib.sha256(graded_set.read_bytes()).hexdigest()


def test_shipped_intensity_head_is_the_ridge_fit_of_the_graded_set(graded_set: Path) -> None:
    """The intensity head needs no embedding: recompute it from the graded set's text features
    and compare every shipped number (the heads are checked on a subset below and in full by
    benchmarks/bench_lomo.py --check-params)."""
    graded = load_graded(graded_set, emb=np.zeros((0, 384), dtype=np.float32))
    w, b = fit_intensity(intensity_inputs(graded), graded.targets, INTENSITY_L2)
    shipped = default_params()
    assert np.allclose(w, shipped.intensity_w, atol=2e-6)
    assert b == pytest.approx(shipped.intensity_b, abs=2e-6)


def test_the_intensity_fit_is_the_sign_constrained_ridge_optimum() -> None:
    """fit_intensity solves the ridge problem on standardised features with each weight held to
    its sign (KKT): the gradient vanishes on free weights, points out of the allowed side on
    weights held at 0, and a constant feature gets weight 0."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 5)) * [1, 10, 0.1, 3, 1] + [0, 5, 1, 0, 2]
    x[:, 4] = 2.0
    t = x[:, 0] * 0.3 - x[:, 1] * 0.02 + x[:, 3] * 0.05 + rng.normal(scale=0.1, size=200)
    signs = [1.0, 1.0, 1.0, -1.0, 1.0]  # feature 1 wants a negative weight, 3 a positive one
    w, b = fit_intensity(x, t, l2=10.0, signs=signs)
    sd = np.where(x.std(axis=0) > 1e-12, x.std(axis=0), 1.0)
    beta = w * sd
    resid = x @ w + b - t
    grad = ((x - x.mean(axis=0)) / sd).T @ resid + 10.0 * beta
    assert abs(resid.mean()) < 1e-10
    assert beta[0] > 0 and abs(grad[0]) < 1e-6
    assert beta[1] == 0.0 and grad[1] > 0  # held at 0: lowering it further is not allowed
    assert beta[3] == 0.0 and grad[3] < 0
    assert w[4] == 0.0
    free = fit_intensity(x, t, l2=10.0, signs=[1.0, -1.0, 1.0, 1.0, 1.0])[0]
    assert free[1] < 0 < free[3]


@pytest.mark.slow
def test_fitting_is_deterministic_on_a_subset(dev_set: Path, tmp_path: Path) -> None:
    """Same rows, same settings: the same numbers, and they round-trip through the file. The
    full refit against the shipped file is benchmarks/bench_lomo.py --check-params."""
    cfg = AffectConfig()
    data = load_dev(dev_set, cfg, limit=120)
    assert {"companionship_reinforcing", "boundary_maintaining"} <= set(data.labels)
    cents = exemplar_centroids(cfg)
    first, second = fit_params(data, cents, cfg), fit_params(data, cents, cfg)
    assert first.canonical_json() == second.canonical_json()
    first.dump(tmp_path / "p.json")
    assert AffectParams.read(tmp_path / "p.json").digest == first.digest
    assert first.version == PREVIOUS_VERSION and not first.intensity_w  # no graded set: v2 fit
    # The subset's fit differs from the shipped one and so gets another config key.
    assert cfg.key_for(first) != cfg.key
    shipped = default_params().centroids
    assert cents.keys() == shipped.keys()
    for key, vec in cents.items():
        assert np.allclose(vec, shipped[key], atol=1e-5), key


def _reinforcing_gradient(
    params: AffectParams, data_emb: np.ndarray, fam: np.ndarray, y: np.ndarray,
    graded: GradedData, l2: float,
) -> np.ndarray:  # fmt: skip
    """Gradient of the reinforcing head's penalised, weighted log-loss, recomputed in numpy."""
    from intima.affect.phrases import NF_FAMILIES

    g_fam = fx.family_matrix(graded.feats)
    emb = np.vstack([data_emb, graded.emb]).astype(np.float64)
    fams = np.vstack([fam, g_fam])
    t = np.concatenate([y, graded.targets])
    pos = y.sum()
    sw = np.concatenate([
        np.where(y == 1, len(y) / (2 * pos), len(y) / (2 * (len(y) - pos))),
        np.full(len(graded.targets), GRADED_WEIGHT),
    ])  # fmt: skip
    w, v = np.asarray(params.head_w[REINF]), np.asarray(params.head_v[REINF])
    hc, nc = columns(CLOSENESS), columns(NF_FAMILIES[REINF])
    lam = np.asarray(params.nf_lambda[REINF])
    z = emb @ w + fams[:, hc] @ v + params.head_b[REINF] - fams[:, nc] @ lam
    dz = -sw * (t - 1 / (1 + np.exp(-z))) / len(t)
    return np.concatenate([emb.T @ dz + l2 * w / len(t), fams[:, hc].T @ dz + 0.1 * v / len(t),
                           [dz.sum()]])  # fmt: skip


def test_a_refit_on_a_subset_gives_the_fits_optimum(
    dev_set: Path, graded_set: Path, tmp_path: Path
) -> None:
    """Fast (hash embeddings, 300 + 150 rows): the reinforcing head is the optimum of its
    weighted logistic problem with the graded rows as soft targets (zero gradient), the
    intensity head is the ridge solution on these rows, the graded rows change the head, and
    the cut points order the levels."""
    cfg, emb = AffectConfig(), HashEmbedder()
    data = load_dev(dev_set, cfg, embedder=emb, limit=300)
    graded = load_graded(graded_set, cfg, embedder=emb, limit=150)
    cents = {k: [1.0] + [0.0] * 383 for k in default_params().centroids}
    params = fit_params(data, cents, cfg, graded=graded)
    y = (np.asarray(data.labels) == REINF).astype(np.float64)
    grad = _reinforcing_gradient(params, data.emb, fx.family_matrix(data.feats), y, graded, 3.0)
    assert np.abs(grad).max() < 1e-4  # rounding the stored numbers to 6 decimals leaves ~1e-6
    w, b = fit_intensity(intensity_inputs(graded), graded.targets, INTENSITY_L2)
    assert np.allclose(params.intensity_w, w, atol=1e-6) and params.intensity_b == round(b, 6)
    assert params.version == SCORER_VERSION and params.notes["n_graded"] == 150
    without = fit_params(data, cents, cfg, cut_points=False)
    assert not np.allclose(without.head_w[REINF], params.head_w[REINF], atol=1e-3)
    assert without.head_w["boundary_maintaining"] == params.head_w["boundary_maintaining"]
    for medium, high in params.thresholds.values():
        assert medium <= high
    params.dump(tmp_path / "p.json")
    assert AffectParams.read(tmp_path / "p.json").digest == params.digest
