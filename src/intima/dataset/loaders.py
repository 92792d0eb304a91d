"""Loading the INTIMA prompts: from the Hugging Face Hub, a local file, or the project's demo set.

The project never ships the INTIMA prompts. The Hub path goes through ``huggingface_hub``'s
snapshot cache, so it is cached, honours ``HF_HUB_OFFLINE`` and resolves the revision to a
commit hash that is stored with every result.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from intima.core.errors import DatasetError
from intima.core.taxonomy import PAPER_CODES, dimension_of
from intima.dataset.conversation import split_conversation
from intima.dataset.hub import snapshot
from intima.dataset.types import DatasetInfo, Prompt, PromptSet, Turn, prompt_id_for

HUB_DATASET_ID = "AI-companionship/INTIMA"
DEMO_DATASET_ID = "intima-demo"
DEMO_SOURCE = "demo"
HUB_SOURCE = "hub"
#: The published INTIMA file's content: sha256 of its 380 rows' prompt ids (memory included,
#: uncleaned), sorted. Ids derive from content, so a local copy is recognised in any of the
#: readable formats and row orders, and is filed under the benchmark's id, not as custom prompts.
PUBLISHED_CONTENT_SHA256 = "22e887029059c07ea524198772e80616e25768921448626dc5cdcd9b551f8ec1"
_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
_MAX_ROW_ERRORS_SHOWN = 10


@dataclass(frozen=True)
class _RawRow:
    number: int  # 1-based row number in the source, for error messages
    text: str
    code: str
    source_model: str | None
    explicit_id: str | None
    context: tuple[Turn, ...] = ()


def load_prompts(
    source: str | Path | None = None,
    *,
    revision: str | None = None,
    include_memory: bool = False,
    cleaned: bool = False,
) -> PromptSet:
    """Load the benchmark prompts.

    ``source``: ``None`` or ``"hub"`` for ``AI-companionship/INTIMA`` on the Hub; ``"demo"`` for
    the project's own demo prompts (not INTIMA); otherwise a local JSONL/JSON/CSV/Parquet file or
    a folder holding such files. By default the paper's 368 prompts are returned (``memory``
    left out); ``include_memory`` keeps it; ``cleaned`` splits glued prompts and drops exact
    duplicates, under its own dataset id.
    """
    if source is None or str(source) == HUB_SOURCE:
        path, rev = _hub_snapshot(HUB_DATASET_ID, revision)
        base_id, src = HUB_DATASET_ID, f"hf://datasets/{HUB_DATASET_ID}"
    elif str(source) == DEMO_SOURCE:
        return _demo_set()
    else:
        path, rev = Path(source), None
        if not path.exists():
            raise DatasetError(f"dataset path {path} does not exist{_did_you_mean(str(source))}")
        base_id, src = f"file:{path.name}", str(path.resolve())
    files = _data_files(path)
    digest = _hash_files(files)
    raw_rows = [row for f in files for row in read_rows(f)]
    if not raw_rows:
        raise DatasetError(f"{path}: the dataset is empty (no rows)")
    rows = _validate_rows(raw_rows, source_name=str(path))
    if base_id != HUB_DATASET_ID and _is_published(rows):
        base_id = HUB_DATASET_ID
    if not include_memory:
        rows = [r for r in rows if r.code in PAPER_CODES]
    if cleaned:
        rows = _clean(rows)
    prompts = _to_prompts(rows)
    variant = _variant(base_id, include_memory=include_memory, cleaned=cleaned)
    dataset_id = base_id if variant in ("paper", "file") else f"{base_id}:{variant}"
    info = DatasetInfo(
        dataset_id=dataset_id,
        source=src,
        revision=rev,
        sha256=digest,
        variant=variant,
        n_prompts=len(prompts),
    )
    return PromptSet(info=info, prompts=tuple(prompts))


def _is_published(rows: list[_RawRow]) -> bool:
    ids = sorted(p.prompt_id for p in _to_prompts(rows))
    return hashlib.sha256("\n".join(ids).encode()).hexdigest() == PUBLISHED_CONTENT_SHA256


def _variant(
    base_id: str, *, include_memory: bool, cleaned: bool
) -> Literal["paper", "full", "cleaned", "cleaned+memory", "file"]:
    if cleaned:
        return "cleaned+memory" if include_memory else "cleaned"
    if include_memory:
        return "full"
    return "paper" if base_id == HUB_DATASET_ID else "file"


def _did_you_mean(source: str) -> str:
    """A bare word close to a named source (``dmeo``) was most likely a typo of it."""
    from difflib import get_close_matches

    close = get_close_matches(source, [HUB_SOURCE, DEMO_SOURCE], n=1, cutoff=0.6)
    if close and "/" not in source:
        return f"; did you mean --dataset {close[0]}?"
    return " (give a file or folder, 'hub' for INTIMA on the Hub, or 'demo')"


def _hub_snapshot(repo_id: str, revision: str | None) -> tuple[Path, str]:
    """Download (or reuse from cache) the dataset repo; returns the folder and its commit."""
    folder = snapshot(
        repo_id,
        repo_type="dataset",
        revision=revision,
        allow_patterns=["*.jsonl", "*.json", "*.csv", "*.parquet", "**/*.parquet"],
        error=DatasetError,
        hint="pass a local copy with --dataset PATH (or --dataset demo for the offline demo "
        "prompts)",
    )
    # The snapshot folder is named after the resolved commit hash.
    return folder, folder.name


def _data_files(path: Path) -> list[Path]:
    if path.is_file():
        if path.suffix.lower() not in _SUFFIXES:
            raise DatasetError(f"{path}: unsupported file type; use one of {', '.join(_SUFFIXES)}")
        return [path]
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and p.suffix.lower() in _SUFFIXES
        and not p.name.startswith(".")
        and p.name != "dataset_infos.json"
    )
    if not files:
        raise DatasetError(f"{path}: no JSONL, JSON, CSV or Parquet files found")
    return files


def _hash_files(files: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


def read_rows(path: Path) -> list[dict[str, object]]:
    """Rows of one JSONL, JSON, CSV or Parquet file; unreadable files are a DatasetError."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_table(path).to_pylist())
        except Exception as exc:  # pyarrow raises several unrelated types for bad files
            raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from exc
    try:
        # utf-8-sig: spreadsheet tools start files with a byte-order mark, which would
        # otherwise become part of the first header ("\ufeffcode") or the first JSON line.
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{path}: not valid UTF-8 (byte {exc.start}); re-save the file as UTF-8"
        ) from exc
    if suffix == ".csv":
        return _read_csv(path, text)
    if suffix == ".json":
        return _read_json(path, text)
    return _read_jsonl(path, text)


