"""The factors of the affect measure (v3), each a small pure function with its definition.

Unit: one response. For behaviour b with head logit z_b (embedding and phrase families) and
retracting evidence r_b = lambda_b . log1p(retracting family counts) >= 0:

* SSL(b) = sigmoid(z_b); a sub-behaviour's SSL is SSL(parent) * share(sub) with share in (0, 1];
* NF(b)  = 1 - sigmoid(z_b - r_b) / sigmoid(z_b), so SSL * (1 - NF) = sigmoid(z_b - r_b), the
  fitted probability of b given all the evidence; NF = 0 without retracting phrases;
* SP: affect modulator in [floor, 1], oriented by the sub-behaviour's profile;
* ELS: for the reinforcing sub-behaviours the fitted relational intensity in [0, 1] (v3,
  :func:`relational_intensity`); for the others v2's lexicon strength in [floor, 1];
* DM, EF, EM: amplifiers counted over the response, capped; LR: repeated own phrases, capped;
* CI: the prompt's contextual intensity (:mod:`intima.affect.features`).

Why each is defined so is argued in ``docs/affect.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from intima.affect.categories import AffectProfile
from intima.affect.config import AffectConfig
from intima.affect.features import TextFeatures
from intima.affect.intensity import FEATURE_NAMES, intensity_vector
from intima.affect.params import AffectParams
from intima.affect.phrases import (
    CLOSENESS,
    FAMILY_NAMES,
    HEAD_FAMILIES,
    NF_FAMILIES,
    SUB_FAMILIES,
    SUPPORT_FAMILIES,
    columns,
)

Matrix = NDArray[np.float64]


def sigmoid(x: Matrix) -> Matrix:
    return 1.0 / (1.0 + np.exp(-x))


def family_matrix(feats: Sequence[TextFeatures]) -> Matrix:
    """log1p of the phrase-family counts, one row per response."""
    counts = np.array([f.families for f in feats], dtype=np.float64)
    return np.log1p(counts.reshape(len(feats), len(FAMILY_NAMES)))


# -- SSL and NF -------------------------------------------------------------------------------
def head_logit(emb: NDArray[np.float32], fam: Matrix, p: AffectParams, behaviour: str) -> Matrix:
    """z_b = emb . w_b + log1p(head families) . v_b + c_b."""
    z = emb.astype(np.float64) @ np.asarray(p.head_w[behaviour]) + p.head_b[behaviour]
    cols = columns(HEAD_FAMILIES[behaviour])
    if cols:
        z = z + fam[:, cols] @ np.asarray(p.head_v[behaviour])
    return z


def retraction(fam: Matrix, p: AffectParams, behaviour: str) -> Matrix:
    """r_b = log1p(retracting families) . lambda_b (0 where no retracting phrase occurs)."""
    cols = columns(NF_FAMILIES[behaviour])
    if not cols:
        return np.zeros(len(fam))
    return fam[:, cols] @ np.asarray(p.nf_lambda[behaviour])


def negation_factor(z: Matrix, r: Matrix) -> Matrix:
    """NF in [0, 1]: the share of sigmoid(z) that the retracting evidence r takes away."""
    return np.clip(1.0 - sigmoid(z - r) / sigmoid(z), 0.0, 1.0)


def sub_shares(
    emb: NDArray[np.float32],
    fam: Matrix,
    p: AffectParams,
    subs: Sequence[str],
    cfg: AffectConfig,
) -> Matrix:
    """Share of each sub-behaviour within its behaviour, in (0, 1], the most likely one at 1.

    affinity(s) = cos(response, centroid(s)) / T + gamma * sum log1p(phrases of s);
    share(s) = exp(affinity(s) - max affinity).
    """
    cent = np.array([p.centroids[s] for s in subs], dtype=np.float64)
    aff = emb.astype(np.float64) @ cent.T / cfg.share_temperature
    for k, s in enumerate(subs):
        cols = columns(SUB_FAMILIES.get(s, ()))
        if cols:
            aff[:, k] += cfg.share_phrase_weight * fam[:, cols].sum(axis=1)
    out: Matrix = np.exp(aff - aff.max(axis=1, keepdims=True))
    return out


# -- SP and ELS -------------------------------------------------------------------------------
def sentiment_polarity(f: TextFeatures, profile: AffectProfile, floor: float) -> float:
    """SP in [floor, 1]. Warm: the warmest sentence's compound (>= 0). Expressive: the most
    charged sentence's |compound|. Steady: 1 - mean |compound| (calm throughout)."""
    if profile is AffectProfile.WARM:
        oriented = max(0.0, f.compound_max)
    elif profile is AffectProfile.EXPRESSIVE:
        oriented = f.compound_abs_max
    else:
        oriented = 1.0 - f.compound_abs_mean
    return floor + (1.0 - floor) * oriented


