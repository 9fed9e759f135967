"""The MCP SDK this process runs on, behind one seam.

fncall-graph speaks MCP through either generation of the official Python SDK, whichever
is installed:

- **mcp 1.x**, sessions opened by langchain-mcp-adapters: the 2025-11-25 protocol
  (``initialize`` handshake);
- **mcp 2.x**, its own ``Client``: asks ``server/discover`` for the 2026-07-28 protocol
  (stateless requests; a server's questions come as input-required results, answered
  and retried by the SDK) and falls back to the 2025-11-25 handshake.

The seam is :func:`open_session`: an open session whose methods are those both SDKs
share (``list_tools``, ``call_tool``, ``list_prompts``, ``get_prompt``,
``list_resources``, ``list_resource_templates``, ``read_resource``, ``send_ping``), what
the server said at the start as an ``InitializeResult``, and the server's requests
and notifications sent to :class:`Handlers`; ``http_refusal(session)`` is the HTTP
401/403 behind a request the session saw fail, where the SDK does not raise it itself;
``authorization_code(code, state, iss)`` is what an OAuth callback handler returns to the
SDK's ``OAuthClientProvider``. Everything above it reads MCP objects
through :func:`wire`, their protocol (JSON) form, which is the same in both SDKs (their
Python attribute names are not: ``mimeType`` in 1.x is ``mime_type`` in 2.x), and builds
them with ``mcp.types`` constructors by protocol field names, which both accept.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import version
from typing import Any

import pydantic

from .handlers import Handlers

__all__ = [
    "GENERATION",
    "MCP_VERSION",
    "Handlers",
    "MCPError",
    "authorization_code",
    "http",
    "http_refusal",
    "open_session",
    "wire",
]

MCP_VERSION = version("mcp")
"""The installed ``mcp`` distribution's version."""

GENERATION = 2 if int(MCP_VERSION.split(".", 1)[0]) >= 2 else 1
"""Which SDK generation the toolkit runs on: 1 (mcp 1.x) or 2 (mcp 2.x)."""


def wire(obj: Any) -> dict[str, Any]:
    """An MCP object in its protocol form (camelCase keys, ``_meta``, JSON values); a
    mapping is taken as already in that form."""
    if isinstance(obj, pydantic.BaseModel):
        return obj.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError(f"not an MCP object: {obj!r}")


if GENERATION >= 2:
    from ._sdk2 import MCPError, authorization_code, http, http_refusal, open_session
else:
    from ._sdk1 import MCPError, authorization_code, http, http_refusal, open_session
