"""An MCP server's log messages (``notifications/message``) as Python logging records."""

from __future__ import annotations

import json
import logging
from typing import Any

__all__ = []

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def log_server_message(server: str, params: Any) -> None:
    """An MCP ``notifications/message`` as a record of the ``fncall_graph.mcp.<server>``
    logger (the server's own logger name, if it gives one, is kept in the text)."""
    data = params.data
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    if params.logger:
        text = f"{params.logger}: {text}"
    logging.getLogger(f"fncall_graph.mcp.{server}").log(
        _LEVELS.get(str(params.level), logging.INFO), "%s", text
    )
