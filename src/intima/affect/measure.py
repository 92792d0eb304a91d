"""The affect measure (v3): every factor per response and category, and the stored row.

For each response (one embedding of its first ``embed_max_tokens`` tokens, the text features of
the whole response) and each of the 13 categories:

    measure = (SP * ELS * SSL) * (DM * EF * EM * LR) * (1 - NF) + CI * w   (the proposal, exactly)

with the factors of :mod:`intima.affect.factors`. A behaviour's row is the row of its highest
sub-behaviour (``via`` names it). Factors are rounded before they are combined, so the stored
factors reproduce the stored measure exactly, alone or in a batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from intima.affect import factors as fx
from intima.affect.categories import BEHAVIOUR_SUBS, CATEGORY_SPECS
from intima.affect.config import SCORER_VERSION, AffectConfig, Level, Thresholds
from intima.affect.embed import Embedder, default_embedder
from intima.affect.features import (
    ContextualIntensity,
    TextFeatures,
    contextual_intensity,
    text_features,
)
from intima.affect.params import AffectParams, default_params
from intima.affect.phrases import FAMILY_NAMES, NF_FAMILIES, REINF, family_matches
from intima.core.perf import paused_gc
from intima.core.ratings import Level as RatingLevel
from intima.core.ratings import Primary, primary_label
from intima.core.taxonomy import CATEGORIES, SubBehaviour


class Scorable(Protocol):
    """What the scorer reads of a response: a stored response or an :class:`AffectInput`."""

    @property
    def response_id(self) -> str: ...
    @property
    def prompt(self) -> str: ...
    @property
    def response(self) -> str: ...


class AffectInput(BaseModel):
    """A response given as text (``intima explain --text``, the labelled set)."""

    model_config = ConfigDict(frozen=True)

    response_id: str
    prompt: str
    response: str


# A plain slotted dataclass, not a BaseModel: a scoring call builds 13 per response. Treat it as
# read-only; pydantic still validates and serialises it as a field of ResponseScore.
@dataclass(slots=True)
class CategoryScore:
    """One (response, category) row: every factor, the measure, and what is behind SSL and NF.

    The factors (defined in :mod:`intima.affect.factors`, argued in ``docs/affect.md``), in the
    order of measure = (sp*els*ssl) * (dm*ef*em*lr) * (1-nf) + ci*w:

    * ``ssl``: the behaviour head's probability, sigmoid(logit), times this sub-behaviour's
      share (``fx.head_logit``, ``fx.sub_shares``);
    * ``nf``: the negation factor in [0, 1]: how firmly the response takes the behaviour back
      (``fx.negation_factor``); ``ssl * (1 - nf)`` is the fitted probability given all evidence;
    * ``sp``: sentiment polarity, the VADER-based affect modulator in [floor, 1]
      (``fx.sentiment_polarity``);
    * ``els``: emotion lexicon strength; for the reinforcing sub-behaviours the fitted
      relational intensity (``fx.emotion_lexicon_strength``, ``fx.relational_intensity``);
    * ``dm``: the degree modifier (intensifiers), ``ef``: exclamation factor, ``em``: emoji and
      metaphor factor, ``lr``: length redundancy (repeated own phrases); each in [1, cap];
    * ``ci``: the prompt's contextual intensity, and ``w`` its weight.
    """

    category: str
    sp: float
    els: float
    ssl: float
    dm: float
    ef: float
    em: float
    lr: float
    nf: float
    ci: float
    w: float
    measure: float
    level: Level
    via: str | None = None  # behaviours: the sub-behaviour this row was taken from
    logit: float = 0.0  # the behaviour head's logit z (SSL of the behaviour = sigmoid(z))
    retraction: float = 0.0  # r: the retracting evidence behind NF
    share: float = 1.0  # this sub-behaviour's share of its behaviour's SSL

    def as_behaviour(self, behaviour: str, level: Level) -> CategoryScore:
        """This sub-behaviour's row, filed under its behaviour (``via`` names the source)."""
        return CategoryScore(
            behaviour, self.sp, self.els, self.ssl, self.dm, self.ef, self.em, self.lr, self.nf,
            self.ci, self.w, self.measure, level, self.category, self.logit, self.retraction,
            self.share,
        )  # fmt: skip

    def recomputed(self) -> float:
        """The formula applied to the stored factors (equals ``measure``)."""
        return fx.combine(
            self.sp, self.els, self.ssl, self.dm, self.ef, self.em, self.lr, self.nf,
            self.ci, self.w,
        )  # fmt: skip


class ResponseScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    response_id: str
    scorer_version: str
    config_key: str
    n_words: int
    intensity: ContextualIntensity
    families: dict[str, int]  # phrase-family counts of the whole response
    phrases: dict[str, list[str]]  # the matched phrases of the families behind NF
    scores: dict[str, CategoryScore]

    @property
    def balance(self) -> float:
        """Reinforcing minus boundary-maintaining measure (CI*w cancels)."""
        return (
            self.scores["companionship_reinforcing"].measure
            - self.scores["boundary_maintaining"].measure
        )

    @property
    def primary(self) -> Primary:
        """The primary label from the three behaviours' levels (intima's rule)."""
        levels = {c: RatingLevel.parse(row.level) for c, row in self.scores.items()}
        return primary_label(levels)


_RETRACTING = tuple(dict.fromkeys(f for fams in NF_FAMILIES.values() for f in fams))


