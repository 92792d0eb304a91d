"""The layout's promises: no import cycle, dependencies pointing down, short modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "intima"
MAX_LINES = 450

# Lower layers first; a module may import its own layer or any lower one, never a higher one.
LAYERS = [
    {"core"},
    {"dataset", "store"},
    {"providers", "generate"},
    {"judges", "affect", "converse"},
    {"results", "validate", "bundles"},
    {"leaderboard", "service"},
    {"cli"},
]


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """intima modules imported anywhere in the file (top level or inside functions).
    ``from package import submodule`` depends on the submodule, not on the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _module_name(path)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("intima"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("intima"):
                subs = {f"{node.module}.{a.name}" for a in node.names} & modules
                found.update(subs)
                if len(subs) < len(node.names):  # names defined in the module itself
                    found.add(node.module)
    return {m for m in found if m != me}


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        graph[name] = {m for m in _imports(path, set(files)) if m in files}
    return graph


def _subsystem(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in _ALL) else None


_ALL = set().union(*LAYERS)


def test_no_import_cycle_among_intimas_modules() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph[node]):
            # a package's __init__ importing its own submodules is not a cycle of the layout
            if node == dep.rsplit(".", 1)[0]:
                continue
            if state.get(dep) == 1:
                cycle = [*stack[stack.index(dep) :], dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_dependencies_point_down_the_layers() -> None:
    layer_of = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    wrong = []
    for module, deps in _graph().items():
        mine = _subsystem(module)
        if mine is None:
            continue
        for dep in deps:
            theirs = _subsystem(dep)
            if theirs is not None and layer_of[theirs] > layer_of[mine]:
                wrong.append(f"{module} -> {dep}")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(sorted(wrong))


def test_core_imports_nothing_else_from_intima() -> None:
    for module, deps in _graph().items():
        if module.startswith("intima.core"):
            assert all(d.startswith("intima.core") for d in deps), (module, deps)


def _private_imports(source: str, module: str) -> list[str]:
    """Names starting with ``_`` (a module or a name in it) that ``module`` imports from
    another of intima's packages: what a package keeps to itself, others must not reach."""
    mine = _subsystem(module)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            private = any(p.startswith("_") and not p.startswith("__") for p in parts[1:])
            if parts[0] == "intima" and private and _subsystem(name) != mine:
                found.append(f"{module} imports {name}")
    return found


def test_the_private_import_check_sees_each_form() -> None:
    """The check below can fail: each way of reaching into another package is seen, a
    package's own private names and ``__future__``-style dunders are not."""
    here = "intima.results.board"
    seen = _private_imports(
        "from intima.judges.loop import _MAX_ECHO_CHARS\n"
        "from intima.cli import _params\n"
        "import intima.generate._hidden\n"
        "def f():\n    from intima.core.config import _first_problem\n"
        "from intima.results.table import _N_COL\n"  # its own package: allowed
        "from intima.core.config import ModelConfig\n",
        here,
    )
    assert seen == [
        f"{here} imports intima.judges.loop._MAX_ECHO_CHARS",
        f"{here} imports intima.cli._params",
        f"{here} imports intima.generate._hidden",
        f"{here} imports intima.core.config._first_problem",
    ]


def test_no_package_imports_another_packages_private_names() -> None:
    found = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        for hit in _private_imports(path.read_text(encoding="utf-8"), _module_name(path))
    ]
    assert not found, "private names imported across packages:\n" + "\n".join(found)


def test_every_subpackage_is_in_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists() and p.name != "data"}
    assert packages <= _ALL, packages - _ALL


def test_no_module_is_over_the_line_limit() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def _loaded_after(imports: str, candidates: tuple[str, ...]) -> list[str]:
    """Which of ``candidates`` are in sys.modules after ``import <imports>`` in a fresh
    interpreter (this process has imported far more)."""
    import subprocess
    import sys

    code = f"import sys, {imports}; print([m for m in {candidates!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(ast.literal_eval(out.stdout.strip()))


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    heavy = ("torch", "gradio", "llama_cpp", "pandas", "huggingface_hub", "scipy.stats",
             "scipy.special", "matplotlib", "transformers", "sklearn")  # fmt: skip
    imports = (
        "intima, intima.cli, intima.results.table, intima.validate.metrics, intima.judges.stats"
    )
    assert _loaded_after(imports, heavy) == []


