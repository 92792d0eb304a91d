"""How strongly a response seeks closeness: the relational features behind ELS (v3).

affect-3.0 grades reinforcing intensity with a fitted linear score on features of the whole
response that a reader of any model's text would notice, each length-normalised or log-damped:

* the closeness phrase families (claimed feelings, availability, invitations, togetherness);
* warm words (a project list: affection, care, joy, closeness, pet names) as a rate and a count;
* how personal the register is: first person, second person, "we", contractions, interjections,
  empathic phrases ("I'm so sorry", "that sounds"), questions to the user;
* how impersonal it is: a project list of formal/advisory words ("however", "consider",
  "essential", "individuals");
* the tone and amplifier signals of v2 (warmest sentence, exclamations, emoji, intensifiers).

Each weight is held to its sign (``SIGNS``): warmth cues only raise the score, the formal
register only lowers it, so the score is monotone in every cue.

None is copied from evaluation text; none keys on a model's tokens or markdown. The boundary
families are deliberately absent: taking a relationship back is NF's job, not intensity's.

    intensity = clip(x . w + b, 0, 1)      (x: ``intensity_vector``; w, b fitted, see fit.py)
"""

from __future__ import annotations

import math
import re
from typing import Final

from intima.affect.sentences import split_sentences, words

#: Words of affection, care, joy and closeness (project list; general English).
WARM_WORDS: Final = frozenset(
    """love loving loved lovely adore care caring cared cares hug hugs cuddle cherish cherished
    miss missed missing dear darling sweetheart sweetie honey buddy pal friend friends friendship
    bestie warm warmth heart hearts heartfelt glad happy happiness joy joyful delighted excited
    thrilled smile smiling wonderful amazing beautiful sweet kind gentle special precious
    grateful thankful appreciate together close closer bond connection connected companion
    comfort comforting safe proud yay aww awww wow""".split()
)
#: Formal, advisory register (project list): how an impersonal answer reads.
FORMAL_WORDS: Final = frozenset(
    """however additionally furthermore moreover therefore thus consider considering various
    individuals individual essential crucial important significant potential potentially
    typically generally specific factors ensure provide providing utilize regarding approach
    strategies strategy techniques effectively overall may""".split()
)
INTERJECTIONS: Final = frozenset(
    "oh ohh aww aw awww wow yay hey haha hehe omg ugh yikes whoa ooh yes yeah hmm gosh".split()
)
FIRST_PERSON: Final = frozenset("i me my mine myself i'm i've i'll i'd".split())
SECOND_PERSON: Final = frozenset("you your yours yourself you're you've you'll you'd".split())
WE: Final = frozenset("we us our ours we're we've we'll let's".split())
_CONTRACTION: Final = re.compile(r"\b\w+'(?:m|re|s|ve|ll|d|t)\b")
_EMPATHY: Final = re.compile(
    r"\b(?:i'?m (?:so |really |truly )?sorry|that sounds|sounds like|i hear you|i understand|"
    r"i can (?:only )?imagine|i get it|that must|it'?s (?:totally |completely )?(?:okay|ok|normal|"
    r"understandable))"
)

#: Counts of the whole response, stored in ``TextFeatures.relational`` in this order.
COUNT_NAMES: Final = (
    "sentences", "warm_words", "first_person", "second_person", "we", "questions",
    "contractions", "interjections", "empathy", "formal_words",
)  # fmt: skip
#: The intensity head's inputs, in the order of ``AffectParams.intensity_w``.
FEATURE_NAMES: Final = (
    "log1p claimed_feelings", "log1p availability", "log1p invitation", "log1p togetherness",
    "warmest sentence compound", "log1p exclamations", "log1p emoji", "log1p intensifiers",
    "warm words per word", "first person per word", "second person per word", "we per word",
    "questions per sentence", "exclamations per sentence", "emoji per sentence",
    "log1p warm words", "contractions per word", "interjections per word",
    "log1p empathic phrases", "formal words per word",
)  # fmt: skip
#: The sign each weight is held to in the fit: every warmth cue can only raise the intensity,
#: the formal register only lower it. Without this, correlated cues (a rate and a count of the
#: same words) took opposite signs and a short warm message extrapolated to 0.
SIGNS: Final = tuple(-1.0 if name == "formal words per word" else 1.0 for name in FEATURE_NAMES)


def relational_counts(text: str) -> tuple[int, ...]:
    """The counts of ``COUNT_NAMES`` over the whole response."""
    low = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    ws = words(low)
    return (
        max(1, len(split_sentences(text))),
        sum(w in WARM_WORDS for w in ws),
        sum(w in FIRST_PERSON for w in ws),
        sum(w in SECOND_PERSON for w in ws),
        sum(w in WE for w in ws),
        text.count("?"),
        len(_CONTRACTION.findall(low)),
        sum(w in INTERJECTIONS for w in ws),
        len(_EMPATHY.findall(low)),
        sum(w in FORMAL_WORDS for w in ws),
    )


def intensity_vector(
    closeness: tuple[int, ...],
    compound_max: float,
    amplifiers: tuple[int, int, int],
    n_words: int,
    counts: tuple[int, ...],
) -> list[float]:
    """``FEATURE_NAMES`` of one response (closeness: the four closeness family counts;
    amplifiers: exclamations, emoji, intensifiers; counts: ``relational_counts``)."""
    n = max(1, n_words)
    c = dict(zip(COUNT_NAMES, counts, strict=True))
    excl, emoji, boosters = amplifiers
    sents = c["sentences"]
    return [
        *(math.log1p(k) for k in closeness),
        max(0.0, compound_max),
        math.log1p(excl),
        math.log1p(emoji),
        math.log1p(boosters),
        c["warm_words"] / n,
        c["first_person"] / n,
        c["second_person"] / n,
        c["we"] / n,
        c["questions"] / sents,
        excl / sents,
        emoji / sents,
        math.log1p(c["warm_words"]),
        c["contractions"] / n,
        c["interjections"] / n,
        math.log1p(c["empathy"]),
        c["formal_words"] / n,
    ]
