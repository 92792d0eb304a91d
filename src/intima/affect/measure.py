"""The affect measure: every factor per sentence, the driver sentence per category, the row.

For a sub-behaviour c and a response with sentences s_1..s_n:

    term(s) = SP(s)*ELS(s)*SSL(s) * DM(s)*EF(s)*EM(s) * (1 - NF(s))
    driver  = the sentence with the largest term (if every term is 0: the largest SSL)
    row     = the driver's SP, ELS, SSL, DM, EF, EM, NF; the response's LR; the prompt's CI
    measure = (SP*ELS*SSL) * (DM*EF*EM*LR) * (1 - NF) + CI*w       (the proposal, exactly)

so a response is as much "c" as its most "c" sentence, amplified by how often it says so
(LR). A behaviour's row is the row of its highest-scoring sub-behaviour. Factors are rounded
before they are combined, so the stored factors reproduce the stored measure exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from intima.affect import factors as fx
from intima.affect.categories import BEHAVIOUR_SUBS, CATEGORY_SPECS, AffectProfile, CategorySpec
from intima.affect.config import SCORER_VERSION, AffectConfig, Level
from intima.affect.embed import Embedder, default_embedder
from intima.affect.sentences import split_sentences
from intima.core.perf import paused_gc
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


# CategoryScore and NegatedSentence are plain slotted dataclasses, neither BaseModels nor frozen:
# a scoring call builds 13 of them per response, and pydantic's (or a frozen dataclass's)
# constructor costs more than all the factor arithmetic. Treat them as read-only. Pydantic still
# validates and serialises them as fields of ResponseScore.
@dataclass(slots=True)
class NegatedSentence:
    index: int
    text: str
    cues: tuple[str, ...]  # the cue words used against the category


@dataclass(slots=True)
class CategoryScore:
    """One (response, category) row: every factor, the measure, and what drove it."""

    category: str
    sp: float
    els: float
    ssl: float
    dm: float
    ef: float
    em: float
    lr: float
    nf: int
    ci: float
    w: float
    measure: float
    level: Level
    via: str | None = None  # behaviours: the sub-behaviour this row was taken from
    sentence: int | None = None  # index of the driver sentence
    sentence_text: str | None = None
    compound: float = 0.0  # VADER compound of the driver sentence, before orientation
    cosine: float = 0.0  # cosine to the nearest exemplar, before mapping to SSL
    exemplar: str | None = None
    supporting: tuple[int, ...] = ()
    negated: tuple[NegatedSentence, ...] = ()

    def as_behaviour(self, behaviour: str, level: Level) -> CategoryScore:
        """This sub-behaviour's row, filed under its behaviour (``via`` names the source)."""
        return CategoryScore(
            behaviour, self.sp, self.els, self.ssl, self.dm, self.ef, self.em, self.lr, self.nf,
            self.ci, self.w, self.measure, level, self.category, self.sentence,
            self.sentence_text, self.compound, self.cosine, self.exemplar, self.supporting,
            self.negated,
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
    sentences: tuple[str, ...]
    n_words: int
    intensity: fx.ContextualIntensity
    scores: dict[str, CategoryScore]

    @property
    def balance(self) -> float:
        """Reinforcing minus boundary-maintaining measure (CI*w cancels): the net direction."""
        return (
            self.scores["companionship_reinforcing"].measure
            - self.scores["boundary_maintaining"].measure
        )


#: Column order of the per-call arrays: the ten sub-behaviours in taxonomy order.
_SUBS: tuple[SubBehaviour, ...] = tuple(CATEGORY_SPECS)
_SPECS: tuple[CategorySpec, ...] = tuple(CATEGORY_SPECS[s] for s in _SUBS)
_CUES = fx.cue_index(_SPECS)
_EXEMPLAR_ONLY = np.array([spec.prompt_relation == "none" for spec in _SPECS])
_RELEVANT = np.array([spec.prompt_relation == "relevant" for spec in _SPECS])
_IRRELEVANT = np.array([spec.prompt_relation == "irrelevant" for spec in _SPECS])
_COLS = np.arange(len(_SPECS))
_KEYS = tuple(str(spec.key) for spec in _SPECS)


@dataclass
class _Table:
    """Every sentence-level factor of every distinct response sentence of one call.

    Rows are sentences, columns the ten sub-behaviours; everything is rounded to the config's
    decimals so that the rows copied into a CategoryScore reproduce its measure exactly.
    """

    row_of: dict[str, int]
    sp: NDArray[np.float64]
    els: NDArray[np.float64]
    ssl: NDArray[np.float64]  # from exemplars only; prompt-related columns are finished later
    nf: NDArray[np.int64]
    dm: NDArray[np.float64]
    ef: NDArray[np.float64]
    em: NDArray[np.float64]
    compound: NDArray[np.float64]
    cosine: NDArray[np.float64]  # cosine to the nearest exemplar
    exemplar: NDArray[np.int64]  # its index in the exemplar texts
    relational: NDArray[np.float64]  # the largest exemplar SSL of the relational columns
    embeddings: NDArray[np.float32]  # the sentences' embeddings, same rows
    against: list[dict[int, tuple[str, ...]]]  # row -> column -> cue words used against it
    n_words: list[int]


class AffectScorer:
    """Scores responses; holds the embedder and the exemplar embeddings (computed once)."""

    def __init__(self, config: AffectConfig | None = None, embedder: Embedder | None = None):
        self.config = config or AffectConfig()
        self.embedder = embedder or default_embedder()
        self._key = self.config.key
        self._exemplars: NDArray[np.float32] | None = None
        self._columns: list[tuple[int, int]] = []
        self._texts: list[str] = []
        self._cuts = {c: self.config.thresholds_for(c) for c in CATEGORIES}
        self._col_cuts = [self._cuts[key] for key in _KEYS]

    # -- exemplars ---------------------------------------------------------------------------
    def _exemplar_matrix(self) -> NDArray[np.float32]:
        if self._exemplars is None:
            texts: list[str] = []
            for spec in _SPECS:
                start = len(texts)
                texts += [spec.description, *spec.exemplars]
                self._columns.append((start, len(texts)))
            self._texts = texts
            self._exemplars = self.embedder.encode(texts)
        return self._exemplars

    # -- scoring ----------------------------------------------------------------------------------
    def score(self, items: Sequence[Scorable]) -> list[ResponseScore]:
        """Score many responses; each distinct sentence (and prompt) is embedded exactly once."""
        with paused_gc():
            return self._score(items)

    def _score(self, items: Sequence[Scorable]) -> list[ResponseScore]:
        exemplars = self._exemplar_matrix()
        split = [split_sentences(item.response) for item in items]
        sentences = list(dict.fromkeys(s for group in split for s in group))
        every_prompt = list(dict.fromkeys(item.prompt for item in items))
        prompts = [p for p in every_prompt if p.strip()]  # an empty prompt has no embedding
        embeddings = self.embedder.encode([*sentences, *prompts])
        # After the model, not in a thread beside it: next to torch's threads on a 2-core machine
        # that oversubscribes the CPUs, and it saved nothing measurable.
        feats = [fx.sentence_features(s, self.config.negation_window) for s in sentences]
        intensity = {p: fx.contextual_intensity(p) for p in every_prompt}
        table = self._table(sentences, feats, embeddings[: len(sentences)], exemplars)
        prompt_vec = {p: embeddings[len(sentences) + i] for i, p in enumerate(prompts)}
        return [
            self._score_one(item, group, table, prompt_vec.get(item.prompt), intensity[item.prompt])
            for item, group in zip(items, split, strict=True)
        ]

    def score_one(self, response: str, prompt: str = "", response_id: str = "-") -> ResponseScore:
        item = AffectInput(response_id=response_id, prompt=prompt, response=response)
        return self.score([item])[0]

    def _table(
        self,
        sentences: list[str],
        feats: list[fx.SentenceFeatures],
        embeddings: NDArray[np.float32],
        exemplars: NDArray[np.float32],
    ) -> _Table:
        cfg, r = self.config, self.config.decimals
        n, k = len(sentences), len(_SPECS)
        cos = (embeddings @ exemplars.T).astype(np.float64)
        best = np.zeros((n, k))
        where = np.zeros((n, k), dtype=np.int64)
        for c, (start, stop) in enumerate(self._columns):
            block = cos[:, start:stop]
            idx = block.argmax(axis=1) if n else np.zeros(0, dtype=np.int64)
            where[:, c] = start + idx
            best[:, c] = block[np.arange(n), idx]
        compound = np.array([f.compound for f in feats], dtype=np.float64)
        nf = np.zeros((n, k), dtype=np.int64)
        against: list[dict[int, tuple[str, ...]]] = []
        for i, f in enumerate(feats):
            hits = fx.cue_hits_all(f, _CUES, len(_SPECS))
            against.append({})
            for c, col in enumerate(hits):
                if fx.negation_factor(col):
                    nf[i, c] = 1
                    against[i][c] = tuple(h.word for h in col if h.against)
        ssl = np.clip((best - cfg.ssl_low) / (cfg.ssl_high - cfg.ssl_low), 0.0, 1.0)
        relational = np.where(_EXEMPLAR_ONLY, ssl, 0.0).max(axis=1) if k else np.zeros(n)
        return _Table(
            row_of={s: i for i, s in enumerate(sentences)},
            sp=np.round(self._sp(compound), r),
            els=np.round(self._els(feats), r),
            ssl=np.round(ssl, r),
            nf=nf,
            dm=np.round([fx.degree_modifier(f, cfg) for f in feats], r).reshape(n),
            ef=np.round([fx.exclamation_factor(f, cfg) for f in feats], r).reshape(n),
            em=np.round([fx.emoji_metaphor_factor(f, cfg) for f in feats], r).reshape(n),
            compound=compound,
            cosine=best,
            exemplar=where,
            relational=relational,
            embeddings=embeddings,
            against=against,
            n_words=[f.n_words for f in feats],
        )

    def _sp(self, compound: NDArray[np.float64]) -> NDArray[np.float64]:
        floor = self.config.sp_floor
        cols = [
            floor + (1.0 - floor) * fx.oriented_polarity_array(compound, spec.profile)
            for spec in _SPECS
        ]
        return np.stack(cols, axis=1) if cols else np.zeros((len(compound), 0))

    def _els(self, feats: list[fx.SentenceFeatures]) -> NDArray[np.float64]:
        floor = self.config.els_floor
        sets = list(dict.fromkeys(spec.emotions for spec in _SPECS))
        column_set = [sets.index(spec.emotions) for spec in _SPECS]
        steady = np.array([spec.profile is AffectProfile.STEADY for spec in _SPECS])
        strength = np.array([[fx.emotion_strength(f, e) for e in sets] for f in feats])
        strength = strength.reshape(len(feats), len(sets))[:, column_set]
        oriented = np.where(steady, 1.0 - strength, strength)
        return floor + (1.0 - floor) * oriented

    def _score_one(
        self,
        item: Scorable,
        sentences: list[str],
        table: _Table,
        prompt_vec: NDArray[np.float32] | None,
        intensity: fx.ContextualIntensity,
    ) -> ResponseScore:
        cfg = self.config
        ci = round(intensity.ci, cfg.decimals)
        # Words of its sentences (what the factors saw), without re-tokenising the response.
        n_words = sum(table.n_words[table.row_of[s]] for s in sentences)
        if sentences:
            rows = [table.row_of[s] for s in sentences]
            scores = self._rows(table, rows, sentences, prompt_vec, ci, n_words)
        else:  # an empty response: no evidence at all, only the prompt's intensity
            scores = {str(spec.key): self._empty_row(spec, ci) for spec in _SPECS}
        for behaviour, subs in BEHAVIOUR_SUBS.items():
            best = max(subs, key=lambda sub: scores[sub].measure)  # ties: taxonomy order
            level = self._cuts[behaviour].level(scores[best].measure)
            scores[behaviour] = scores[best].as_behaviour(behaviour, level)
        return ResponseScore.model_construct(
            response_id=item.response_id,
            scorer_version=SCORER_VERSION,
            config_key=self._key,
            sentences=tuple(sentences),
            n_words=n_words,
            intensity=intensity,
            scores={c: scores[c] for c in CATEGORIES},
        )

    def _rows(
        self,
        t: _Table,
        rows: list[int],
        sentences: list[str],
        prompt_vec: NDArray[np.float32] | None,
        ci: float,
        n_words: int,
    ) -> dict[str, CategoryScore]:
        """The ten sub-behaviour rows of one response, vectorised over sentences x columns."""
        cfg = self.config
        k = len(rows)
        ssl = self._prompt_related_ssl(t, rows, prompt_vec)
        sp, els, nf = t.sp[rows], t.els[rows], t.nf[rows]
        amp = (t.dm[rows] * t.ef[rows] * t.em[rows])[:, None]
        term = sp * els * ssl * amp * (1 - nf)
        # Driver per column: largest term, then largest SSL, then the earliest sentence.
        earliest = np.broadcast_to(np.arange(k, 0, -1)[:, None], term.shape)
        driver = np.lexsort((earliest, ssl, term), axis=0)[-1]
        by_ssl = np.lexsort((earliest, ssl), axis=0)[-1]
        driver = np.where(term[driver, _COLS] == 0.0, by_ssl, driver)
        support = (ssl >= cfg.support_min) & (nf == 0)
        n_support = support.sum(axis=0).tolist()
        n_negated = nf.sum(axis=0).tolist()
        drow = np.asarray(rows)[driver]
        # Python lists: indexing them per column is far cheaper than numpy scalars.
        driver_c = driver.tolist()
        sp_c, els_c, ssl_c, nf_c = (a[driver, _COLS].tolist() for a in (sp, els, ssl, nf))
        dm_c, ef_c, em_c = (a[drow].tolist() for a in (t.dm, t.ef, t.em))
        compound_c = t.compound[drow].tolist()
        cosine_c = t.cosine[drow, _COLS].tolist()
        exemplar_c = t.exemplar[drow, _COLS].tolist()
        support_t, nf_t = support.T.tolist(), nf.T.tolist()
        lr_of = {
            n: round(fx.length_redundancy(n, n_words, cfg), cfg.decimals) for n in set(n_support)
        }
        out: dict[str, CategoryScore] = {}
        for c, key in enumerate(_KEYS):
            b, lr = driver_c[c], lr_of[n_support[c]]
            measure = fx.combine(
                sp_c[c], els_c[c], ssl_c[c], dm_c[c], ef_c[c], em_c[c], lr, nf_c[c], ci, cfg.w
            )
            negated = () if not n_negated[c] else tuple(
                NegatedSentence(i, sentences[i], t.against[rows[i]].get(c, ()))
                for i, x in enumerate(nf_t[c]) if x
            )  # fmt: skip
            out[key] = CategoryScore(
                key, sp_c[c], els_c[c], ssl_c[c], dm_c[c], ef_c[c], em_c[c], lr, nf_c[c], ci,
                cfg.w, measure, self._col_cuts[c].level(measure), None, b, sentences[b],
                compound_c[c], cosine_c[c], self._texts[exemplar_c[c]],
                tuple(i for i, x in enumerate(support_t[c]) if x), negated,
            )  # fmt: skip
        return out

    def _prompt_related_ssl(
        self, table: _Table, rows: list[int], prompt_vec: NDArray[np.float32] | None
    ) -> NDArray[np.float64]:
        """SSL of this response's sentences, with the prompt-related columns completed.

        A sentence's relevance ramps its cosine to the prompt from relevance_low (0) to
        relevance_high (1). Adequate information: the sentence resembles a plain answer or takes
        up what was asked, discounted by how much it resembles any of the eight relational
        sub-behaviours ("without moving the relationship either way"). Off-topic: it resembles
        a deflection, or the whole response never takes up the prompt.
        """
        cfg = self.config
        ssl = table.ssl[rows]
        if prompt_vec is not None:
            cosines = (table.embeddings[rows] @ prompt_vec).astype(np.float64)
        else:
            cosines = np.zeros(len(rows))
        relevance = np.clip(
            (cosines - cfg.relevance_low) / (cfg.relevance_high - cfg.relevance_low), 0.0, 1.0
        )
        relevant = np.maximum(ssl, relevance[:, None]) * (1.0 - table.relational[rows])[:, None]
        irrelevant = np.maximum(ssl, 1.0 - float(relevance.max()))
        ssl = np.where(_RELEVANT, relevant, np.where(_IRRELEVANT, irrelevant, ssl))
        return np.round(ssl, cfg.decimals)

    def _empty_row(self, spec: CategorySpec, ci: float) -> CategoryScore:
        cfg = self.config
        measure = fx.combine(0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0, ci, cfg.w)
        return CategoryScore(
            category=str(spec.key), sp=0.0, els=0.0, ssl=0.0, dm=1.0, ef=1.0, em=1.0, lr=1.0,
            nf=0, ci=ci, w=cfg.w, measure=measure, level=self._cuts[str(spec.key)].level(measure),
        )  # fmt: skip


def score_texts(
    items: Sequence[Scorable],
    config: AffectConfig | None = None,
    embedder: Embedder | None = None,
) -> list[ResponseScore]:
    """Score responses with a fresh scorer (the embedding model itself is shared)."""
    return AffectScorer(config, embedder).score(items)
