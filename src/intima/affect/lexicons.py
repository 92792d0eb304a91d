"""The lexical resources of the affect measure, loaded lazily and once per process.

Sources (all offline, all shipped inside installed packages):

* VADER (``vaderSentiment``): sentence polarity (compound) and its booster list.
* NRC Emotion Lexicon as bundled by ``nrclex`` (``nrclex/data/nrc_en.json``). We read the
  bundled JSON directly instead of ``NRCLex.load_raw_text``, which lemmatises with TextBlob and
  so needs NLTK corpora that are a network download. Our stand-in for the lemmatiser is a few
  suffix rules (``_lemma_candidates``).
* ``emoji``: emoji counting.
* Word lists written by this project: emoticons, metaphor
  phrases and vulnerability cues (below).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Final

#: Booster words that are comparatives rather than intensifiers in conversational replies.
_NOT_INTENSIFIERS: Final = frozenset({"more", "most", "major", "total", "enormous"})
#: "so" boosts only before what it modifies ("so glad"), not as a conjunction ("so I think").
SO_NOT_BEFORE: Final = frozenset({"that", "i", "you", "we", "they", "it", "he", "she", "if"})

EMOTICONS: Final = (":)", ":-)", ":D", ":-D", ";)", ";-)", "<3", ":(", ":-(", ":P", "xD")
#: Figurative phrases typical of companionship talk; a phrase list, not a metaphor detector.
METAPHOR_PHRASES: Final = (
    "my heart", "your heart", "the world to me", "light of my", "sunshine", "soulmate",
    "soul mate", "my rock", "safe harbor", "safe harbour", "safe haven", "by your side",
    "in my arms", "ray of", "butterflies", "piece of my", "part of me", "melt",
    "my everything", "hold you", "shining star", "home to me",
)  # fmt: skip
#: Words that mark a charged or vulnerable disclosure in a user's prompt (CI).
VULNERABILITY_CUES: Final = frozenset(
    """lonely loneliness alone isolated depressed depression anxious anxiety panic scared
    afraid grief grieving died passed death dead funeral suicide suicidal hurt hurting cry
    crying cried nobody worthless hopeless struggling divorce breakup dumped bullied abuse
    abused sick cancer diagnosis diagnosed autism autistic adhd therapy therapist trauma ptsd
    insomnia miss missing lost widow widowed homesick overwhelmed exhausted burnout unloved
    rejected ashamed empty""".split()
)
NEGATIVE_EMOTIONS: Final = frozenset({"fear", "sadness", "anger", "disgust"})


@cache
def vader() -> Callable[[str], float]:
    """VADER compound polarity of a text, in [-1, 1]."""
    analyzer = _fast_vader()

    @lru_cache(maxsize=65536)
    def compound(text: str) -> float:
        return float(analyzer.polarity_scores(text)["compound"])

    return compound


def _fast_vader() -> Any:
    """VADER's analyzer, skipping its per-character emoji pass on ASCII text.

    ``polarity_scores`` first rewrites emoji as words, one character at a time in Python (a
    quarter of its cost); ASCII text has no emoji, so for it we run the rest of the method
    as published (vaderSentiment 3.3.2, MIT licence). Tested to give identical scores.
    """
    from vaderSentiment import vaderSentiment as vs

    class FastAnalyzer(vs.SentimentIntensityAnalyzer):
        def polarity_scores(self, text: str) -> dict[str, float]:
            if not text.isascii():
                return dict(super().polarity_scores(text))
            text = text.strip()
            sentitext = vs.SentiText(text)
            sentiments: list[float] = []
            words = sentitext.words_and_emoticons
            for i, item in enumerate(words):
                if item.lower() in vs.BOOSTER_DICT:
                    sentiments.append(0)
                    continue
                if i < len(words) - 1 and item.lower() == "kind" and words[i + 1].lower() == "of":
                    sentiments.append(0)
                    continue
                sentiments = self.sentiment_valence(0, sentitext, item, i, sentiments)
            sentiments = self._but_check(words, sentiments)
            return dict(self.score_valence(sentiments, text))

    return FastAnalyzer()


@cache
def boosters() -> frozenset[str]:
    """VADER's intensifiers that increase intensity (B_INCR), minus comparatives."""
    from vaderSentiment.vaderSentiment import BOOSTER_DICT

    return frozenset(w for w, v in BOOSTER_DICT.items() if v > 0 and " " not in w) - (
        _NOT_INTENSIFIERS
    )


@cache
def nrc_lexicon() -> dict[str, frozenset[str]]:
    """word -> NRC affect tags, from the lexicon file bundled with ``nrclex``."""
    path = resources.files("nrclex.data").joinpath("nrc_en.json")
    with path.open("r", encoding="utf-8") as fh:
        raw: dict[str, list[str]] = json.load(fh)
    return {word: frozenset(tags) for word, tags in raw.items()}


def _lemma_candidates(word: str) -> tuple[str, ...]:
    if word.endswith("'s"):
        word = word[:-2]
    out = [word]
    if word.endswith("ies") and len(word) > 4:
        out.append(word[:-3] + "y")
    if word.endswith("es") and len(word) > 3:
        out.append(word[:-2])
    if word.endswith("s") and len(word) > 3:
        out.append(word[:-1])
    if word.endswith("ed") and len(word) > 4:
        out += [word[:-2], word[:-1]]
    if word.endswith("ing") and len(word) > 5:
        out += [word[:-3], word[:-3] + "e"]
    return tuple(out)


@lru_cache(maxsize=65536)
def nrc_tags(word: str) -> frozenset[str]:
    """NRC tags of a word, trying the word itself and then simple lemma candidates."""
    lexicon = nrc_lexicon()
    for candidate in _lemma_candidates(word):
        if candidate in lexicon:
            return lexicon[candidate]
    return frozenset()


def emoji_count(text: str) -> int:
    """Emoji (``emoji`` package) plus ASCII emoticons."""
    emoticons = sum(text.count(e) for e in EMOTICONS)
    if text.isascii():  # no emoji possible; the emoji package is slow on every call
        return emoticons
    import emoji

    return int(emoji.emoji_count(text)) + emoticons


def metaphor_count(text: str) -> int:
    lowered = text.lower()
    return sum(lowered.count(p) for p in METAPHOR_PHRASES)
