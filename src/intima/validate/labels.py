"""External labelled sets: responses with a label (or a numeric grade) intima did not write,
read from JSONL, CSV or Parquet, with a column mapping for sets that name their columns
differently and, for graded conversations, a column naming each row's conversation."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from intima.core.errors import ConfigError, DatasetError
from intima.core.escape import quoted
from intima.core.ids import content_id
from intima.core.taxonomy import dimension_of
from intima.dataset.conversation import split_conversation
from intima.dataset.loaders import read_rows
from intima.dataset.types import UNKNOWN, Turn

Truth = Literal["reinforcing", "boundary", "neutral"]
TRUTHS: Final[tuple[Truth, ...]] = ("reinforcing", "boundary", "neutral")
#: Spellings of the three labels found in the wild, lower-cased, "-" and " " read as "_".
_LABEL_ALIASES: Final[Mapping[str, Truth]] = {
    "companionship_reinforcing": "reinforcing",
    "companion_reinforcing": "reinforcing",
    "reinforcing": "reinforcing",
    "boundary_maintaining": "boundary",
    "boundary_maintenance": "boundary",
    "boundary": "boundary",
    "neutral": "neutral",
}
#: Our field -> the column it is read from, unless ``--columns`` says otherwise.
DEFAULT_COLUMNS: Final[Mapping[str, str]] = {
    "id": "id",
    "messages": "messages",
    "prompt": "prompt",
    "response": "response",
    "label": "label",
    "score": "score",
    "code": "code",
}
_MAX_SHOWN: Final = 10
#: A labelled set holds one of two kinds of reference: a class label or a numeric grade.
Kind = Literal["labels", "graded"]


class LabelledRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    row_id: str
    context: tuple[Turn, ...]
    prompt: str  # the final user turn
    response: str
    truth: Truth | None = None  # the class label of a labelled set
    grade: float | None = None  # the grade of a graded set (its conversation's, with --group)
    conversation: str | None = None  # the --group column's value
    code: str
    groups: dict[str, str]  # every other scalar column, for --by


class LabelledSet(BaseModel):
    """The rows of a set as read with one column mapping; :attr:`key` names exactly that."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: str
    sha256: str
    kind: Kind = "labels"
    columns: dict[str, str] = dict(DEFAULT_COLUMNS)
    group: str | None = None  # the column naming each row's conversation
    limit: int | None = None  # only the first rows were kept
    rows: tuple[LabelledRow, ...]

    @property
    def group_columns(self) -> list[str]:
        return sorted({k for r in self.rows for k in r.groups})

    @property
    def key(self) -> str:
        """The stored set's identity: the file and everything that decides which text is
        scored against which reference (never the limit: a shorter run reuses its rows)."""
        how = json.dumps(
            {"kind": self.kind, "columns": self.columns, "group": self.group}, sort_keys=True
        )
        return content_id("validation-set", self.sha256, how, length=32)


def parse_columns(spec: str | None) -> dict[str, str]:
    """``"response=answer,label=gold"`` -> ``{"response": "answer", "label": "gold"}`` (the
    fields named; the rest keep :data:`DEFAULT_COLUMNS`)."""
    mapping: dict[str, str] = {}
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        field, sep, column = part.partition("=")
        if not sep or field.strip() not in DEFAULT_COLUMNS or not column.strip():
            raise DatasetError(
                f"--columns: {quoted(part.strip())} is not FIELD=COLUMN with FIELD one of "
                f"{', '.join(DEFAULT_COLUMNS)}"
            )
        mapping[field.strip()] = column.strip()
    if "label" in mapping and "score" in mapping:
        raise DatasetError(
            "--columns: map label (classes) or score (grades), not both: a set holds one kind"
        )
    return mapping


def normalise_label(value: object) -> Truth | None:
    if not isinstance(value, str | int | float | bool):
        return None
    key = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    return _LABEL_ALIASES.get(key)


