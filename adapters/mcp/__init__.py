"""MCP servers as LangChain tools over persistent sessions.

- :mod:`.config`: ``{"mcpServers": {...}}`` and connection dicts, checked up front;
- :mod:`.sessions`: one persistent session per server, restarted when it dies;
- :mod:`.toolkit`: :class:`MCPToolkit` and :func:`load_mcp_tools`, the servers' tools;
- :mod:`.tools`: one listed tool as a LangChain tool, and its call;
- :mod:`.results`: MCP content (a tool's result, a resource's contents) as the model
  reads it;
- :mod:`.call_hooks`: what a server sends during a call (progress, questions);
- :mod:`.schemas`, :mod:`.prompts`, :mod:`.resources`: a tool's input schema, the
  servers' prompts, their resources as two more tools;
- :mod:`.oauth`: the ``oauth`` key of a remote server's entry, and its token cache;
- :mod:`.errors`: what goes wrong, said with the server and field.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Only the exceptions load with the package: nodes catch them on every run, while the MCP
# SDK (and the web stack it pulls in) loads when a toolkit or a config is first used.
from .errors import (
    MCPAuthError,
    MCPCallOutcomeUnknown,
    MCPConfigError,
    MCPServerError,
)

if TYPE_CHECKING:
    from .config import parse_mcp_config
    from .prompts import MCPPrompt
    from .toolkit import MCPToolkit, load_mcp_tools

_LAZY = {
    "parse_mcp_config": ".config",
    "MCPPrompt": ".prompts",
    "MCPToolkit": ".toolkit",
    "load_mcp_tools": ".toolkit",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "MCPAuthError",
    "MCPCallOutcomeUnknown",
    "MCPConfigError",
    "MCPPrompt",
    "MCPServerError",
    "MCPToolkit",
    "load_mcp_tools",
    "parse_mcp_config",
]
