"""JSON schemas as model servers read them: compact for prompts, portable for grammar-constrained servers.

pydantic writes schemas for validators: a ``title`` on every node, ``anyOf [X, null]`` for an optional
field, ``default: null``. A model needs none of that, and a server that turns a schema into a sampling
grammar (llama.cpp, llama-cpp-python, Outlines-based servers) may choke on the rest: llama-cpp-python's
grammar converter expands ``maxLength: 2000`` into two thousand optional rules and crashed. So:

- ``compact_schema`` removes what does not constrain (titles, null defaults) and writes an optional
  scalar as ``type: [T, "null"]``; it accepts exactly the values the original accepts.
- ``portable_schema`` also drops ``PORTABLE_DROPPED`` keywords and enums over ``MAX_PORTABLE_ENUM``
  values, each noted in the field's description so the model still reads the limit. It accepts more
  than the original, so whatever a server answers through it is validated afterwards against the full
  pydantic model on our side (structured output parsers and tool argument schemas do).
- ``lean_schema`` is ``compact_schema`` without descriptions: the last form of an output schema in a
  prompt over budget.

``model_schema`` is a model's JSON schema written once per model: pydantic writes it anew at every
``model_json_schema()`` (tens of milliseconds for an agent's output schema, and the loop reads it several
times a turn: the system prompt's three forms, the progress keys, the tool parameters). ``openai_tool``
does the same for a tool's OpenAI form: langchain makes a new pydantic model of the tool's call schema
at every ``convert_to_openai_tool`` (about a fifth of the CPU of compiling a master graph, whose tools are
new objects for each graph over the same argument classes).
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

#: Keywords a grammar-constrained server may fail on (or expand into huge grammars).
PORTABLE_DROPPED = (
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
)
#: Enums with more values than this lose the enum (kept as their type) in the portable form.
MAX_PORTABLE_ENUM = 64

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "contains", "if", "then", "else")

Node = dict[str, Any]


@functools.lru_cache(maxsize=1024)
def _schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, written once per model class (see the module's docstring); a new
    dict at every call, which the caller may change."""
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


#: A tool's OpenAI form as JSON text, by its argument class, then by what else the form is made of (the
#: tool's class, name and description). Weak keys: a class made at run time (a built system's query
#: tools) is not kept alive by its entry.
_tool_texts: weakref.WeakKeyDictionary[type, dict[tuple[type, str, str], str]] = weakref.WeakKeyDictionary()


def openai_tool(tool: BaseTool) -> dict[str, Any]:
    """``convert_to_openai_tool(tool)``, written once per argument class, name and description; a new dict
    at every call, which the caller may change. A tool whose arguments are not a class (a JSON schema,
    or none) is converted every time."""
    arguments = tool.args_schema
    if not isinstance(arguments, type) or (tool.metadata or {}).get("type") == "custom_tool":
        return convert_to_openai_tool(tool)
    forms = _tool_texts.setdefault(arguments, {})
    key = (type(tool), tool.name, tool.description)
    text = forms.get(key)
    if text is None:
        text = forms[key] = json.dumps(convert_to_openai_tool(tool))
    converted: dict[str, Any] = json.loads(text)
    return converted


def _walk(schema: Any, rewrite: Callable[[Node], Node]) -> Any:
    """``rewrite`` applied to every schema node, children first; returns new dicts (never mutates)."""
    if not isinstance(schema, dict):
        return schema
    node: Node = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            # A map of names to schemas: a property may be *named* "title" and must survive.
            node[key] = {name: _walk(child, rewrite) for name, child in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            node[key] = [_walk(child, rewrite) for child in value]
        elif key in _SCHEMA_VALUES:
            node[key] = (
                [_walk(child, rewrite) for child in value]
                if isinstance(value, list)
                else _walk(value, rewrite)
            )
        else:
            node[key] = value
    return rewrite(node)


def _compact_node(node: Node) -> Node:
    node.pop("title", None)
    if "default" in node and node["default"] is None:
        del node["default"]
    options = node.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = options[0] if options[1] == {"type": "null"} else options[1]
        # Only a plain scalar folds into a type list: an enum or const would then refuse null.
        if isinstance(other.get("type"), str) and not {"enum", "const", "$ref"} & other.keys():
            del node["anyOf"]
            node.update({**other, "type": [other["type"], "null"]})
    return node


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without titles and null defaults, optional scalars as type lists (same values accepted)."""
    compacted: dict[str, Any] = _walk(schema, _compact_node)
    return compacted


def _portable_node(node: Node) -> Node:
    node = _compact_node(node)
    dropped = [f"{key} {node.pop(key)}" for key in PORTABLE_DROPPED if key in node]
    enum = node.get("enum")
    if isinstance(enum, list) and len(enum) > MAX_PORTABLE_ENUM:
        del node["enum"]
        dropped.append(f"one of {len(enum)} values, e.g. {', '.join(map(str, enum[:5]))}")
    if dropped:
        note = f"({'; '.join(dropped)})"
        node["description"] = f"{node['description']} {note}" if node.get("description") else note
    return node


def portable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in a form every mainstream OpenAI-compatible server's grammar accepts (see module doc)."""
    portable: dict[str, Any] = _walk(schema, _portable_node)
    return portable


def _lean_node(node: Node) -> Node:
    node = _compact_node(node)
    node.pop("description", None)
    return node


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``compact_schema`` without descriptions (an output schema's last form in a prompt over budget)."""
    lean: dict[str, Any] = _walk(schema, _lean_node)
    return lean


def portable_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A chat-completion request body whose tool parameters and response format schema are portable
    (a new body: the bound tools the caller keeps are not changed)."""
    tools = payload.get("tools")
    if isinstance(tools, list):
        payload = {**payload, "tools": [_portable_tool(tool) for tool in tools]}
    response_format = payload.get("response_format")
    if isinstance(response_format, dict) and isinstance(response_format.get("json_schema"), dict):
        json_schema = response_format["json_schema"]
        if isinstance(json_schema.get("schema"), dict):
            payload = {
                **payload,
                "response_format": {
                    **response_format,
                    "json_schema": {**json_schema, "schema": portable_schema(json_schema["schema"])},
                },
            }
    return payload


def compact_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-format tool whose parameters are in their compact form."""
    function = tool.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("parameters"), dict):
        return tool
    return {**tool, "function": {**function, "parameters": compact_schema(function["parameters"])}}


def lean_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-format tool whose parameters are in their lean form (its own description stays)."""
    function = tool.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("parameters"), dict):
        return tool
    return {**tool, "function": {**function, "parameters": lean_schema(function["parameters"])}}


def _portable_tool(tool: Any) -> Any:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("parameters"), dict):
        return tool
    return {**tool, "function": {**function, "parameters": portable_schema(function["parameters"])}}