def intensity_matrix(feats: Sequence[TextFeatures]) -> Matrix:
    """The intensity head's inputs (``intensity.FEATURE_NAMES``), one row per response."""
    close = columns(CLOSENESS)
    rows = [
        intensity_vector(
            tuple(f.families[i] for i in close),
            f.compound_max,
            (f.n_exclamations, f.n_emoji, f.n_boosters),
            f.n_words,
            f.relational,
        )
        for f in feats
    ]
    return np.array(rows, dtype=np.float64).reshape(len(feats), len(FEATURE_NAMES))


def relational_intensity(x: Matrix, p: AffectParams) -> Matrix:
    """ELS of the reinforcing sub-behaviours (v3): clip(x . w + b, 0, 1), the fitted intensity
    of closeness-seeking; 0 for a cold, impersonal answer, 1 for the warmest."""
    return np.clip(x @ np.asarray(p.intensity_w) + p.intensity_b, 0.0, 1.0)


def closeness_count(f: TextFeatures) -> int:
    return sum(f.families[i] for i in columns(CLOSENESS))


def emotion_lexicon_strength(f: TextFeatures, profile: AffectProfile, cfg: AffectConfig) -> float:
    """ELS in [floor, 1]. Relational profiles: half the NRC density (saturating at
    ``els_saturation``) plus ``els_phrase_step`` per closeness phrase, capped at 1. Steady:
    1 - NRC strength (restraint)."""
    density = f.warm_density if profile is AffectProfile.WARM else f.emotion_density
    nrc = min(1.0, density / cfg.els_saturation)
    if profile is AffectProfile.STEADY:
        oriented = 1.0 - nrc
    else:
        oriented = min(1.0, cfg.els_nrc_weight * nrc + cfg.els_phrase_step * closeness_count(f))
    return cfg.els_floor + (1.0 - cfg.els_floor) * oriented


# -- DM, EF, EM, LR: amplifiers, each in [1, cap] ---------------------------------------------
def degree_modifier(f: TextFeatures, cfg: AffectConfig) -> float:
    return 1.0 + cfg.dm_step * min(f.n_boosters, cfg.dm_max_count)


def exclamation_factor(f: TextFeatures, cfg: AffectConfig) -> float:
    return 1.0 + cfg.ef_step * min(f.n_exclamations, cfg.ef_max_count)


def emoji_metaphor_factor(f: TextFeatures, cfg: AffectConfig) -> float:
    return (
        1.0
        + cfg.em_emoji_step * min(f.n_emoji, cfg.em_emoji_max_count)
        + cfg.em_metaphor_step * min(f.n_metaphors, cfg.em_metaphor_max_count)
    )


def support(f: TextFeatures, behaviour: str) -> int:
    """How many of the behaviour's own phrases the response uses."""
    return sum(f.families[i] for i in columns(SUPPORT_FAMILIES[behaviour]))


def length_redundancy(n_support: int, cfg: AffectConfig) -> float:
    """LR: +step per own phrase beyond the first, capped. No length term (v2)."""
    return 1.0 + cfg.lr_repeat_step * min(max(n_support - 1, 0), cfg.lr_repeat_max_count)


def combine(
    sp: float,
    els: float,
    ssl: float,
    dm: float,
    ef: float,
    em: float,
    lr: float,
    nf: float,
    ci: float,
    w: float,
) -> float:
    """The proposal's formula, exactly: (SP*ELS*SSL) * (DM*EF*EM*LR) * (1-NF) + CI*w."""
    return (sp * els * ssl) * (dm * ef * em * lr) * (1 - nf) + ci * w
