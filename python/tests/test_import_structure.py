"""The Python front end is layered without import cycles
(docs/design/python-layers.md): every module's imports, including those
inside functions, are read with ``ast``; the import graph must have no
cycle, no module may take a private name (``_x``) from another module, and
each module imports only from its own layer or the layers below it."""

import ast
import os
import re

PACKAGE = "enigma"
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), PACKAGE)

# Lowest first. A module may import modules of its own layer and of the
# layers before it. A new module gets a place here.
LAYERS = [
    ("base", {"enigma._core", "enigma._dtypes", "enigma._grid",
              "enigma._log", "enigma._progress", "enigma._autotune",
              "enigma._tools", "enigma._functions", "enigma._inputs"}),
    ("leaf", {"enigma._ir"}),
    ("kernel", {"enigma._control", "enigma._slots", "enigma._source_rewrite",
                "enigma._rewrite_runtime", "enigma._rewrite_carry",
                "enigma._rewrite_exits", "enigma._jit", "enigma._kernel",
                "enigma._launch_spelling", "enigma._name_reads"}),
    ("op families", {"enigma._threads", "enigma._math", "enigma._vectors",
                     "enigma._simd", "enigma._cooperation",
                     "enigma._matrix", "enigma._layout",
                     "enigma._layout_tuples", "enigma._layout_swizzle",
                     "enigma._layout_algebra",
                     "enigma._layout_dynamic", "enigma._tensor",
                     "enigma._tensor_offsets", "enigma._tensor_fragments",
                     "enigma._tensor_algebra",
                     "enigma._tile", "enigma._tile_gemm",
                     "enigma._tile_pipeline",
                     "enigma._mma", "enigma._async_copy",
                     "enigma._pipeline", "enigma._gemm_configs",
                     "enigma._gemm",
                     "enigma._gemm_streamk", "enigma._gemm_splitk",
                     "enigma._quantized", "enigma._quantized_matvec",
                     "enigma._quantized_matvec_mma",
                     "enigma._quantized_prefill",
                     "enigma._fp8",
                     "enigma._gemm_fp8", "enigma._gemm_fp8_launch",
                     "enigma._gemm_f32", "enigma._gemm_fp8_pipelined"}),
    ("host", {"enigma._compile", "enigma._interop", "enigma._runtime",
              "enigma._metal_host", "enigma._launch"}),
    ("public", {"enigma", "enigma._tracing", "enigma.benchmark",
                "enigma.core", "enigma.tensor", "enigma.testing",
                "enigma.torch", "enigma.tuple", "enigma.typing",
                "enigma.compiler", "enigma.compiler.compiler",
                "enigma.compiler.kernel", "enigma.compiler.preprocessor",
                "enigma.ops", "enigma.ops.gemm", "enigma.ops.quant",
                "enigma.runtime_dispatch",
                "enigma.runtime_dispatch.runtime",
                "enigma.attention", "enigma._attention",
                "enigma._attention.tiles", "enigma._attention.checks",
                "enigma._attention.forward", "enigma._attention.forward_ws",
                "enigma._attention.decode",
                "enigma._attention.backward", "enigma._attention.launch",
                "enigma._attention.plans", "enigma._attention.inputs",
                "enigma._attention.torch_ops", "enigma.quantized"}),
]
# The leaf: IRValue, the tracer and the one located call into the core.
LEAF = "enigma._ir"
LEAF_MAY_IMPORT = {"enigma._core", "enigma._dtypes"}
# The C++ extension has no Python source.
EXTENSIONS = {"enigma._core"}


def _sources() -> dict:
    """Module name -> path of every Python module of the package."""
    found = {}
    for folder, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(folder, name),
                                  os.path.dirname(PACKAGE_DIR))
            module = rel[:-3].replace(os.sep, ".")
            if module.endswith(".__init__"):
                module = module[:-len(".__init__")]
            found[module] = os.path.join(folder, name)
    return found


SOURCES = _sources()
MODULES = set(SOURCES) | EXTENSIONS


class Import:
    """One imported module (and the name taken from it, if any)."""

    def __init__(self, source, target, name, line):
        self.source, self.target, self.name, self.line = \
            source, target, name, line

    def where(self) -> str:
        path = os.path.relpath(SOURCES[self.source],
                               os.path.dirname(PACKAGE_DIR))
        return f"python/{path}:{self.line}"


def _package_of(module: str) -> str:
    """The package a relative import in ``module`` starts from."""
    if SOURCES.get(module, "").endswith("__init__.py"):
        return module
    return module.rpartition(".")[0]


def _resolve(module: str, level: int, name: str | None) -> str:
    base = _package_of(module)
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    if not level:
        return name or ""
    return f"{base}.{name}" if name else base


def _literal(node):
    return node.value if isinstance(node, ast.Constant) and \
        isinstance(node.value, str) else None


def imports_of(module: str, text: str | None = None) -> list:
    """Every import of ``module`` (its source, or ``text``) at any depth,
    function bodies too, including ``importlib.import_module`` calls with
    literal names."""
    if text is None:
        with open(SOURCES[module]) as f:
            text = f.read()
    tree = ast.parse(text)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(module, alias.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node.level, node.module)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:  # `from . import _core`: a module
                    found.append(Import(module, sub, None, node.lineno))
                else:
                    found.append(Import(module, target, alias.name,
                                        node.lineno))
        elif isinstance(node, ast.Call) and isinstance(
                node.func, ast.Attribute) and \
                node.func.attr == "import_module" and node.args:
            name = _literal(node.args[0])
            if name is None:
                continue
            if name.startswith("."):
                level = len(name) - len(name.lstrip("."))
                name = _resolve(module, level, name.lstrip(".") or None)
            found.append(Import(module, name, None, node.lineno))
    return [i for i in found if i.target == PACKAGE or
            i.target.startswith(PACKAGE + ".")]


