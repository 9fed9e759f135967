"""What a tool says of its effects: whether it only reads, and whether a call of it may
run twice; and whose word that is.

One rule, used wherever a call could run unasked or run again: the approvals of
``interrupt_on="annotations"`` (a tool that does not only read asks first), the tool call
claims (a call whose process died inside it runs again only if it may run twice, else it
is answered "outcome unknown") and the MCP toolkit (a call whose server died during it is
retried only then).

Only trusted facts count. The tool's own ``metadata`` is its author's word, the user's
code (``metadata={"readOnlyHint": True}``, ``{"idempotent": True}``, set when the tool
is made or later), and counts. An MCP server's tool annotations are the server's word:
the MCP spec has clients treat them as untrusted unless the server is trusted. The MCP
toolkit keeps them apart, in ``metadata["mcp_annotations"]`` (under their MCP names), with
``metadata["mcp_trust"]``, the user's trust in that server (``"annotations"``: its
annotations count; ``None``: they do not). So a server's ``readOnlyHint`` or
``idempotentHint`` takes away a question or allows a retry only for a server the user
marked trusted; an untrusted server's annotations change nothing, and what a tool that
says nothing gets (it asks, and is not run twice) is already the careful side. The tool's
own metadata goes over a trusted server's annotations, so the user can also narrow them
(``metadata={"readOnlyHint": False}``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.tools import BaseTool

__all__ = ["is_idempotent", "is_read_only"]

_TRUSTED = "annotations"
"""``metadata["mcp_trust"]`` of a tool whose MCP server's annotations the user trusts (the
``"trust": "annotations"`` of its ``mcpServers`` entry)."""


def _facts(tool: BaseTool) -> Mapping[str, Any]:
    """What is trusted of ``tool``'s effects: its server's annotations if the user trusts
    that server, with the tool's own metadata (the user's word) over them."""
    meta = tool.metadata or {}
    announced = meta.get("mcp_annotations")
    if meta.get("mcp_trust") == _TRUSTED and isinstance(announced, Mapping):
        return {**announced, **meta}
    return meta


def is_idempotent(tool: BaseTool | None, names: Collection[str] = ()) -> bool:
    """Whether a call of ``tool`` may run again when its outcome is unknown.

    Read when the call is made, so a mark set after the tool was built counts.

    Args:
        tool: the tool (``None``, an unknown tool: never).
        names: tool names declared idempotent (``idempotent_tools``).

    Returns:
        ``True`` for a tool named in ``names``, marked ``metadata={"idempotent": True}``,
        or said to be read-only or idempotent (``readOnlyHint``, ``idempotentHint``) in
        its own metadata or by an MCP server the user trusts; never for what an untrusted
        server announced.

    Example:
        >>> from langchain_core.tools import StructuredTool
        >>> def set_flag(on: bool) -> str:
        ...     "Set the flag."
        ...     return "done"
        >>> plain = StructuredTool.from_function(set_flag)
        >>> is_idempotent(plain), is_idempotent(plain, {"set_flag"})
        (False, True)
        >>> hinted = StructuredTool.from_function(set_flag, metadata={"idempotentHint": True})
        >>> is_idempotent(hinted), is_read_only(hinted)
        (True, False)
        >>> said = {"mcp_annotations": {"idempotentHint": True}, "mcp_trust": None}
        >>> announced = StructuredTool.from_function(set_flag, metadata=said)
        >>> is_idempotent(announced)  # an untrusted server's word
        False
        >>> announced.metadata["mcp_trust"] = "annotations"  # the user trusts the server
        >>> is_idempotent(announced)
        True
    """
    if tool is None:
        return False
    facts = _facts(tool)
    return (
        tool.name in names
        or facts.get("idempotent") is True
        or facts.get("readOnlyHint") is True
        or facts.get("idempotentHint") is True
    )


def is_read_only(tool: BaseTool) -> bool:
    """Whether ``tool`` is known to change nothing: ``readOnlyHint`` in its own metadata,
    or annotated so by an MCP server the user trusts. MCP's default is ``False``: a tool
    that says nothing may write, and so may one whose untrusted server says it only reads.

    Example:
        >>> from langchain_core.tools import StructuredTool
        >>> def look() -> str:
        ...     "Look."
        ...     return ""
        >>> is_read_only(StructuredTool.from_function(look, metadata={"readOnlyHint": True}))
        True
        >>> said = {"mcp_annotations": {"readOnlyHint": True}, "mcp_trust": None}
        >>> is_read_only(StructuredTool.from_function(look, metadata=said))
        False
    """
    return _facts(tool).get("readOnlyHint") is True