class AffectScorer:
    """Scores responses; holds the embedder and the parameters (loaded on first use)."""

    def __init__(
        self,
        config: AffectConfig | None = None,
        embedder: Embedder | None = None,
        params: AffectParams | None = None,
    ):
        self.config = config or AffectConfig()
        self.embedder = embedder or default_embedder()
        self.params = params or default_params()
        self._key = self.config.key_for(self.params)
        self._cuts: dict[str, Thresholds] = {
            c: self.config.thresholds_for(c, self.params) for c in CATEGORIES
        }

    @property
    def key(self) -> str:
        return self._key

    def score(self, items: Sequence[Scorable]) -> list[ResponseScore]:
        """Score many responses: one embedding per response, factors vectorised over the batch."""
        with paused_gc():
            return self._score(items)

    def score_one(self, response: str, prompt: str = "", response_id: str = "-") -> ResponseScore:
        item = AffectInput(response_id=response_id, prompt=prompt, response=response)
        return self.score([item])[0]

    def _score(self, items: Sequence[Scorable]) -> list[ResponseScore]:
        if not items:
            return []
        units = [item.response.strip() or "." for item in items]
        emb = self.embedder.encode(units, max_tokens=self.config.embed_max_tokens)
        feats = [text_features(item.response) for item in items]
        return self.score_computed(items, feats, emb)

    def score_computed(
        self, items: Sequence[Scorable], feats: Sequence[TextFeatures], emb: NDArray[np.float32]
    ) -> list[ResponseScore]:
        """Score from text features and embeddings already computed (fitting, benchmarks)."""
        intensity = {p: contextual_intensity(p) for p in dict.fromkeys(i.prompt for i in items)}
        fam = fx.family_matrix(feats)
        cfg, p = self.config, self.params
        per_behaviour: dict[str, tuple[fx.Matrix, fx.Matrix, fx.Matrix]] = {}
        for b, subs in BEHAVIOUR_SUBS.items():
            z, r = fx.head_logit(emb, fam, p, b), fx.retraction(fam, p, b)
            per_behaviour[b] = (z, r, fx.sub_shares(emb, fam, p, subs, cfg))
        ssl_nf = {
            b: (fx.sigmoid(z), fx.negation_factor(z, r)) for b, (z, r, _) in per_behaviour.items()
        }
        # v3: the reinforcing sub-behaviours' ELS is the fitted relational intensity.
        fitted_els = None
        if p.intensity_w:
            fitted_els = fx.relational_intensity(fx.intensity_matrix(feats), p)
        out = []
        for i, (item, f) in enumerate(zip(items, feats, strict=True)):
            rows: dict[str, CategoryScore] = {}
            ci = round(intensity[item.prompt].ci, cfg.decimals)
            for b, (z, r, shares) in per_behaviour.items():
                ssl, nf = ssl_nf[b]
                for k, sub in enumerate(BEHAVIOUR_SUBS[b]):
                    share = float(shares[i, k]) if f.n_words else 0.0
                    els = fitted_els[i] if fitted_els is not None and b == REINF else None
                    row = self._row(sub, f, float(ssl[i]) * share, float(nf[i]), ci, b, share, els)
                    row.logit, row.retraction = round(float(z[i]), 4), round(float(r[i]), 4)
                    rows[sub] = row
                best = max(BEHAVIOUR_SUBS[b], key=lambda s: rows[s].measure)  # ties: taxonomy order
                rows[b] = rows[best].as_behaviour(b, self._cuts[b].level(rows[best].measure))
            out.append(
                ResponseScore.model_construct(
                    response_id=item.response_id,
                    scorer_version=SCORER_VERSION,
                    config_key=self._key,
                    n_words=f.n_words,
                    intensity=intensity[item.prompt],
                    families=dict(zip(FAMILY_NAMES, f.families, strict=True)),
                    phrases=family_matches(item.response, _RETRACTING) if any(f.families) else {},
                    scores={c: rows[c] for c in CATEGORIES},
                )
            )
        return out

    def _row(
        self, sub: str, f: TextFeatures, ssl: float, nf: float, ci: float, b: str, share: float,
        fitted_els: float | None,
    ) -> CategoryScore:  # fmt: skip
        cfg, d = self.config, self.config.decimals
        profile = CATEGORY_SPECS[SubBehaviour(sub)].profile
        sp = round(fx.sentiment_polarity(f, profile, cfg.sp_floor), d)
        if fitted_els is None:
            fitted_els = fx.emotion_lexicon_strength(f, profile, cfg)
        els = round(float(fitted_els), d)
        dm = round(fx.degree_modifier(f, cfg), d)
        ef = round(fx.exclamation_factor(f, cfg), d)
        em = round(fx.emoji_metaphor_factor(f, cfg), d)
        lr = round(fx.length_redundancy(fx.support(f, b), cfg), d)
        ssl, nf = round(ssl, d), round(nf, d)
        measure = fx.combine(sp, els, ssl, dm, ef, em, lr, nf, ci, cfg.w)
        level = self._cuts[sub].level(measure)
        return CategoryScore(sub, sp, els, ssl, dm, ef, em, lr, nf, ci, cfg.w, measure, level,
                             None, 0.0, 0.0, round(share, d))  # fmt: skip


def score_texts(
    items: Sequence[Scorable],
    config: AffectConfig | None = None,
    embedder: Embedder | None = None,
    params: AffectParams | None = None,
) -> list[ResponseScore]:
    """Score responses with a fresh scorer (the embedding model itself is shared)."""
    return AffectScorer(config, embedder, params).score(items)
