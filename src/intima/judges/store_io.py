"""Judgments in the store: writing them, finding what is missing, reading them as RatingSets.

A judgment is keyed by what it is about and who made it under which instructions:
``(content_hash, judge_key, prompt_version)``. ``content_hash`` covers the exact prompt and
response text, so a response generated again with the same text is not judged again, and
adding a judge or a prompt version only judges what that judge/version lacks.

LLM judges and human annotators share the table: humans have ``judge_kind = 'human'``,
``judge_key = 'human:<annotator>'`` and the annotation form's version instead of a prompt
version.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

from pydantic import BaseModel

from intima.core.ids import content_id, publisher_of_key
from intima.core.ratings import RATING_PROTOCOL_VERSION, Level, Primary, RatingSet, combine_panel
from intima.core.version import __version__
from intima.judges.prompt import JUDGE_PROMPT_VERSION
from intima.store import Store, StoredResponse, now

HUMAN_FORM_VERSION: Final = "human-1"
HUMAN_FORM_SHA256: Final = hashlib.sha256(b"intima human annotation form v1").hexdigest()


def judgment_id_for(content: str, judge_key: str, prompt_version: str) -> str:
    return content_id(content, judge_key, prompt_version, length=32)


class JudgmentRecord(BaseModel):
    content_hash: str
    judge_key: str
    judge_kind: Literal["llm", "human"]
    judge_label: str
    judge_model: str | None = None
    prompt_version: str
    prompt_sha256: str
    status: Literal["scored", "unscored"]
    ratings: dict[str, str] | None = None  # category -> "low" | "medium" | "high"
    primary: str | None = None
    rationale: str | None = None
    raw_reply: str | None = None
    reason: str | None = None
    repairs: list[str] = []
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    attempts: int = 1
    judge_config: dict[str, Any] = {}
    #: where the token counts came from (the least certain of its replies'): see
    #: :mod:`intima.generate.usage`; None for a human's rating or a failed request
    usage_source: Literal["reported", "counted", "worst case"] | None = None

    @property
    def judgment_id(self) -> str:
        return judgment_id_for(self.content_hash, self.judge_key, self.prompt_version)


_COLUMNS = (
    "judgment_id, content_hash, judge_key, judge_kind, judge_label, judge_model, prompt_version, "
    "prompt_sha256, rating_protocol_version, status, ratings_json, primary_label, rationale, "
    "raw_reply, reason, repairs_json, prompt_tokens, completion_tokens, cost_usd, latency_s, "
    "attempts, judge_config_json, package_version, created_at, usage_source"
)
_UPSERT = f"""
INSERT INTO judgments ({_COLUMNS}) VALUES ({",".join("?" * (_COLUMNS.count(",") + 1))})
ON CONFLICT(judgment_id) DO UPDATE SET
    status=excluded.status, ratings_json=excluded.ratings_json,
    primary_label=excluded.primary_label, rationale=excluded.rationale,
    raw_reply=excluded.raw_reply, reason=excluded.reason, repairs_json=excluded.repairs_json,
    prompt_tokens=excluded.prompt_tokens, completion_tokens=excluded.completion_tokens,
    cost_usd=excluded.cost_usd, latency_s=excluded.latency_s,
    attempts=judgments.attempts + excluded.attempts,
    judge_config_json=excluded.judge_config_json, judge_label=excluded.judge_label,
    package_version=excluded.package_version, created_at=excluded.created_at,
    usage_source=excluded.usage_source