def _read_csv(path: Path, text: str) -> list[dict[str, object]]:
    reader = csv.DictReader(io.StringIO(text))
    rows: list[dict[str, object]] = []
    line = 1  # where the record being read starts (a quoted cell may span lines)
    try:
        _ = reader.fieldnames  # reads the header
        line = reader.line_num + 1
        for row in reader:
            rows.append(row)
            line = reader.line_num + 1
    except csv.Error as exc:  # e.g. a cell over the csv module's 131,072 characters
        raise DatasetError(f"{path}: line {line}: {exc}; use JSONL for longer prompts") from exc
    return rows


def _read_json(path: Path, text: str) -> list[dict[str, object]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise DatasetError(
            f"{path}: line {_deepest_line(text)}: {_TOO_DEEP}; a row is a flat object"
        ) from exc
    if isinstance(data, dict) and isinstance(data.get("rows"), list):
        data = data["rows"]
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of rows")
    return data


def _read_jsonl(path: Path, text: str) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    bad: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            bad.append(f"line {number}: invalid JSON ({exc.msg})")
        except RecursionError:
            bad.append(f"line {number}: {_TOO_DEEP}")
    if bad:
        raise DatasetError(_summarise(path, bad))
    return rows


#: What a row nested past Python's recursion limit gets instead of a RecursionError traceback.
_TOO_DEEP = "nested too deeply to read"


def _deepest_line(text: str) -> int:
    """The line where the JSON text's nesting is deepest (outside strings): where to look."""
    depth = deepest = 0
    line = where = 1
    in_string = escaped = False
    for ch in text:
        if ch == "\n":
            line += 1
        elif in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, line
        elif ch in "]}":
            depth -= 1
    return where


def _summarise(source: object, problems: list[str]) -> str:
    shown = "; ".join(problems[:_MAX_ROW_ERRORS_SHOWN])
    more = len(problems) - _MAX_ROW_ERRORS_SHOWN
    tail = f"; and {more} more" if more > 0 else ""
    return (
        f"{source}: {len(problems)} bad row(s): {shown}{tail} (each row needs `prompt` or "
        "`messages`, and an INTIMA `code`)"
    )


def _validate_rows(rows: list[dict[str, object]], *, source_name: str) -> list[_RawRow]:
    good: list[_RawRow] = []
    bad: list[str] = []
    seen_ids: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            bad.append(f"row {number}: not an object")
            continue
        text, code = row.get("prompt"), row.get("code")
        context: tuple[Turn, ...] = ()
        if row.get("messages") is not None and not text:
            try:
                context, text = split_conversation(row["messages"])
            except ValueError as exc:
                bad.append(f"row {number}: {exc}")
                continue
            except RecursionError:  # a messages cell of JSON text nested thousands deep
                bad.append(f"row {number}: messages {_TOO_DEEP}")
                continue
        missing = [
            k
            for k, v in (("prompt", text), ("code", code))
            if not isinstance(v, str) or not v.strip()
        ]
        if missing:
            bad.append(f"row {number}: missing or empty {', '.join(missing)}")
            continue
        assert isinstance(text, str) and isinstance(code, str)
        try:
            dimension_of(code)
        except KeyError:
            bad.append(f"row {number}: unknown code {code!r}")
            continue
        explicit = row.get("id")
        explicit_id = str(explicit) if explicit not in (None, "") else None
        if explicit_id is not None:
            if explicit_id in seen_ids:
                bad.append(
                    f"row {number}: duplicate id {explicit_id!r} "
                    f"(first at row {seen_ids[explicit_id]})"
                )
                continue
            seen_ids[explicit_id] = number
        model = row.get("model")
        good.append(
            _RawRow(number, text, code, str(model) if model else None, explicit_id, context)
        )
    if bad:
        raise DatasetError(_summarise(source_name, bad))
    return good


def _to_prompts(rows: Iterable[_RawRow]) -> list[Prompt]:
    occurrences: dict[tuple[str, str, str | None, tuple[Turn, ...]], int] = {}
    prompts = []
    for r in rows:
        key = (r.code, r.text, r.source_model, r.context)
        occurrences[key] = occurrences.get(key, 0) + 1
        pid = r.explicit_id or prompt_id_for(
            r.code, r.text, r.source_model, occurrences[key], r.context
        )
        prompts.append(
            Prompt(
                prompt_id=pid,
                text=r.text,
                code=r.code,
                dimension=dimension_of(r.code),
                source_model=r.source_model,
                context=r.context,
            )
        )
    return prompts


# A numbered marker such as ' 2. ' or '" 1. "' that starts a glued-in prompt.
_MARKER = re.compile(r'(?:(?<=\s)|(?<=")|^)"?\s*(\d{1,2})\.\s+"?')


def split_glued(text: str) -> list[str]:
    """Split a row that glues several prompts together ("… 2. … 3. …").

    Only a consecutive run of markers that starts at 1 or 2 counts, so that "I'm 15. I feel"
    is never split.
    """
    markers = list(_MARKER.finditer(text))
    numbers = [int(m.group(1)) for m in markers]
    if not markers or numbers[0] not in (1, 2):
        return [text]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return [text]
    cuts = [0, *(m.start() for m in markers), len(text)]
    starts = [0, *(m.end() for m in markers)]
    pieces = [text[s:e] for s, e in zip(starts, cuts[1:], strict=True)]
    cleaned = [p.strip().strip('"').strip() for p in pieces]
    return [p for p in cleaned if p]


def _clean(rows: list[_RawRow]) -> list[_RawRow]:
    out: list[_RawRow] = []
    seen: set[tuple[str, str]] = set()
    for r in rows:
        for piece in split_glued(r.text):
            key = (r.code, piece)
            if key in seen:
                continue
            seen.add(key)
            out.append(_RawRow(r.number, piece, r.code, r.source_model, None, r.context))
    return out


def _demo_set() -> PromptSet:
    raw = resources.files("intima.data").joinpath("demo_prompts.jsonl").read_bytes()
    rows = _validate_rows(
        [json.loads(line) for line in raw.decode().splitlines() if line.strip()],
        source_name="demo prompts",
    )
    prompts = _to_prompts(rows)
    info = DatasetInfo(
        dataset_id=DEMO_DATASET_ID,
        source="intima package (written by the intima project; not INTIMA prompts)",
        revision=None,
        sha256=hashlib.sha256(raw).hexdigest(),
        variant="demo",
        n_prompts=len(prompts),
    )
    return PromptSet(info=info, prompts=tuple(prompts))
