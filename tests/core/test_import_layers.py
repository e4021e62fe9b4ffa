"""The package's layers point down: no core module imports a topic folder (the core finds topics through
`labcore.topics`), and no two modules import each other, directly or around a circle.

Every import that runs counts, the ones inside functions too: a late import still ties the two modules together
(it only moves the failure from import time to the call). Imports under `if TYPE_CHECKING:` never run and do not
count. An edge is the module an import names: `from .a import b` is an edge to `a.b` when that is a module, else
to `a`; a package's `__init__` run on the way is not an edge, since `labcore/__init__.py` imports the engine and
every module would otherwise lie on one circle through it.
"""
import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "labcore"

# Circles allowed to remain, each with a comment saying why (none today). A circle listed here that is gone fails
# the test too, so the list only shrinks.
ALLOWED_CIRCLES: set[frozenset[str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in ROOT.rglob("*.py")}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The labcore modules that module `name` (file `path`) imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in _running(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:  # `import labcore.fed.engine.x`: the longest module prefix
                t = t.rpartition(".")[0]
            if t.startswith("labcore") and t != name:
                out.add(t)
    return out


def _running(tree: ast.AST):
    """Every node of the tree but those under `if TYPE_CHECKING:` (imports for annotations only)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=1)  # parsing every module takes seconds: once for all the tests here
def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root), on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt), on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.add(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))
    return out


def topic_packages() -> set[str]:
    return {f"labcore.{p.parent.name}" for p in ROOT.glob("*/topic.py")}


def in_package(module: str, packages: set[str]) -> str | None:
    return next((p for p in packages if module == p or module.startswith(p + ".")), None)


def test_the_graph_sees_late_imports_and_relative_ones():
    graph = import_graph()
    assert "labcore.config" in graph["labcore.fed.engine"]  # `from ..config import ...`
    assert "labcore.data" in graph["labcore.fed.engine"]  # `from ..data import load_dataset` inside a function
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_core_module_imports_a_topic():
    topics = topic_packages()
    assert {"labcore.colr", "labcore.fair", "labcore.flalgos"} <= topics
    wrong = sorted(f"{m} -> {t}" for m, targets in import_graph().items() if not in_package(m, topics)
                   for t in targets if in_package(t, topics))
    print(f"imports from the core into topics: {len(wrong)}", *wrong, sep="\n  ")
    assert not wrong, "the core finds topics through labcore.topics, never by importing them"


# What `labcore.methods` may import from `labcore.fed`: the data types, the workspace and the thread settings, modules
# that import nothing of the lab above them. The rest of fed/ (the trainers, the engine) uses the methods.
FED_BASE = {"labcore.fed", "labcore.fed.updates", "labcore.fed.workspace", "labcore.fed.threads"}


def test_the_methods_import_only_feds_base_modules():
    graph = import_graph()
    wrong = sorted(f"{m} -> {t}" for m, targets in graph.items() if m.startswith("labcore.methods")
                   for t in targets if t.startswith("labcore.fed") and t not in FED_BASE)
    assert not wrong, "labcore.methods sits below the engine: it imports fed/'s base modules only"
    for base in FED_BASE - {"labcore.fed"}:
        assert {t for t in graph[base] if t.startswith("labcore")} == set(), f"{base} imports the lab's modules"


def test_the_config_imports_nothing_that_imports_it():
    """The run configuration is read by every layer: whatever it imports must not import it back, at any depth."""
    graph = import_graph()
    seen, todo = set(), list(graph["labcore.config"])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    assert "labcore.config" not in seen


def test_the_package_has_no_import_circle_but_the_listed_ones():
    found = circles(import_graph())
    print(f"import circles: {len(found)}", *(" <-> ".join(sorted(c)) for c in found), sep="\n  ")
    new = [sorted(c) for c in found if c not in ALLOWED_CIRCLES]
    assert not new, f"new import circles: {new}"
    gone = [sorted(c) for c in ALLOWED_CIRCLES if c not in found]
    assert not gone, f"these circles are gone: take them off ALLOWED_CIRCLES: {gone}"
