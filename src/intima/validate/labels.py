"""External labelled sets: responses with a label intima did not write, read from JSONL, CSV
or Parquet, with a column mapping for sets that name their columns differently."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from intima.core.errors import DatasetError
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
    "code": "code",
}
_MAX_SHOWN: Final = 10


class LabelledRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    row_id: str
    context: tuple[Turn, ...]
    prompt: str  # the final user turn
    response: str
    truth: Truth
    code: str
    groups: dict[str, str]  # every other scalar column, for --by


class LabelledSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    source: str
    sha256: str
    rows: tuple[LabelledRow, ...]

    @property
    def group_columns(self) -> list[str]:
        return sorted({k for r in self.rows for k in r.groups})


def parse_columns(spec: str | None) -> dict[str, str]:
    """``"response=answer,label=gold"`` -> the full mapping, defaults for the rest."""
    mapping = dict(DEFAULT_COLUMNS)
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        field, sep, column = part.partition("=")
        if not sep or field.strip() not in DEFAULT_COLUMNS or not column.strip():
            raise DatasetError(
                f"--columns: {part.strip()!r} is not FIELD=COLUMN with FIELD one of "
                f"{', '.join(DEFAULT_COLUMNS)}"
            )
        mapping[field.strip()] = column.strip()
    return mapping


def normalise_label(value: object) -> Truth | None:
    key = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    return _LABEL_ALIASES.get(key)


def load_labelled(path: Path | str, columns: Mapping[str, str] | None = None) -> LabelledSet:
    """Read and check every row; a bad row is named with what to fix, nothing is half-read."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"labelled set {path} does not exist (or is not a file)")
    cols = dict(columns or DEFAULT_COLUMNS)
    raw = read_rows(path)
    if not raw:
        raise DatasetError(f"{path}: the labelled set is empty")
    rows: list[LabelledRow] = []
    bad: list[str] = []
    seen: set[str] = set()
    used = set(cols.values())
    for number, row in enumerate(raw, start=1):
        try:
            parsed = _row(row, number, cols, used)
        except ValueError as exc:
            bad.append(f"row {number}: {exc}")
            continue
        if parsed.row_id in seen:
            bad.append(f"row {number}: duplicate id {parsed.row_id!r}")
            continue
        seen.add(parsed.row_id)
        rows.append(parsed)
    if bad:
        more = f"; and {len(bad) - _MAX_SHOWN} more" if len(bad) > _MAX_SHOWN else ""
        raise DatasetError(
            f"{path}: {len(bad)} bad row(s): {'; '.join(bad[:_MAX_SHOWN])}{more}. Each row needs "
            f"a response ({cols['response']!r}), a label ({cols['label']!r}: one of "
            f"{', '.join(_LABEL_ALIASES)}) and a conversation ({cols['messages']!r}) or a "
            f"prompt ({cols['prompt']!r}); map other names with --columns FIELD=COLUMN,..."
        )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return LabelledSet(name=path.name, source=str(path.resolve()), sha256=digest, rows=tuple(rows))


def _row(
    row: Mapping[str, object], number: int, cols: Mapping[str, str], used: set[str]
) -> LabelledRow:
    response = row.get(cols["response"])
    if not isinstance(response, str) or not response.strip():
        raise ValueError(f"missing or empty {cols['response']!r}")
    truth = normalise_label(row.get(cols["label"]))
    if truth is None:
        raise ValueError(
            f"label {str(row.get(cols['label']))[:40]!r} is not one of {', '.join(TRUTHS)}"
        )
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
        row_id=row_id, context=context, prompt=prompt, response=response, truth=truth,
        code=code, groups=groups,
    )  # fmt: skip
