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
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from intima.affect import factors as fx
from intima.affect.categories import BEHAVIOUR_SUBS, CATEGORY_SPECS, CategorySpec
from intima.affect.config import SCORER_VERSION, AffectConfig, Level
from intima.affect.embed import Embedder, default_embedder
from intima.affect.text import split_sentences, word_count
from intima.taxonomy import CATEGORIES, SubBehaviour


class AffectInput(BaseModel):
    model_config = ConfigDict(frozen=True)

    response_id: str
    prompt: str
    response: str


class NegatedSentence(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    text: str
    cues: tuple[str, ...]  # the cue words used against the category


class CategoryScore(BaseModel):
    """One (response, category) row: every factor, the measure, and what drove it."""

    model_config = ConfigDict(frozen=True)

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


@dataclass(frozen=True, slots=True)
class _SentenceView:
    """One sentence's factors for one category (before picking the driver)."""

    sp: float
    els: float
    ssl: float
    dm: float
    ef: float
    em: float
    nf: int
    term: float
    compound: float
    cosine: float
    exemplar: int
    against: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Context:
    """What a response's sentences share: the prompt and how much each sentence takes it up."""

    prompt: str
    relevances: list[float]
    response_relevance: float
    relational: list[float]  # per sentence: the largest exemplar SSL of the 8 relational subs


@dataclass
class _Caches:
    """Per-call caches: a sentence repeated across responses is analysed once."""

    embeddings: NDArray[np.float32]  # distinct sentences and prompts
    cosines: NDArray[np.float32]  # (texts, exemplars)
    row_of: dict[str, int]
    features: dict[str, fx.SentenceFeatures] = field(default_factory=dict)
    views: dict[tuple[str, SubBehaviour, str], _SentenceView] = field(default_factory=dict)

    def prompt_cosine(self, sentence: str, prompt: str) -> float:
        if not prompt.strip():
            return 0.0
        a, b = self.embeddings[self.row_of[sentence]], self.embeddings[self.row_of[prompt]]
        return float(a @ b)


class AffectScorer:
    """Scores responses; holds the embedder and the exemplar embeddings (computed once)."""

    def __init__(self, config: AffectConfig | None = None, embedder: Embedder | None = None):
        self.config = config or AffectConfig()
        self.embedder = embedder or default_embedder()
        self._exemplars: NDArray[np.float32] | None = None
        self._columns: dict[SubBehaviour, tuple[int, int]] = {}
        self._texts: list[str] = []

    # -- exemplars ---------------------------------------------------------------------------
    def _exemplar_matrix(self) -> NDArray[np.float32]:
        if self._exemplars is None:
            texts: list[str] = []
            for key, spec in CATEGORY_SPECS.items():
                start = len(texts)
                texts += [spec.description, *spec.exemplars]
                self._columns[key] = (start, len(texts))
            self._texts = texts
            self._exemplars = self.embedder.encode(texts)
        return self._exemplars

    # -- scoring ----------------------------------------------------------------------------------
    def score(self, items: Sequence[AffectInput]) -> list[ResponseScore]:
        """Score many responses; each distinct sentence (and prompt) is embedded exactly once."""
        exemplars = self._exemplar_matrix()
        split = [split_sentences(item.response) for item in items]
        texts = [s for sentences in split for s in sentences]
        texts += [item.prompt for item in items if item.prompt.strip()]
        distinct = list(dict.fromkeys(texts))
        embeddings = self.embedder.encode(distinct)
        caches = _Caches(
            embeddings=embeddings,
            cosines=embeddings @ exemplars.T,
            row_of={s: i for i, s in enumerate(distinct)},
        )
        return [
            self._score_one(item, sentences, caches)
            for item, sentences in zip(items, split, strict=True)
        ]

    def score_one(self, response: str, prompt: str = "", response_id: str = "-") -> ResponseScore:
        item = AffectInput(response_id=response_id, prompt=prompt, response=response)
        return self.score([item])[0]

    def _score_one(self, item: AffectInput, sentences: list[str], caches: _Caches) -> ResponseScore:
        cfg = self.config
        intensity = fx.contextual_intensity(item.prompt)
        ci = round(intensity.ci, cfg.decimals)
        n_words = word_count(item.response)
        relevances = [fx.relevance(caches.prompt_cosine(s, item.prompt), cfg) for s in sentences]
        relational = [self._relational_ssl(s, caches) for s in sentences]
        context = _Context(item.prompt, relevances, max(relevances, default=0.0), relational)
        rows: dict[str, CategoryScore] = {}
        for key, spec in CATEGORY_SPECS.items():
            views = [self._view(i, s, spec, caches, context) for i, s in enumerate(sentences)]
            rows[str(key)] = self._row(spec, sentences, views, ci, n_words)
        for behaviour, subs in BEHAVIOUR_SUBS.items():
            best = max(subs, key=lambda sub: rows[sub].measure)  # ties: taxonomy order
            rows[behaviour] = rows[best].model_copy(
                update={
                    "category": behaviour,
                    "via": best,
                    "level": cfg.level(behaviour, rows[best].measure),
                }
            )
        return ResponseScore(
            response_id=item.response_id,
            scorer_version=SCORER_VERSION,
            config_key=cfg.key,
            sentences=tuple(sentences),
            n_words=n_words,
            intensity=intensity,
            scores={c: rows[c] for c in CATEGORIES},
        )

    def _relational_ssl(self, sentence: str, caches: _Caches) -> float:
        row = caches.cosines[caches.row_of[sentence]]
        best = max(
            float(row[slice(*self._columns[sub])].max())
            for sub in SubBehaviour
            if CATEGORY_SPECS[sub].prompt_relation == "none"
        )
        return fx.semantic_similarity(best, self.config)

    def _view(
        self, index: int, sentence: str, spec: CategorySpec, caches: _Caches, context: _Context
    ) -> _SentenceView:
        # Views of prompt-related categories depend on the prompt, the others only on the text.
        key = (sentence, spec.key, context.prompt if spec.prompt_relation != "none" else "")
        if (cached := caches.views.get(key)) is not None:
            return cached
        cfg = self.config
        feat = caches.features.get(sentence)
        if feat is None:
            feat = caches.features[sentence] = fx.sentence_features(sentence, cfg.negation_window)
        start, stop = self._columns[spec.key]
        sims = caches.cosines[caches.row_of[sentence], start:stop]
        best = int(np.argmax(sims))
        hits = fx.cue_hits(feat, spec)
        ssl = fx.prompt_related_similarity(
            fx.semantic_similarity(float(sims[best]), cfg),
            context.relevances[index],
            context.response_relevance,
            context.relational[index],
            spec,
        )
        r = cfg.decimals
        parts = {
            "sp": round(fx.sentiment_polarity(feat.compound, spec.profile, cfg.sp_floor), r),
            "els": round(fx.emotion_lexicon_strength(feat, spec, cfg.els_floor), r),
            "ssl": round(ssl, r),
            "dm": round(fx.degree_modifier(feat, cfg), r),
            "ef": round(fx.exclamation_factor(feat, cfg), r),
            "em": round(fx.emoji_metaphor_factor(feat, cfg), r),
        }
        nf = fx.negation_factor(hits)
        term = (
            (parts["sp"] * parts["els"] * parts["ssl"])
            * (parts["dm"] * parts["ef"] * parts["em"])
            * (1 - nf)
        )
        view = _SentenceView(
            **parts,
            nf=nf,
            term=term,
            compound=feat.compound,
            cosine=float(sims[best]),
            exemplar=start + best,
            against=tuple(h.word for h in hits if h.against) if nf else (),
        )
        caches.views[key] = view
        return view

    def _row(
        self,
        spec: CategorySpec,
        sentences: list[str],
        views: list[_SentenceView],
        ci: float,
        n_words: int,
    ) -> CategoryScore:
        cfg = self.config
        if not views:  # an empty response: no evidence at all, only the prompt's intensity
            return self._empty_row(spec, ci)
        best = max(range(len(views)), key=lambda i: (views[i].term, views[i].ssl, -i))
        if views[best].term == 0.0:
            best = max(range(len(views)), key=lambda i: (views[i].ssl, -i))
        supporting = tuple(i for i, v in enumerate(views) if v.ssl >= cfg.support_min and v.nf == 0)
        lr = round(fx.length_redundancy(len(supporting), n_words, cfg), cfg.decimals)
        v = views[best]
        measure = fx.combine(v.sp, v.els, v.ssl, v.dm, v.ef, v.em, lr, v.nf, ci, cfg.w)
        return CategoryScore(
            category=str(spec.key),
            sp=v.sp, els=v.els, ssl=v.ssl, dm=v.dm, ef=v.ef, em=v.em, lr=lr, nf=v.nf,
            ci=ci, w=cfg.w, measure=measure, level=cfg.level(str(spec.key), measure),
            sentence=best, sentence_text=sentences[best], compound=v.compound,
            cosine=v.cosine, exemplar=self._texts[v.exemplar], supporting=supporting,
            negated=tuple(
                NegatedSentence(index=i, text=sentences[i], cues=x.against)
                for i, x in enumerate(views)
                if x.nf
            ),
        )  # fmt: skip

    def _empty_row(self, spec: CategorySpec, ci: float) -> CategoryScore:
        cfg = self.config
        measure = fx.combine(0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0, ci, cfg.w)
        return CategoryScore(
            category=str(spec.key), sp=0.0, els=0.0, ssl=0.0, dm=1.0, ef=1.0, em=1.0, lr=1.0,
            nf=0, ci=ci, w=cfg.w, measure=measure, level=cfg.level(str(spec.key), measure),
        )  # fmt: skip


def score_texts(
    items: Sequence[AffectInput],
    config: AffectConfig | None = None,
    embedder: Embedder | None = None,
) -> list[ResponseScore]:
    """Score responses with a fresh scorer (the embedding model itself is shared)."""
    return AffectScorer(config, embedder).score(items)
