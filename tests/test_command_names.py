"""Every ``intima <command>`` a user reads names a command the CLI has.

The empty Space once told its visitors to score runs with "intima judge or intima affect"; there
is no ``intima affect`` (it is ``intima score``). This reads every string the package holds (its
messages, page texts, help and docstrings, the site's scripts) and the README and docs, finds each
``intima WORD`` (and ``intima GROUP WORD``), and checks the word against the commands the CLI
really registers. Prose where "intima" is the project's name ("intima did not", "an intima
store") is told apart by the short list of words below, each a word no command will take.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import typer.main

from intima.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "intima"
#: Words that follow "intima" in prose, where it names the project, not a command.
PROSE = frozenset({
    "a", "also", "an", "and", "annotation", "asks", "bundle", "by", "can", "cannot", "checks",
    "computes", "defines", "did", "differs", "does", "error", "every", "from", "gives", "has",
    "human", "implements", "in", "is", "it", "itself", "keeps", "knows", "leaderboard", "makes",
    "measures", "needs", "never", "on", "package", "processes", "project", "promises", "rather",
    "reaches", "reads", "replaces", "results", "sends", "ships", "shows", "space", "starts",
    "stays", "store", "that", "the", "to", "turns", "uses", "version", "was", "wheel", "will",
    "with", "would", "writes",
})  # fmt: skip
_MENTION = re.compile(r"\bintima ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


def _commands() -> dict[str, set[str]]:
    """Each top-level command, with its subcommands when it is a group."""
    root = typer.main.get_command(app)
    out: dict[str, set[str]] = {}
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        out[name] = set(getattr(cmd, "commands", {}) or {})
    return out


def _python_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _texts() -> list[tuple[str, str]]:
    found = [
        (str(p.relative_to(ROOT)), s) for p in sorted(SRC.rglob("*.py")) for s in _python_strings(p)
    ]
    for page in (
        *sorted(SRC.rglob("*.js")),
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ):
        found.append((str(page.relative_to(ROOT)), page.read_text(encoding="utf-8")))
    return found


def unknown_commands(texts: list[tuple[str, str]], commands: dict[str, set[str]]) -> list[str]:
    bad = []
    for where, text in texts:
        for m in _MENTION.finditer(text):
            word, sub = m.group(1), m.group(2)
            if word in PROSE and word not in commands:
                continue
            if word not in commands:
                bad.append(f"{where}: intima {word}")
            elif (
                commands[word]
                and sub is not None
                and sub not in commands[word]
                and sub not in PROSE
            ):
                bad.append(f"{where}: intima {word} {sub}")
    return bad


def test_every_command_named_to_a_user_exists() -> None:
    commands = _commands()
    assert {"run", "judge", "score", "board", "annotate"} <= set(commands)
    assert {"build", "serve", "space"} <= commands["board"]
    texts = _texts()
    assert sum(len(_MENTION.findall(t)) for _, t in texts) > 200  # the scan reaches the texts
    assert unknown_commands(texts, commands) == []


def test_the_check_catches_a_command_that_does_not_exist() -> None:
    commands = _commands()
    made_up = [("x", "scored (intima judge or intima affect)"), ("y", "intima board publish")]
    assert unknown_commands(made_up, commands) == ["x: intima affect", "y: intima board publish"]