ALL_IMPORTS = {m: imports_of(m) for m in SOURCES}


def _graph() -> dict:
    graph = {m: {} for m in MODULES}
    for module, imports in ALL_IMPORTS.items():
        for i in imports:
            if i.target != module:
                graph[module].setdefault(i.target, i)
    return graph


def find_cycles(graph) -> list:
    """The strongly connected components with more than one module (or a
    module importing itself), by Tarjan's algorithm."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def _one_cycle(component, graph) -> list:
    """A shortest cycle through the first module of ``component``, as the
    list of modules along it (first == last)."""
    start, inside = component[0], set(component)
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for nxt in sorted(graph[path[-1]]):
            if nxt == start:
                return path + [start]
            if nxt in inside and nxt not in seen:
                seen.add(nxt)
                paths.append(path + [nxt])
    return [start]


def _describe(component, graph) -> str:
    cycle = _one_cycle(component, graph)
    lines = [f"  {graph[a][b].where()}: {a} imports {b}"
             for a, b in zip(cycle, cycle[1:])]
    return (f"import cycle among {len(component)} modules "
            f"({', '.join(component)}), e.g.:\n" + "\n".join(lines))


def test_the_package_has_no_import_cycle():
    graph = _graph()
    cycles = find_cycles(graph)
    assert not cycles, "\n".join(_describe(c, graph) for c in cycles)


def test_the_cycle_finder_finds_cycles():
    # The check above must be able to fail: a two-module cycle, a longer
    # one and a self-import are found; a diamond is not a cycle.
    assert find_cycles({"a": {"b": 0}, "b": {"a": 0}}) == [["a", "b"]]
    assert find_cycles({"a": {"b": 0}, "b": {"c": 0}, "c": {"a": 0},
                        "d": {"a": 0}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"a": 0}}) == [["a"]]
    assert find_cycles({"a": {"b": 0, "c": 0}, "b": {"d": 0},
                        "c": {"d": 0}, "d": {}}) == []


def test_imports_inside_functions_are_seen():
    # The reader takes imports at any depth and the lazy forms: an import
    # in a method, `import enigma`, and importlib with a relative name.
    text = (
        "import os\n"
        "from . import _core\n"
        "class K:\n"
        "    def f(self):\n"
        "        from ._math import abs as metal_abs\n"
        "        import enigma\n"
        "def g():\n"
        "    import importlib\n"
        "    return importlib.import_module('.torch', __name__)\n")
    taken = {(i.target, i.name, i.line)
             for i in imports_of("enigma._ir", text)}
    assert taken == {("enigma._core", None, 2),
                     ("enigma._math", "abs", 5), ("enigma", None, 6),
                     ("enigma.torch", None, 9)}


def _private(name: str) -> bool:
    return name.startswith("_") and not re.fullmatch(r"__\w+__", name)


def test_no_module_takes_a_private_name_of_another():
    """``from ._x import _name`` and ``_x._name`` across modules: a name
    used by two modules is public within the package (no underscore), or
    the code lives where it is used."""
    found = []
    for module, imports in ALL_IMPORTS.items():
        for i in imports:
            if i.name is not None and i.target != module and \
                    _private(i.name):
                found.append(f"{i.where()}: {module} imports {i.name} "
                             f"from {i.target}")
        found += _private_attributes(module)
    assert not found, "\n".join(found)


def _private_attributes(module) -> list:
    """``mod._name`` where ``mod`` is bound to another module of the
    package by an import in ``module``."""
    with open(SOURCES[module]) as f:
        tree = ast.parse(f.read())
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, node.level, node.module)
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = \
                        f"{target}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES and alias.asname:
                    bound[alias.asname] = alias.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and \
                isinstance(node.value, ast.Name) and \
                node.value.id in bound and _private(node.attr) and \
                bound[node.value.id] != module:
            path = os.path.relpath(SOURCES[module],
                                   os.path.dirname(PACKAGE_DIR))
            found.append(f"python/{path}:{node.lineno}: {module} uses "
                         f"{node.value.id}.{node.attr}")
    return found


def _layer_of() -> dict:
    return {m: k for k, (_, members) in enumerate(LAYERS) for m in members}


def test_every_module_has_a_layer():
    layer = _layer_of()
    missing = sorted(m for m in MODULES if m not in layer)
    assert not missing, (
        f"{missing}: give each module its place in LAYERS (and in "
        "docs/design/python-layers.md)")


def test_imports_go_down_the_layers():
    layer = _layer_of()
    upward = set()
    for module, imports in ALL_IMPORTS.items():
        for i in imports:
            if i.target in layer and module in layer and \
                    layer[i.target] > layer[module]:
                upward.add(
                    f"{i.where()}: {module} ({LAYERS[layer[module]][0]}) "
                    f"imports {i.target} ({LAYERS[layer[i.target]][0]})")
    assert not upward, "\n".join(sorted(upward))


def test_the_leaf_imports_only_the_core_and_dtypes():
    taken = {i.target for i in ALL_IMPORTS[LEAF]}
    assert taken <= LEAF_MAY_IMPORT, sorted(taken - LEAF_MAY_IMPORT)