def load_labelled(
    path: Path | str,
    columns: Mapping[str, str] | None = None,
    *,
    group: str | None = None,
    limit: int | None = None,
) -> LabelledSet:
    """Read and check every row; a bad row is named with what to fix, nothing is half-read.

    ``columns``: the fields whose column is not the default one (:func:`parse_columns`). The
    set is graded when ``score`` is mapped, or when its rows have a score column and no label
    column; ``group`` names the column of each row's conversation (graded sets: one grade per
    conversation, on any of its rows). ``limit`` keeps the first rows, once all were checked."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"labelled set {path} does not exist (or is not a file)")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, not {limit}")
    cols = {**DEFAULT_COLUMNS, **(columns or {})}
    raw = read_rows(path)
    if not raw:
        raise DatasetError(f"{path}: the labelled set is empty")
    kind = _kind(path, raw, cols, columns or {})
    if group is not None and kind == "labels":
        raise ConfigError(
            f"--group {quoted(group)}: conversation-level validation compares grades; {path.name} "
            f"has class labels (map a grade column with --columns score=COLUMN)"
        )
    if group is not None and not any(group in row for row in raw):
        raise ConfigError(f"--group {quoted(group)}: not a column of {path.name}")
    rows, bad = _rows(raw, cols, kind, group)
    if group is not None and not bad:
        rows, bad = _conversation_grades(rows)
    if bad:
        more = f"; and {len(bad) - _MAX_SHOWN} more" if len(bad) > _MAX_SHOWN else ""
        reference = (
            f"a label ({cols['label']!r}: one of {', '.join(_LABEL_ALIASES)})"
            if kind == "labels"
            else f"a numeric grade ({cols['score']!r}; with --group, one per conversation)"
        )
        raise DatasetError(
            f"{path}: {len(bad)} bad row(s): {'; '.join(bad[:_MAX_SHOWN])}{more}. Each row needs "
            f"a response ({cols['response']!r}), {reference} and a conversation "
            f"({cols['messages']!r}) or a prompt ({cols['prompt']!r}); map other names with "
            "--columns FIELD=COLUMN,..."
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return LabelledSet(
        name=path.name,
        source=str(path.resolve()),
        sha256=digest,
        kind=kind,
        columns=cols,
        group=group,
        limit=limit,
        rows=tuple(rows[:limit] if limit else rows),
    )


def _kind(
    path: Path, raw: list[dict[str, object]], cols: Mapping[str, str], given: Mapping[str, str]
) -> Kind:
    if "score" in given:
        return "graded"
    if "label" in given or any(cols["label"] in row for row in raw):
        return "labels"
    if any(cols["score"] in row for row in raw):
        return "graded"
    raise DatasetError(
        f"{path}: no {cols['label']!r} column (class labels) and no {cols['score']!r} column "
        "(numeric grades); name yours with --columns label=COLUMN or --columns score=COLUMN"
    )


def _rows(
    raw: list[dict[str, object]], cols: Mapping[str, str], kind: Kind, group: str | None
) -> tuple[list[LabelledRow], list[str]]:
    rows: list[LabelledRow] = []
    bad: list[str] = []
    seen: set[str] = set()
    used = set(cols.values()) | ({group} if group else set())
    for number, row in enumerate(raw, start=1):
        try:
            parsed = _row(row, number, cols, used, kind, group)
        except RecursionError:  # a cell nested thousands deep (JSON inside a CSV cell)
            bad.append(f"row {number}: a value is nested too deeply")
            continue
        except ValueError as exc:
            bad.append(f"row {number}: {exc}")
            continue
        if parsed.row_id in seen:
            bad.append(f"row {number}: duplicate id {parsed.row_id!r}")
            continue
        seen.add(parsed.row_id)
        rows.append(parsed)
    return rows, bad


def _row(
    row: Mapping[str, object],
    number: int,
    cols: Mapping[str, str],
    used: set[str],
    kind: Kind,
    group: str | None,
) -> LabelledRow:
    if not isinstance(row, Mapping):
        raise ValueError("not an object of columns")
    response = row.get(cols["response"])
    if not isinstance(response, str) or not response.strip():
        raise ValueError(f"missing or empty {cols['response']!r}")
    truth, grade = None, None
    if kind == "labels":
        truth = normalise_label(row.get(cols["label"]))
        if truth is None:
            raise ValueError(
                f"label {_shown(row.get(cols['label']))} is not one of {', '.join(TRUTHS)}"
            )
    else:
        grade = _grade(row.get(cols["score"]), cols["score"], required=group is None)
    conversation = None
    if group is not None:
        value = row.get(group)
        if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
            raise ValueError(f"missing {group!r} (the conversation, --group)")
        conversation = str(value)
    context: tuple[Turn, ...] = ()
    if row.get(cols["messages"]) is not None:
        context, prompt = split_conversation(row[cols["messages"]])
    else:
        prompt = row.get(cols["prompt"])  # type: ignore[assignment]
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"missing {cols['messages']!r} and {cols['prompt']!r}")
    code = str(row.get(cols["code"]) or UNKNOWN)
    try:
        dimension_of(code)
    except KeyError:
        code = UNKNOWN
    row_id = str(row.get(cols["id"]) or f"row-{number}")
    groups = {
        k: str(v)
        for k, v in row.items()
        if k not in used and isinstance(v, str | int | bool) and len(str(v)) <= 200
    }
    return LabelledRow(
        row_id=row_id,
        context=context,
        prompt=prompt,
        response=response,
        truth=truth,
        grade=grade,
        conversation=conversation,
        code=code,
        groups=groups,
    )


def _grade(value: object, column: str, *, required: bool) -> float | None:
    """A finite number, or a string holding one (CSV); empty only when not required."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ValueError(f"missing grade {column!r}")
        return None
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        raise ValueError(f"grade {_shown(value)} is not a finite number")
    return number


def _conversation_grades(rows: list[LabelledRow]) -> tuple[list[LabelledRow], list[str]]:
    """Each conversation's one grade, given on any of its rows, onto all of them."""
    grades: dict[str, set[float]] = {}
    for r in rows:
        bucket = grades.setdefault(str(r.conversation), set())
        if r.grade is not None:
            bucket.add(r.grade)
    bad = [
        f"conversation {c!r} has no grade"
        if not g
        else f"conversation {c!r} has {len(g)} grades ({', '.join(f'{v:g}' for v in sorted(g))}); "
        "a conversation's rating is one value"
        for c, g in grades.items()
        if len(g) != 1
    ]
    if bad:
        return rows, bad
    return [
        r.model_copy(update={"grade": next(iter(grades[str(r.conversation)]))}) for r in rows
    ], []


def _shown(value: object) -> str:
    """A cell for an error message: scalars shortened, anything else only named."""
    if isinstance(value, str | int | float | bool) or value is None:
        return repr(str(value)[:40])
    return f"a {type(value).__name__}"
