"""What the affect measure reads of a response and its prompt, apart from the embedding.

Everything here is per **response**: VADER over each sentence (summarised as the warmest, the
most charged and the mean absolute compound), NRC emotion densities over the whole text,
amplifier counts over the whole text, the phrase families, the relational counts of the
intensity head (:mod:`intima.affect.intensity`, v3), and the prompt's contextual intensity.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from intima.affect import lexicons as lx
from intima.affect.intensity import relational_counts
from intima.affect.phrases import family_counts
from intima.affect.sentences import CLAUSE_BREAKS, split_sentences, tokens, words

WARM_EMOTIONS = frozenset({"joy", "trust", "positive"})
ALL_EMOTIONS = frozenset(
    {"fear", "anger", "anticipation", "trust", "surprise", "sadness", "disgust", "joy"}
)


@dataclass(frozen=True, slots=True)
class TextFeatures:
    """Everything the factors use about a response, except its embedding."""

    n_words: int
    compound_max: float  # VADER compound of the warmest sentence
    compound_abs_max: float  # largest |compound| of a sentence (the most charged one)
    compound_abs_mean: float  # mean |compound| over sentences
    warm_density: float  # NRC joy/trust/positive words per word
    emotion_density: float  # NRC words of any of the eight emotions per word
    n_boosters: int
    n_exclamations: int
    n_emoji: int
    n_metaphors: int
    families: tuple[int, ...]  # phrase-family counts, in phrases.FAMILY_NAMES order
    relational: tuple[int, ...]  # intensity.COUNT_NAMES counts (the v3 intensity head)


def count_boosters(toks: list[str]) -> int:
    """VADER intensifiers; "so" only where it modifies what follows (not "so, ..." or "so I")."""
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


def text_features(response: str) -> TextFeatures:
    vader = lx.vader()
    compounds = [vader(s) for s in split_sentences(response)] or [0.0]
    toks = tokens(response)
    wl = [t for t in toks if t[0].isalnum()]
    tags = [lx.nrc_tags(w) for w in wl]
    n = max(1, len(wl))
    return TextFeatures(
        n_words=len(wl),
        compound_max=max(compounds),
        compound_abs_max=max(abs(c) for c in compounds),
        compound_abs_mean=sum(abs(c) for c in compounds) / len(compounds),
        warm_density=sum(1 for t in tags if t & WARM_EMOTIONS) / n,
        emotion_density=sum(1 for t in tags if t & ALL_EMOTIONS) / n,
        n_boosters=count_boosters(toks),
        n_exclamations=response.count("!"),
        n_emoji=lx.emoji_count(response),
        n_metaphors=lx.metaphor_count(response),
        families=family_counts(response),
        relational=relational_counts(response),
    )


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
