"""The import graph of every first-party package: no cycle, the packages in one order
(``wsim -> benchmarks -> validation -> hw_kernels -> simulator``), and inside ``simulator/`` every
import down the layers ``views -> engine -> kernels -> protocol, machine -> errors`` (README "Layout").

Every import counts: at module level, inside a function (a function-level import hides a cycle
from Python, not from this test), under ``if TYPE_CHECKING:`` (an annotation that needs a module
is a dependency on it), and ``importlib.import_module("...")`` with a literal name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from simulator.protocol.deadlock import _find_cycle

ROOT = Path(__file__).resolve().parent.parent

#: Order of the first-party packages: a module may import its own package or a lower one.
#: ``wsim`` is the command (it wires validation's sub-commands beside the simulator's);
#: ``benchmarks`` holds scripts that read measurements and run the simulator.
PACKAGES = {"simulator": 0, "hw_kernels": 1, "validation": 2, "benchmarks": 3, "wsim": 4}
#: Top-level folders with Python files that are not packages of the project.
NOT_PACKAGES = {"tests", "build", "dist", "notebooks", "docs", "scripts", "external", "out"}

#: Layer of each top-level part of ``simulator`` (a module may import its own layer or lower ones).
#: ``simulator`` itself (``__init__``: the public API, loaded on first use) sits above everything.
LAYERS = {"errors": 0, "_native": 0, "machine": 1, "protocol": 1, "kernels": 2, "engine": 3, "views": 4}
TOP = 5


def first_party_packages(root: Path = ROOT) -> list[str]:
    """Top-level folders holding Python files (hidden folders and :data:`NOT_PACKAGES` aside)."""
    return sorted(d.name for d in root.iterdir()
                  if d.is_dir() and not d.name.startswith(".") and not d.name.endswith(".egg-info")
                  and d.name not in NOT_PACKAGES and any(d.rglob("*.py")))


def module_names() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in (ROOT / pkg).rglob("*.py"):
            parts = p.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = p
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The first-party modules ``name`` imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in modules:     # ``import a.b.c`` of a name inside a.b counts as a.b
            target = target.rpartition(".")[0]
        if target:
            found.add(target)

    class Visitor(ast.NodeVisitor):
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
                add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod)

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


def package_layer(module: str) -> int:
    return PACKAGES[module.split(".")[0]]


def layer(module: str) -> int:
    """Layer inside ``simulator`` (a ``simulator.*`` module)."""
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


def test_every_first_party_package_has_a_place():
    found = first_party_packages()
    assert set(found) == set(PACKAGES), (f"top-level packages {found}: give each a place in PACKAGES "
                                         f"(or NOT_PACKAGES) and in the README's layout")


def test_every_part_of_the_simulator_has_a_layer():
    tops = {n.split(".")[1] for n in module_names() if n.startswith("simulator.") and n.count(".") >= 1}
    assert tops <= set(LAYERS), f"no layer for {sorted(tops - set(LAYERS))}: add it to LAYERS and the README"


def test_the_graph_sees_every_kind_of_import():
    g = import_graph()
    # module level, inside functions (cli loads the kernel models only to list constants), a
    # literal import_module name, TYPE_CHECKING imports, and imports across packages
    assert "simulator.views.run_args" in g["simulator.views.cli"]
    assert "simulator.kernels.sm100_tma_ws" in g["simulator.views.cli"]
    assert "simulator.views.sweep_cli" in g["simulator.views.cli"]
    assert "simulator.machine.arch" in g["simulator.kernels.gemm_config"]
    assert {"validation.accuracy", "validation.compare", "simulator.views.cli"} <= g["wsim.cli"]
    assert "simulator.protocol.arrivals" in g["hw_kernels.sm90_gemm"]
    assert any(m.startswith("validation.") for m in g["benchmarks.tune_check"])


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_packages_import_one_way():
    upward = [f"{a} imports {b}" for a, targets in sorted(import_graph().items()) for b in sorted(targets)
              if package_layer(b) > package_layer(a)]
    assert not upward, "imports against wsim -> benchmarks -> validation -> hw_kernels -> simulator:\n" + \
        "\n".join(upward)


def test_imports_point_down_the_simulator_layers():
    upward = [f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
              for a, targets in sorted(import_graph().items()) if a.split(".")[0] == "simulator"
              for b in sorted(targets) if b.split(".")[0] == "simulator" and layer(b) > layer(a)]
    assert not upward, "imports against views -> engine -> kernels -> protocol, machine -> errors:\n" + \
        "\n".join(upward)


def test_the_checks_catch_a_cycle_and_an_upward_import(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert layer("simulator.kernels.space") > layer("simulator.machine.arch") > layer("simulator.errors")
    assert package_layer("validation.compare") > package_layer("simulator.views.cli")
    (tmp_path / "newpkg").mkdir()
    (tmp_path / "newpkg" / "m.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("")
    assert first_party_packages(tmp_path) == ["newpkg"]