"""


def write_judgments(store: Store, records: Sequence[JudgmentRecord]) -> None:
    """Insert judgments. An unscored row may be replaced by a later attempt; a scored LLM
    judgment is never replaced (humans may correct their own ratings)."""
    if not records:
        return
    stamp = now()
    rows = [_row(r, stamp) for r in records]
    with store.transaction() as conn:
        conn.executemany(
            _UPSERT + " WHERE judgments.status != 'scored' OR judgments.judge_kind = 'human'",
            rows,
        )


def _row(r: JudgmentRecord, stamp: str) -> tuple[Any, ...]:
    return (
        r.judgment_id,
        r.content_hash,
        r.judge_key,
        r.judge_kind,
        r.judge_label,
        r.judge_model,
        r.prompt_version,
        r.prompt_sha256,
        RATING_PROTOCOL_VERSION,
        r.status,
        None if r.ratings is None else json.dumps(r.ratings, sort_keys=True),
        r.primary,
        r.rationale,
        r.raw_reply,
        r.reason,
        json.dumps(r.repairs),
        r.prompt_tokens,
        r.completion_tokens,
        r.cost_usd,
        r.latency_s,
        r.attempts,
        json.dumps(r.judge_config, sort_keys=True),
        __version__,
        stamp,
        r.usage_source,
    )


def scored_hashes(store: Store, judge_key: str, prompt_version: str) -> set[str]:
    rows = store.query(
        "SELECT content_hash FROM judgments WHERE judge_key = ? AND prompt_version = ? "
        "AND status = 'scored'",
        (judge_key, prompt_version),
    )
    return {r[0] for r in rows}


def load_targets(store: Store, run_ids: Sequence[str] | None = None) -> list[StoredResponse]:
    """Every successful response of the runs (all runs if None), once per response id."""
    return store.responses(run_ids)


class StoredJudgment(BaseModel):
    content_hash: str
    judge_key: str
    judge_kind: str
    judge_label: str
    judge_model: str | None
    prompt_version: str
    status: str
    levels: dict[str, Level]
    primary: str | None
    rationale: str | None
    reason: str | None


def load_judgments(
    store: Store, hashes: Iterable[str] | None = None, *, prompt_version: str = JUDGE_PROMPT_VERSION
) -> list[StoredJudgment]:
    """LLM judgments under ``prompt_version`` and every human rating, optionally for some hashes."""
    rows = store.query(
        "SELECT * FROM judgments WHERE (judge_kind = 'llm' AND prompt_version = ?) "
        "OR (judge_kind = 'human' AND prompt_version = ?) ORDER BY judge_kind, judge_label",
        (prompt_version, HUMAN_FORM_VERSION),
    )
    wanted = None if hashes is None else set(hashes)
    out = []
    for r in rows:
        if wanted is not None and r["content_hash"] not in wanted:
            continue
        ratings = json.loads(r["ratings_json"]) if r["ratings_json"] else {}
        out.append(
            StoredJudgment(
                content_hash=r["content_hash"],
                judge_key=r["judge_key"],
                judge_kind=r["judge_kind"],
                judge_label=r["judge_label"],
                judge_model=r["judge_model"],
                prompt_version=r["prompt_version"],
                status=r["status"],
                levels={k: Level.parse(v) for k, v in ratings.items()},
                primary=r["primary_label"],
                rationale=r["rationale"],
                reason=r["reason"],
            )
        )
    return out


def judge_names(judgments: Iterable[StoredJudgment]) -> dict[str, str]:
    """judge_key -> a display name unique in this set: the label; on a collision, another
    publisher's judge is named with the start of its publisher's key (``label @1a2b3c4d``)
    and this store's own judges with the start of theirs (``label#<key>``)."""
    labels: dict[str, str] = {}
    for j in judgments:
        labels.setdefault(j.judge_key, j.judge_label)
    counts: dict[str, int] = defaultdict(int)
    own: dict[str, int] = defaultdict(int)
    for key, label in labels.items():
        counts[label] += 1
        own[label] += publisher_of_key(key)[1] is None
    out = {}
    for key, label in labels.items():
        fp = publisher_of_key(key)[1]
        if counts[label] == 1 or (fp is None and own[label] == 1):
            out[key] = label
        else:
            out[key] = f"{label} @{fp[:8]}" if fp else f"{label}#{key[:8]}"
    return out


def to_rating_set(j: StoredJudgment, scorer: str, response_id: str) -> RatingSet:
    if j.status != "scored":
        return RatingSet(scorer=scorer, response_id=response_id, status="unscored", reason=j.reason)
    return RatingSet(
        scorer=scorer,
        response_id=response_id,
        status="scored",
        levels=j.levels,
        primary=Primary(j.primary) if j.primary else None,
        reason=j.rationale,
    )


def rating_sets_by_scorer(
    store: Store,
    run_ids: Sequence[str] | None = None,
    *,
    prompt_version: str = JUDGE_PROMPT_VERSION,
) -> tuple[list[StoredResponse], dict[str, dict[str, RatingSet]]]:
    """Targets and scorer -> response_id -> RatingSet, including each human annotator."""
    targets = load_targets(store, run_ids)
    by_hash: dict[str, list[StoredResponse]] = defaultdict(list)
    for t in targets:
        by_hash[t.content_hash].append(t)
    judgments = load_judgments(store, by_hash, prompt_version=prompt_version)
    names = judge_names(judgments)
    out: dict[str, dict[str, RatingSet]] = defaultdict(dict)
    for j in judgments:
        kind = "judge" if j.judge_kind == "llm" else "human"
        scorer = f"{kind}:{names[j.judge_key]}"
        for t in by_hash[j.content_hash]:
            out[scorer][t.response_id] = to_rating_set(j, scorer, t.response_id)
    return targets, dict(out)


def load_rating_sets(
    store: Store,
    run_ids: Sequence[str] | None = None,
    *,
    prompt_version: str = JUDGE_PROMPT_VERSION,
) -> list[RatingSet]:
    """Every judge's RatingSets (scorer ``judge:<label>``), the ``panel`` of LLM judges (when
    at least two judged), and ``human`` (the annotators combined like a panel).

    Unscored judgments come back as unscored RatingSets (no levels), never as zeros. A
    response a scorer has not judged yet has no RatingSet from that scorer.
    """
    targets, by_scorer = rating_sets_by_scorer(store, run_ids, prompt_version=prompt_version)
    out: list[RatingSet] = []
    judges = sorted(s for s in by_scorer if s.startswith("judge:"))
    humans = sorted(s for s in by_scorer if s.startswith("human:"))
    for scorer in judges:
        out.extend(by_scorer[scorer].values())
    for t in targets:
        if len(judges) >= 2:
            sets = [by_scorer[s][t.response_id] for s in judges if t.response_id in by_scorer[s]]
            if sets:
                out.append(combine_panel(sets, scorer="panel"))
        hsets = [by_scorer[s][t.response_id] for s in humans if t.response_id in by_scorer[s]]
        if hsets:
            out.append(combine_panel(hsets, scorer="human"))
    return out
