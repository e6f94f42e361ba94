"""Tagged JSON blocks in prompts: ``<tag>{json}</tag>``. Models read them; the offline planner parses
them. They live with the models because both sides of that contract meet here."""

from __future__ import annotations

import json
import re
from typing import Any


def render_tagged_json(tag: str, value: Any) -> str:
    return f"<{tag}>\n{json.dumps(value, default=str, sort_keys=True)}\n</{tag}>"


def parse_tagged_json(text: str, tag: str) -> Any:
    """The JSON inside ``<tag>...</tag>`` in ``text``, or None."""
    match = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, re.S)
    if match is None:
        return None
    try:
        return json.loads(match.group(1))
    except json.JSONDecodeError:
        return None
