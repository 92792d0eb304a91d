"""Reading a conversation cell: a list of ``{role, content}`` messages ending with a user turn
(JSON text in CSV files), split into the earlier turns and the final user prompt."""

from __future__ import annotations

import json

from pydantic import TypeAdapter, ValidationError

from intima.dataset.types import Turn

_TURNS = TypeAdapter(list[Turn])


def split_conversation(value: object) -> tuple[tuple[Turn, ...], str]:
    """``(earlier turns, final user prompt)``; raises ValueError with what is wrong."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"messages is not a JSON list ({exc.msg})") from exc
    if hasattr(value, "tolist"):  # a numpy array from Parquet
        value = value.tolist()
    try:
        turns = _TURNS.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(
            f"messages must be a list of {{role, content}} (at {where}: {first['msg']})"
        ) from exc
    if not turns or turns[-1].role != "user" or not turns[-1].content.strip():
        raise ValueError("messages must end with a non-empty user turn")
    return tuple(turns[:-1]), turns[-1].content
