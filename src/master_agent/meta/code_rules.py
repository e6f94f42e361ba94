"""Rules a request gives as code ("if order.total > 1000: escalate()"), said again in the request's prose
("When the order total is more than 1000, action is "escalate".") so that the one grammar of
``meta/requirements.py`` reads them, their traces mapped back to the code as written.

Only what code states plainly is said again: a comparison of a dotted name with a number (joined by
``and``/``or``), and a body that gives one of a declared field's values (``escalate()``, ``return
"escalate"``, ``action = "escalate"``, ``{"action": "escalate"}``); ``else`` gives the default. A line
that is not of this shape stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: "if order.total > 1000:", "elif (amount >= 2_500) {", "else:"; the body may follow on the same line.
_CONDITION = re.compile(
    r"^(?P<indent>[ \t]*)(?:[-*>]\s*)?`?(?P<keyword>if|elif|else if|else)\b\s*\(?(?P<test>[^:{]*?)\)?\s*"
    r"(?::|\{|\bthen\b)\s*(?P<body>.*?)`?\s*$",
    re.I,
)
_COMPARISON = re.compile(
    r"(?P<name>[A-Za-z_][\w.]*)\s*(?P<op>>=|<=|>|<)\s*(?P<number>\d[\d_,]*(?:\.\d+)?)", re.I
)
_JOIN = re.compile(r"\s*(?P<join>and|or|&&|\|\|)\s*", re.I)
_OPS = {">": "more than", ">=": "at least", "<": "less than", "<=": "at most"}
#: What a body gives: a call, a return, an assignment or a JSON member, its value quoted or bare.
_GIVES = re.compile(
    r"""^(?:return\s+)?\{?\s*["']?(?P<field>[a-z_]\w*)?["']?\s*(?:=|:)\s*["']?(?P<value>[\w-]+)["']?\s*\}?;?$"""
    r"""|^(?:return\s+)?["']?(?P<said>[\w-]+)["']?\s*(?:\(\s*\))?;?$""",
    re.I,
)


def _condition(test: str) -> str | None:
    """``test`` in words ("the order total is more than 1000 and ..."); None unless it is only numeric
    comparisons of names joined by and/or."""
    said: list[str] = []
    position = 0
    while position < len(test):
        comparison = _COMPARISON.match(test, position)
        if comparison is None:
            return None
        words = re.sub(r"[._]+", " ", comparison.group("name")).strip().lower()
        said.append(
            f"the {words} is {_OPS[comparison.group('op')]} {comparison.group('number').replace('_', '')}"
        )
        position = comparison.end()
        join = _JOIN.match(test, position)
        if join is None:
            break
        said.append("and" if join.group("join").lower() in ("and", "&&") else "or")
        position = join.end()
    return " ".join(said) if said and position >= len(test.rstrip()) else None


def _gives(body: str, fields: Mapping[str, list[str]]) -> tuple[str, str] | None:
    """The field and the value a body gives, when the value is one the request declares."""
    found = _GIVES.match(body.strip())
    if found is None:
        return None
    value = (found.group("value") or found.group("said") or "").strip()
    named = (found.group("field") or "").lower()
    owners = [f for f, values in fields.items() if value in values and (not named or f == named)]
    return (owners[0], value) if len(owners) == 1 else None


def code_as_prose(text: str, fields: Mapping[str, list[str]]) -> str:
    """``text`` with each code rule said in prose; everything else as written."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        found = _CONDITION.match(line)
        index += 1
        if found is None:
            out.append(line)
            continue
        body, taken = found.group("body"), 0
        if not body.strip() and index < len(lines):
            body, taken = lines[index], 1  # the body on the next line
        gives = _gives(body.strip().rstrip("}").strip(), fields)
        keyword = found.group("keyword").lower()
        condition = None if keyword == "else" else _condition(found.group("test").strip())
        if gives is None or (keyword != "else" and condition is None):
            out.append(line)
            continue
        field, value = gives
        said = f'When {condition}, {field} is "{value}".' if condition else f'Otherwise {field} is "{value}".'
        out.append(found.group("indent") + said)
        if taken:
            out.append("")  # the body's line, said with its condition
            index += taken
    return "\n".join(out)
