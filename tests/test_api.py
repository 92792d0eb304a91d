"""The notebook path: dataset -> generate -> judge -> affect score -> results DataFrame, through
the package's public API only (one import), against the fault-injecting OpenAI-compatible
server on 127.0.0.1 and a real SQLite file."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

NOTEBOOK = """
import intima

prompts = intima.load_prompts("demo").first(6)
model = intima.ModelConfig(spec=f"openai-compat:fake@{URL}")
judge = intima.ModelConfig(spec=f"openai-compat:fake-judge@{URL}")
events = []
with intima.Store.open(STORE) as store:
    [run] = intima.generate_responses(store, prompts, [model], on_progress=events.append)
    [judged] = intima.judge_responses(store, [judge])
    scored = intima.score_responses(store)
    frame = intima.load_results(store, bootstrap=50)
"""


def test_the_readme_notebook_path_in_one_import(
    tmp_path: Path, fake_server: Callable[..., Any]
) -> None:
    imports = [
        n for n in ast.walk(ast.parse(NOTEBOOK)) if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    assert len(imports) <= 5
    server = fake_server()
    scope: dict[str, Any] = {"URL": server.base_url, "STORE": tmp_path / "nb.db"}
    exec(compile(NOTEBOOK, "notebook", "exec"), scope)

    run, judged, scored, frame = (scope[k] for k in ("run", "judged", "scored", "frame"))
    assert run.generated == 6 and run.failed == 0
    assert scope["events"][-1].done == scope["events"][-1].total == 6
    assert judged.scored == 6 and judged.unscored == 0
    assert scored.scored == 6
    overall = frame[(frame.scope == "overall") & (frame.metric == "neutral")]
    judge_row = overall[overall.scorer.str.startswith("judge:")]
    # The fake judge rates everything low: every response is neutral, n = 6.
    assert judge_row.rate.tolist() == [pytest.approx(1.0)] and judge_row.n.tolist() == [6]
    assert set(frame.scorer) >= {"affect"} | set(judge_row.scorer)
    assert {"rate", "lo", "hi", "n", "run_id", "label", "scope", "metric"} <= set(frame.columns)


# In a fresh interpreter: what `import intima` binds is what a user's first import sees.
NAMES_AND_MODULES = """
import importlib, pkgutil, sys, types
import intima

# every submodule but __main__ (importing it runs the command line)
subpackages = sorted(m.name for m in pkgutil.iter_modules(intima.__path__) if m.name != "__main__")
print("subpackages", *subpackages)
hidden = sorted(set(intima.__all__) & set(subpackages))
print("hidden", *hidden)
for name in intima.__all__:
    if isinstance(getattr(intima, name), types.ModuleType):
        print("module in __all__", name)
import intima.results.table
intima.results.table.score_table
for name in subpackages:
    module = importlib.import_module(f"intima.{name}")
    if getattr(intima, name) is not module:
        print("not the module", name, type(getattr(intima, name)).__name__)
print("done")
"""


def test_no_public_name_hides_a_subpackage() -> None:
    """Issue 24: ``intima.results``, ``intima.generate`` and ``intima.validate`` were functions,
    so ``import intima.results.table; intima.results.table`` raised AttributeError."""
    res = subprocess.run(
        [sys.executable, "-c", NAMES_AND_MODULES], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    subpackages = lines[0].split()[1:]
    assert {"generate", "judges", "results", "validate", "affect", "cli"} <= set(subpackages)
    assert lines[1:] == ["hidden", "done"], res.stdout


def _name_maps(path: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """A lazily exporting package's three name lists, read from its source: the TYPE_CHECKING
    imports (for mypy and editors), the lazy map (for the running program) and ``__all__``."""
    tree = ast.parse(path.read_text())
    typed: dict[str, str] = {}
    lazy: dict[str, str] = {}
    listed: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                for alias in imp.names:
                    attr = "" if alias.asname in (None, alias.name) else f":{alias.name}"
                    typed[alias.asname or alias.name] = f"{imp.module}{attr}"
            for call in ast.walk(ast.Module(body=node.orelse, type_ignores=[])):
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "lazy_exports":
                    lazy = ast.literal_eval(call.args[1])
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            listed = ast.literal_eval(node.value)
    return typed, lazy, listed


@pytest.mark.parametrize("package", ["intima", "intima.converse"])
def test_a_lazy_packages_three_name_lists_agree(package: str) -> None:
    """The names mypy sees, the names the program binds and ``__all__`` are one list: a name
    added to one and not the others fails here, not in a user's notebook."""
    module = importlib.import_module(package)
    assert module.__file__
    typed, lazy, listed = _name_maps(Path(module.__file__))
    assert typed and typed == lazy
    assert sorted(listed) == sorted({*lazy, *(["__version__"] if package == "intima" else [])})
    for name in listed:
        assert getattr(module, name) is not None
    shown = [n for n in dir(module) if not n.startswith("__")]
    assert shown == sorted(lazy), "dir() lists helpers as if they were API"
