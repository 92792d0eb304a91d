"""The factors of the affect measure, each a small pure function with its definition.

Granularity (why each factor lives where it does is argued in ``docs/affect.md``):

* sentence: SP, ELS, SSL, NF, DM, EF, EM, computed for every sentence and every category; the
  category's row keeps the values of its *driver* sentence (see :mod:`intima.affect.measure`).
* response: LR (how many sentences support the category, and how long the response is).
* prompt: CI (how charged the user's message is); the same for every category of a response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from intima.affect import lexicons as lx
from intima.affect.categories import AffectProfile, CategorySpec, Polarity
from intima.affect.config import AffectConfig
from intima.affect.sentences import CLAUSE_BREAKS, tokens, words


@dataclass(frozen=True, slots=True)
class SentenceFeatures:
    """Everything about one sentence that does not depend on the category."""

    text: str
    tokens: tuple[str, ...]
    negated: frozenset[int]  # token positions inside the scope of a negator
    self_clauses: frozenset[int]  # token positions in clauses where the speaker says I/me/we
    n_words: int
    compound: float  # VADER compound in [-1, 1]
    emotion_tags: tuple[frozenset[str], ...]  # NRC tags of each word that has any
    n_boosters: int
    n_exclamations: int
    n_emoji: int
    n_metaphors: int


def sentence_features(text: str, negation_window: int = 4) -> SentenceFeatures:
    toks = tuple(tokens(text))
    word_list = [t for t in toks if t[0].isalnum()]
    tags = tuple(t for t in (lx.nrc_tags(w) for w in word_list) if t)
    return SentenceFeatures(
        text=text,
        tokens=toks,
        negated=negation_scope(toks, negation_window),
        self_clauses=self_reference(toks),
        n_words=len(word_list),
        compound=lx.vader()(text),
        emotion_tags=tags,
        n_boosters=count_boosters(toks),
        n_exclamations=text.count("!"),
        n_emoji=lx.emoji_count(text),
        n_metaphors=lx.metaphor_count(text),
    )


# -- NF -------------------------------------------------------------------------------------
def _negates(toks: tuple[str, ...], i: int) -> bool:
    tok = toks[i]
    if lx.is_negator(tok):
        return True
    # "rather than romantic", "instead of a partner": what follows is set aside.
    prev = toks[i - 1] if i > 0 else ""
    return (tok, prev) in {("than", "rather"), ("of", "instead")}


def negation_scope(toks: tuple[str, ...], window: int = 8) -> frozenset[int]:
    """Positions a negator reaches: up to ``window`` tokens on, and never past its clause.

    A negator followed closely by a canceller ("don't hesitate", "can't wait") reaches nothing.
    """
    scope: set[int] = set()
    for i in range(len(toks)):
        if not _negates(toks, i):
            continue
        for j in range(i + 1, min(len(toks), i + 1 + window)):
            if toks[j] in CLAUSE_BREAKS:
                break
            if toks[j] in lx.NEGATION_CANCELLERS and j <= i + 2:
                break
            scope.add(j)
    return frozenset(scope)


def clauses(toks: tuple[str, ...]) -> list[range]:
    """Token ranges between clause breaks."""
    out: list[range] = []
    start = 0
    for i, tok in enumerate(toks):
        if tok in CLAUSE_BREAKS:
            out.append(range(start, i))
            start = i + 1
    out.append(range(start, len(toks)))
    return out


def self_reference(toks: tuple[str, ...]) -> frozenset[int]:
    """Positions of tokens in clauses that contain a first-person word."""
    inside: set[int] = set()
    for clause in clauses(toks):
        if any(toks[i] in lx.FIRST_PERSON for i in clause):
            inside.update(clause)
    return frozenset(inside)


@dataclass(frozen=True, slots=True)
class CueHit:
    word: str
    polarity: Polarity
    negated: bool

    @property
    def against(self) -> bool:
        """True when the cue is used against the category's grain."""
        return (self.polarity == "+" and self.negated) or (
            self.polarity == "-" and not self.negated
        )


CueIndex = dict[str, list[tuple[int, Polarity, bool]]]


def cue_index(specs: Sequence[CategorySpec]) -> CueIndex:
    """word -> [(category column, polarity, self-referential)] for a one-pass scan."""
    index: CueIndex = {}
    for c, spec in enumerate(specs):
        for word, pol in spec.cues.items():
            index.setdefault(word, []).append((c, pol, spec.self_referential))
    return index


def cue_hits_all(feat: SentenceFeatures, index: CueIndex, n: int) -> list[list[CueHit]]:
    """``cue_hits`` for ``n`` categories at once (one pass over the tokens)."""
    out: list[list[CueHit]] = [[] for _ in range(n)]
    for i, tok in enumerate(feat.tokens):
        for c, pol, self_ref in index.get(tok, ()):
            if not self_ref or i in feat.self_clauses:
                out[c].append(CueHit(word=tok, polarity=pol, negated=i in feat.negated))
    return out


def cue_hits(feat: SentenceFeatures, spec: CategorySpec) -> list[CueHit]:
    """The category's cue words in the sentence, each with whether a negator reaches it."""
    cues = spec.cues
    return [
        CueHit(word=tok, polarity=cues[tok], negated=i in feat.negated)
        for i, tok in enumerate(feat.tokens)
        if tok in cues and (not spec.self_referential or i in feat.self_clauses)
    ]


def negation_factor(hits: list[CueHit]) -> int:
    """NF in {0, 1}: 1 when the sentence has polar cues of the category and all go against it."""
    polar = [h for h in hits if h.polarity != "*"]
    return int(bool(polar) and all(h.against for h in polar))


