"""What a tool says of its effects: whether it only reads, and whether a call of it may
run twice.

One rule, used wherever a call could run again: the tool call claims (a call whose
process died inside it runs again only if it may run twice, else it is answered "outcome
unknown") and the MCP toolkit (a call whose server died during it is retried only then).
Its facts come from the tool's ``metadata``, where the MCP toolkit puts a tool's MCP
annotations and a LangChain tool's author may set them too.
"""

from __future__ import annotations

from collections.abc import Collection

from langchain_core.tools import BaseTool

__all__ = ["is_idempotent", "is_read_only"]


def is_idempotent(tool: BaseTool | None, names: Collection[str] = ()) -> bool:
    """Whether a call of ``tool`` may run again when its outcome is unknown.

    Read when the call is made, so a mark set after the tool was built counts.

    Args:
        tool: the tool (``None``, an unknown tool: never).
        names: tool names declared idempotent (``idempotent_tools``).

    Returns:
        ``True`` for a tool named in ``names``, marked ``metadata={"idempotent": True}``,
        or annotated read-only or idempotent (MCP's ``readOnlyHint``, ``idempotentHint``).

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
    """
    if tool is None:
        return False
    meta = tool.metadata or {}
    return (
        tool.name in names
        or meta.get("idempotent") is True
        or is_read_only(tool)
        or meta.get("idempotentHint") is True
    )


def is_read_only(tool: BaseTool) -> bool:
    """Whether ``tool`` says it changes nothing: MCP's ``readOnlyHint`` annotation (in
    the tool's metadata). MCP's default is ``False``: a tool that says nothing may write."""
    return (tool.metadata or {}).get("readOnlyHint") is True
