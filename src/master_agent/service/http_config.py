"""langgraph.json's ``http`` section, as langgraph-api honours it: browser origins allowed (CORS) and a
custom Starlette/FastAPI app (``http.app``) whose routes are served beside the API's.

The origins come from ``MASTER_AGENT_CORS_ALLOW_ORIGINS`` (or ``http.cors``); none by default, so a
browser page of another origin cannot call the API until an operator names it (LangGraph Studio:
``https://smith.langchain.com``). Custom routes are mounted before the service's, so they may shadow
them, as in langgraph-api; like there, they are not behind the service's API keys.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from master_agent.errors import ConfigError
from master_agent.settings import Settings

#: Response headers a browser client may read: the SDKs page with the first two and reconnect a
#: stream with the others.
EXPOSED_HEADERS = ["x-pagination-total", "x-pagination-next", "content-location", "location"]
#: The ``http.cors`` keys langgraph-api takes (Starlette's CORSMiddleware's own).
_CORS_KEYS = frozenset(
    {
        "allow_origins",
        "allow_methods",
        "allow_headers",
        "allow_credentials",
        "allow_origin_regex",
        "expose_headers",
        "max_age",
    }
)


def http_section(settings: Settings) -> dict[str, Any]:
    """The ``http`` object of ``settings.langgraph_json`` ({} without one)."""
    if settings.langgraph_json is None:
        return {}
    path = settings.langgraph_json
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"MASTER_AGENT_LANGGRAPH_JSON: cannot read {path}: {error}") from None
    section = document.get("http") if isinstance(document, dict) else None
    if section is not None and not isinstance(section, dict):
        raise ConfigError(f"MASTER_AGENT_LANGGRAPH_JSON: {path}: http must be an object")
    return section or {}


def cors_options(settings: Settings, http: dict[str, Any]) -> dict[str, Any] | None:
    """Keyword arguments of Starlette's CORSMiddleware, or None when no origin is allowed."""
    if settings.cors_allow_origins:
        origins = list(settings.cors_allow_origins)
        return {
            "allow_origins": origins,
            # Credentials (cookies) only to named origins: a browser refuses them with ``*`` anyway.
            "allow_credentials": "*" not in origins,
            "allow_methods": ["*"],
            "allow_headers": ["*"],
            "expose_headers": EXPOSED_HEADERS,
            # Chrome asks before a public page (Studio) calls a server on a private address or loopback;
            # answered yes only to the origins named here.
            "allow_private_network": True,
        }
    cors = http.get("cors")
    if not cors:
        return None
    if not isinstance(cors, dict) or set(cors) - _CORS_KEYS:
        raise ConfigError(f"MASTER_AGENT_LANGGRAPH_JSON: http.cors takes only {sorted(_CORS_KEYS)}")
    return {"expose_headers": EXPOSED_HEADERS, **cors}


def custom_app(settings: Settings, http: dict[str, Any]) -> Starlette | None:
    """The app ``http.app`` names (``./file.py:name`` relative to langgraph.json, or ``module:name``)."""
    target = http.get("app")
    if not target:
        return None
    where, _, name = str(target).rpartition(":")
    if not where or not name:
        raise ConfigError(f"http.app: {target!r} is not path/to/file.py:name or module:name")
    if where.endswith(".py"):
        base = settings.langgraph_json.parent if settings.langgraph_json else Path.cwd()
        file = (base / where).resolve()
        spec = importlib.util.spec_from_file_location(f"_http_app_{file.stem}", file)
        if spec is None or spec.loader is None or not file.is_file():
            raise ConfigError(f"http.app: no Python file {file}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    app = getattr(module, name, None)
    if not isinstance(app, Starlette):
        raise ConfigError(f"http.app: {target!r} is not a Starlette or FastAPI app")
    return app
