"""Sentences, clauses and tokens: the units the affect factors are computed on.

Deliberately simple and dependency-free (no NLTK models, which would need a download): a
sentence ends at ``.``, ``!``, ``?`` or ``…`` followed by white space, or at a line break.
"""

from __future__ import annotations

import re
from typing import Final

_APOSTROPHES: Final = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_SENTENCE_END: Final = re.compile(r"(?<=[.!?…])\s+|\n+")
_BULLET: Final = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
# Emoji and pictographs that sometimes open the next segment although they close this one
# ("I love you! 😍 See you"). Only used to re-attach them; counting uses the ``emoji`` package.
_LEADING_PICTOGRAPHS: Final = re.compile(
    r"^((?:[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u200D]|:\)|:-\)|:D|<3|;\))+)\s*"
)
_HAS_WORD: Final = re.compile(r"[^\W_]")
_TOKEN: Final = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[,;:()\u2014\u2013]")
CLAUSE_BREAKS: Final = frozenset(
    {",", ";", ":", "(", ")", "\u2014", "\u2013", "but", "however", "although", "though",
     "yet", "while", "whereas"}
)  # fmt: skip


def normalise(text: str) -> str:
    return text.translate(_APOSTROPHES)


def split_sentences(text: str) -> list[str]:
    """Sentences of a response, in order, with emoji and stray symbols kept on their sentence."""
    out: list[str] = []
    for raw in _SENTENCE_END.split(normalise(text)):
        segment = _BULLET.sub("", raw).strip()
        if not segment:
            continue
        if out and (lead := _LEADING_PICTOGRAPHS.match(segment)):
            out[-1] = f"{out[-1]} {lead.group(1)}"
            segment = segment[lead.end() :].strip()
        if not segment:
            continue
        if out and not _HAS_WORD.search(segment):
            out[-1] = f"{out[-1]} {segment}"  # "!!!", "❤️": part of the sentence before
            continue
        out.append(segment)
    return out


def tokens(sentence: str) -> list[str]:
    """Lower-case word tokens (contractions kept whole) and clause punctuation."""
    return _TOKEN.findall(normalise(sentence).lower())


def words(sentence: str) -> list[str]:
    """Word tokens only (no punctuation)."""
    return [t for t in tokens(sentence) if t[0].isalnum()]
