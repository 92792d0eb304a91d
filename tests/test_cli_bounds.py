"""Issue 38: labels and names have a length limit where they are given, and no error echoes a
100 KB argument whole: each is one line of bounded length that still says what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import invoke_cli
from intima.core.escape import MAX_ERROR_CHARS, quoted
from intima.core.labels import MAX_LABEL_CHARS
from intima.store import Store
from reliability_summary import TALLY

HUGE = "x" * 100_000
#: an error line's prefix ("error: ") and the bounded message
LONGEST_LINE = len("error: ") + MAX_ERROR_CHARS


def _one_short_line(args: tuple[str, ...], *needles: str) -> str:
    """The command fails with exit 2 and one error line, short, holding every needle; counted
    as a bad input tried and rejected."""
    TALLY.bad_inputs_tried += 1
    res = invoke_cli(*args, timeout=120)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    ok = res.returncode == 2 and len(lines) == 1 and len(lines[0]) <= LONGEST_LINE
    TALLY.bad_inputs_rejected += ok and all(n in lines[0] for n in needles)
    assert res.returncode == 2, (res.returncode, res.stderr[:2000])
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[:2000]
    assert len(lines[0]) <= LONGEST_LINE, len(lines[0])
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_quoted_bounds_what_it_echoes() -> None:
    assert quoted("abc") == "'abc'"
    assert quoted("y" * 81) == "'" + "y" * 79 + "'… (81 characters)"  # 80 is the bound
    assert quoted("y" * 80) == "'" + "y" * 80 + "'"
    assert quoted(5) == "5"


@pytest.mark.parametrize("length", [MAX_LABEL_CHARS + 1, 100_000])
def test_a_label_past_the_limit_is_refused_in_one_line(tmp_path: Path, length: int) -> None:
    """A 100,000-character --label was stored, published and wrapped by every table."""
    label = "L" * length
    db = str(tmp_path / "s.db")
    spec = "openai-compat:fake@http://127.0.0.1:9/v1"
    run = ("run", "--model", spec, "--label", label, "--dataset", "demo", "--dry-run",
           "--store", db)  # fmt: skip
    _one_short_line(run, "--label", f"at most {MAX_LABEL_CHARS} characters")
    judge = ("judge", "--judge", spec, "--label", label, "--store", db)
    _one_short_line(judge, "--label", f"at most {MAX_LABEL_CHARS} characters")
    config = tmp_path / "run.toml"
    config.write_text(f'[[models]]\nspec = "{spec}"\nlabel = "{label}"\n', encoding="utf-8")
    from_file = ("run", "--config", str(config), "--dataset", "demo", "--dry-run", "--store", db)
    _one_short_line(from_file, "label", f"at most {MAX_LABEL_CHARS} characters")


def test_a_label_at_the_limit_is_taken(tmp_path: Path) -> None:
    spec = "openai-compat:fake@http://127.0.0.1:9/v1"
    res = invoke_cli("run", "--model", spec, "--label", "L" * MAX_LABEL_CHARS, "--dataset",
                     "demo", "--dry-run", "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert res.returncode == 0, res.stderr[:2000]


def test_compare_quotes_a_100_kb_id_bounded(tmp_path: Path) -> None:
    """`intima compare` echoed a 100 KB id whole in its error."""
    db = tmp_path / "s.db"
    Store.open(db).close()
    line = _one_short_line(("compare", HUGE, "b", "--store", str(db)),
                           "no configuration", "(100,000 characters)")  # fmt: skip
    assert len(line) < 300


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "a", "b", "--metric", HUGE),
        ("drift", "--scorer", HUGE),
        ("explain", HUGE),
        ("requests", "cancel", HUGE),
        ("run", "--model", HUGE, "--dataset", "demo", "--dry-run"),
        ("run", "--model", f"openai-compat:m@http://{HUGE}", "--dataset", "demo", "--dry-run"),
        ("judge", "--judge", f"nope{HUGE}:m"),
        ("run", "--model", "llamacpp", "--temperature", HUGE),
    ],
    ids=[
        "compare-metric",
        "drift-scorer",
        "explain",
        "cancel",
        "run-model",
        "run-url",
        "judge-provider",
        "bad-number",
    ],
)
def test_every_echo_of_a_100_kb_argument_is_bounded(tmp_path: Path, args: tuple[str, ...]) -> None:
    db = tmp_path / "s.db"
    Store.open(db).close()
    _one_short_line((*args, "--store", str(db)))