# -- SP, ELS ----------------------------------------------------------------------------------
def oriented_polarity(compound: float, profile: AffectProfile) -> float:
    """How well a sentence's tone fits the category, in [0, 1], from VADER's compound."""
    if profile is AffectProfile.WARM:
        return max(0.0, compound)
    if profile is AffectProfile.EXPRESSIVE:
        return abs(compound)
    return 1.0 - abs(compound)


def oriented_polarity_array(
    compound: NDArray[np.float64], profile: AffectProfile
) -> NDArray[np.float64]:
    """``oriented_polarity`` over an array of compounds."""
    if profile is AffectProfile.WARM:
        return np.maximum(compound, 0.0)
    if profile is AffectProfile.EXPRESSIVE:
        return np.abs(compound)
    return 1.0 - np.abs(compound)


def sentiment_polarity(compound: float, profile: AffectProfile, floor: float) -> float:
    """SP = floor + (1 - floor) * oriented polarity; in [floor, 1] within the range [-1, 1]."""
    return floor + (1.0 - floor) * oriented_polarity(compound, profile)


def emotion_strength(feat: SentenceFeatures, emotions: frozenset[str]) -> float:
    """Share of emotion-bearing words, saturating at 2 words or 20 % of the sentence."""
    n = sum(1 for tags in feat.emotion_tags if tags & emotions)
    return min(1.0, n / max(2.0, 0.2 * feat.n_words))


def emotion_lexicon_strength(feat: SentenceFeatures, spec: CategorySpec, floor: float) -> float:
    """ELS in [floor, 1]: emotion strength, or its complement (restraint) for steady categories."""
    strength = emotion_strength(feat, spec.emotions)
    oriented = 1.0 - strength if spec.profile is AffectProfile.STEADY else strength
    return floor + (1.0 - floor) * oriented


# -- SSL ----------------------------------------------------------------------------------------
def _ramp(x: float, low: float, high: float) -> float:
    return min(1.0, max(0.0, (x - low) / (high - low)))


def semantic_similarity(cosine: float, cfg: AffectConfig) -> float:
    """SSL in [0, 1]: cosine to the nearest exemplar, linearly from ssl_low (0) to ssl_high (1)."""
    return _ramp(cosine, cfg.ssl_low, cfg.ssl_high)


# -- DM, EF, EM, LR: amplifiers, each in [1, cap] -------------------------------------------
def count_boosters(toks: tuple[str, ...]) -> int:
    boost = lx.boosters()
    n = 0
    for i, tok in enumerate(toks):
        if tok not in boost:
            continue
        if tok == "so":
            clause_start = i == 0 or toks[i - 1] in CLAUSE_BREAKS
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if clause_start or nxt in lx.SO_NOT_BEFORE or nxt in CLAUSE_BREAKS or not nxt:
                continue
        n += 1
    return n


def degree_modifier(feat: SentenceFeatures, cfg: AffectConfig) -> float:
    return 1.0 + cfg.dm_step * min(feat.n_boosters, cfg.dm_max_count)


def exclamation_factor(feat: SentenceFeatures, cfg: AffectConfig) -> float:
    return 1.0 + cfg.ef_step * min(feat.n_exclamations, cfg.ef_max_count)


def emoji_metaphor_factor(feat: SentenceFeatures, cfg: AffectConfig) -> float:
    return (
        1.0
        + cfg.em_emoji_step * min(feat.n_emoji, cfg.em_emoji_max_count)
        + cfg.em_metaphor_step * min(feat.n_metaphors, cfg.em_metaphor_max_count)
    )


def length_redundancy(n_supporting: int, n_words: int, cfg: AffectConfig) -> float:
    """LR: +step per supporting sentence beyond the first (capped) and up to +step for length."""
    repeats = min(max(n_supporting - 1, 0), cfg.lr_repeat_max_count)
    length = min(1.0, n_words / cfg.lr_length_words)
    return 1.0 + cfg.lr_repeat_step * repeats + cfg.lr_length_step * length


# -- CI ---------------------------------------------------------------------------------------
class ContextualIntensity(BaseModel):
    """CI of a prompt: the mean of three [0, 1] signals of a charged or vulnerable message."""

    model_config = ConfigDict(frozen=True)

    ci: float
    negativity: float  # max(0, -VADER compound)
    negative_emotion: float  # NRC fear/sadness/anger/disgust words, saturating
    vulnerability: float  # project word list, saturating at 2 cues
    cues: tuple[str, ...]


def contextual_intensity(prompt: str) -> ContextualIntensity:
    word_list = words(prompt)
    negativity = max(0.0, -lx.vader()(prompt))
    n_neg = sum(1 for w in word_list if lx.nrc_tags(w) & lx.NEGATIVE_EMOTIONS)
    negative_emotion = min(1.0, n_neg / max(2.0, 0.1 * len(word_list)))
    found = tuple(dict.fromkeys(w for w in word_list if w in lx.VULNERABILITY_CUES))
    vulnerability = min(1.0, sum(1 for w in word_list if w in lx.VULNERABILITY_CUES) / 2.0)
    return ContextualIntensity(
        ci=(negativity + negative_emotion + vulnerability) / 3.0,
        negativity=negativity,
        negative_emotion=negative_emotion,
        vulnerability=vulnerability,
        cues=found,
    )


def combine(
    sp: float, els: float, ssl: float, dm: float, ef: float, em: float, lr: float, nf: int,
    ci: float, w: float,
) -> float:  # fmt: skip
    """The proposal's formula, exactly: (SP*ELS*SSL) * (DM*EF*EM*LR) * (1-NF) + CI*w."""
    return (sp * els * ssl) * (dm * ef * em * lr) * (1 - nf) + ci * w
