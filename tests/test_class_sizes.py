"""No class in ``src/`` is over 400 lines (issue 43): a class that grows past it holds several concerns, and
is split into parts named for them (as ``routing.graph``'s front door and ``runtime.runs``' queue were).

The test reads the source with ``ast`` (nothing is imported); a class's lines run from its first decorator to
its last line, nested classes counted in the class that holds them and on their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "master_agent"
MAX_CLASS_LINES = 400


def _class_sizes(source: str) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every class in ``source``, nested ones too."""
    sizes = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            assert node.end_lineno is not None
            sizes.append((node.name, first, node.end_lineno - first + 1))
    return sizes


def test_no_class_is_over_400_lines() -> None:
    over = [
        f"{path.relative_to(SOURCE.parent)}:{line} {name} ({lines} lines)"
        for path in sorted(SOURCE.rglob("*.py"))
        for name, line, lines in _class_sizes(path.read_text(encoding="utf-8"))
        if lines > MAX_CLASS_LINES
    ]
    assert not over, f"classes over {MAX_CLASS_LINES} lines (split them by concern):\n  " + "\n  ".join(over)


def test_the_measure_counts_decorators_bodies_and_nested_classes() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(5))
    source = f"import dataclasses\n\n@dataclasses.dataclass\nclass Outer:\n    class Inner:\n        y = 1\n{body}\n"
    assert _class_sizes(source) == [("Outer", 3, 9), ("Inner", 5, 2)]
