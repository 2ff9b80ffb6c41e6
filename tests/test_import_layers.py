"""The import graph of ``simulator/``: no cycle, and every import points down the layers
``views -> engine -> kernels -> protocol, machine -> errors`` (README "Layout").

Every import counts, at module level or inside a function (a function-level import hides a cycle
from Python, not from this test), and so does ``importlib.import_module("simulator...")`` with a
literal name; imports under ``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

from simulator.protocol.deadlock import _find_cycle

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "simulator"

#: Layer of each top-level part of the package (a module may import its own layer or lower ones).
#: ``simulator`` itself (``__init__``: the public API, loaded on first use) sits above everything.
LAYERS = {"errors": 0, "_native": 0, "machine": 1, "protocol": 1, "kernels": 2, "engine": 3, "views": 4}
TOP = 5


def module_names() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The simulator modules ``name`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()

    def add(target: str) -> None:
        if target.split(".")[0] == "simulator" and target in modules:
            found.add(target)

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if _is_type_checking(node.test):
                for n in node.orelse:
                    self.visit(n)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            for a in node.names:
                add(a.name)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                if f"{mod}.{a.name}" in modules:
                    add(f"{mod}.{a.name}")
                else:
                    add(mod)

        def visit_Call(self, node: ast.Call) -> None:
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in ("import_module", "_lazy") and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                add(node.args[0].value)
            self.generic_visit(node)

    Visitor().visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    return TOP if len(parts) == 1 else LAYERS[parts[1]]


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the import graph, closed (``[a, b, a]``), or None: the deadlock report's
    wait-for cycle finder, over sorted edges so the answer does not depend on set order."""
    cycle = _find_cycle({n: sorted(ms) for n, ms in graph.items()})
    return cycle + cycle[:1] if cycle else None


def test_every_part_of_the_package_has_a_layer():
    tops = {n.split(".")[1] for n in module_names() if n.count(".") >= 1}
    assert tops <= set(LAYERS), f"no layer for {sorted(tops - set(LAYERS))}: add it to LAYERS and the README"


def test_the_graph_sees_function_level_imports():
    g = import_graph()
    # module level, and inside functions (cli loads the kernel models only to list constants)
    assert "simulator.views.run_args" in g["simulator.views.cli"]
    assert "simulator.kernels.sm100_tma_ws" in g["simulator.views.cli"]
    assert "simulator.kernels.scheduler" in g["simulator.kernels.gemm_config"]
    # TYPE_CHECKING imports are not edges (gemm_config names ArchSpec only in annotations)
    assert "simulator.machine.arch" not in g["simulator.kernels.gemm_config"]


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_imports_point_down_the_layers():
    upward = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
              for a, targets in sorted(import_graph().items()) for b in sorted(targets) if layer(b) > layer(a)]
    assert not upward, "imports against views -> engine -> kernels -> protocol, machine -> errors:\n" + \
        "\n".join(upward)


def test_the_checks_catch_a_cycle_and_an_upward_import():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert layer("simulator.kernels.space") > layer("simulator.machine.arch") > layer("simulator.errors")
