"""MCP servers as LangChain tools over persistent sessions.

- :mod:`.config`: ``{"mcpServers": {...}}`` and connection dicts, checked up front;
- :mod:`.sessions`: one persistent session per server, restarted when it dies;
- :mod:`.toolkit`: :class:`MCPToolkit` and :func:`load_mcp_tools`, the tools themselves;
- :mod:`.oauth`: the ``oauth`` key of a remote server's entry, and its token cache;
- :mod:`.errors`: what goes wrong, said with the server and field.
"""

from ..formats.schema import clean_schema
from .config import ConfigSource, RemoteServer, StdioServer, parse_mcp_config
from .errors import (
    MCPAuthError,
    MCPCallOutcomeUnknown,
    MCPConfigError,
    MCPServerError,
    MCPToolTimeoutError,
)
from .oauth import OAuthSettings, open_in_browser
from .toolkit import MCPArtifact, MCPPrompt, MCPToolkit, load_mcp_tools

__all__ = [
    "ConfigSource",
    "MCPArtifact",
    "MCPAuthError",
    "MCPCallOutcomeUnknown",
    "MCPConfigError",
    "MCPPrompt",
    "MCPServerError",
    "MCPToolTimeoutError",
    "MCPToolkit",
    "OAuthSettings",
    "RemoteServer",
    "StdioServer",
    "clean_schema",
    "load_mcp_tools",
    "open_in_browser",
    "parse_mcp_config",
]