def test_starting_the_command_line_loads_only_what_every_command_needs() -> None:
    """Every `intima ...` process imports the package and all command modules before it does
    anything; numpy, httpx and tenacity there cost each command about 0.1 s (measured with
    ``python -X importtime -m intima --version``) whether it used them or not."""
    not_at_start = ("numpy", "httpx", "tenacity", "openai", "anthropic", "pandas",
                    "huggingface_hub", "scipy", "sklearn", "torch")  # fmt: skip
    assert _loaded_after("intima, intima.cli.main", not_at_start) == []


#: A command's body (after its signature: the options it declares) reads in one screen; the
#: work is in the Python API it calls, which a notebook calls the same way. Measured as the
#: formatter lays the code out (:func:`_as_formatted`), so packing lines cannot meet it.
MAX_COMMAND_BODY = 60
#: More parameters than this belong in a settings object (``WorkerSettings``,
#: ``ValidationSettings``, ...) that the command builds and a notebook passes. It was 15, and
#: ``validate()`` took exactly 15; the most any function takes since its settings were grouped
#: is 10.
MAX_PARAMETERS = 12


def _functions() -> list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((path, node))
    return found


def _is_command(path: Path, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A command function (``cli/``, named ``*_cmd``): its parameters are its options."""
    return path.parent.name == "cli" and fn.name.endswith("_cmd")


def _is_table(node: ast.expr | None) -> bool:
    """A literal of constants: a table of data (column names, phrases), not code."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_is_table(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(_is_table(k) and _is_table(v) for k, v in zip(node.keys, node.values))
    return False


def _as_formatted(paths: list[Path], tmp_path: Path) -> dict[Path, str]:
    """Each file as ``ruff format`` writes it once every ``# fmt: skip`` is gone except those
    on a table of data (an assignment of a literal): the layout a limit is measured on, which
    hand-packed lines cannot shorten."""
    import subprocess
    import sys

    copies = {}
    for i, path in enumerate(paths):
        text = path.read_text(encoding="utf-8")
        tables = {
            node.end_lineno
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Assign | ast.AnnAssign) and _is_table(node.value)
        }
        lines = [
            line if n in tables else line.replace("  # fmt: skip", "")
            for n, line in enumerate(text.splitlines(), 1)
        ]
        copies[path] = tmp_path / f"m{i}.py"
        copies[path].write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = SRC.parents[1] / "pyproject.toml"
    subprocess.run(
        [sys.executable, "-m", "ruff", "format", "-q", "--config", str(config), str(tmp_path)],
        check=True,
    )
    return {path: copy.read_text(encoding="utf-8") for path, copy in copies.items()}


def test_every_command_body_is_short_as_the_formatter_writes_it(tmp_path: Path) -> None:
    long = {}
    for path, text in _as_formatted(sorted((SRC / "cli").glob("*.py")), tmp_path).items():
        for fn in ast.walk(ast.parse(text)):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (fn.body[-1].end_lineno or 0) - fn.body[0].lineno + 1
                if n > MAX_COMMAND_BODY:
                    long[f"{path.relative_to(SRC)}:{fn.name}"] = n
    assert not long, f"functions in cli/ with bodies over {MAX_COMMAND_BODY} lines: {long}"


def test_a_body_packed_by_hand_is_measured_as_formatted(tmp_path: Path) -> None:
    """The measure itself: a call packed onto one line under ``# fmt: skip`` counts as the
    formatter would write it; a table of data keeps its lines."""
    packed = tmp_path / "packed.py"
    packed.write_text(
        "COLUMNS = ('a', 'b',\n           'c')  # fmt: skip\n"
        "def f() -> None:\n"
        "    print(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,"
        " 23, 24, 25, 26, 27, 28, 29, 30, 31, 32)  # fmt: skip\n",
        encoding="utf-8",
    )
    (out := tmp_path / "out").mkdir()
    text = _as_formatted([packed], out)[packed]
    assert "COLUMNS = ('a', 'b',\n           'c')  # fmt: skip" in text  # the table is kept
    [fn] = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)]
    assert (fn.body[-1].end_lineno or 0) - fn.body[0].lineno + 1 == 34  # print( + 32 + )


def test_no_api_function_takes_more_than_a_few_parameters() -> None:
    many = {}
    for path, fn in _functions():
        a = fn.args
        n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
        if n > MAX_PARAMETERS and not _is_command(path, fn):
            many[f"{path.relative_to(SRC)}:{fn.name}"] = n
    assert not many, f"functions with more than {MAX_PARAMETERS} parameters: {many}"
