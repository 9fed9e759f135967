"""MCP content as the model reads it: text for the ``ToolMessage``, the rest kept.

The one place MCP content becomes LangChain's: a tool's result (:func:`result_for_model`)
and a resource's contents (:func:`contents_for_model`). Text parts are joined with
``"\\n\\n"``; images, audio, embedded resources and links are described in the text and
kept whole in the artifact (:class:`MCPArtifact`); a result the server marked ``isError``
raises ``ToolException`` with its text (:func:`~.tools.call_tool`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict
from urllib.parse import unquote

from langchain_core.messages.content import create_file_block, create_image_block
from mcp.types import CallToolResult

from .stack import wire

__all__ = []


class MCPArtifact(TypedDict, total=False):
    """The artifact of a tool result (`ToolMessage.artifact`).

    Attributes:
        content: non-text parts as LangChain content blocks, in the server's order
            (`{"type": "image", "base64": ..., "mime_type": ...}`, `"audio"`, `"file"`).
        structured_content: the MCP result's `structuredContent`, when present.
        for_user: parts the server addressed to the person only
            (`annotations.audience == ["user"]`): kept here, not shown to the model.
        resource_refs: the embedded resources and resource links of the result
            (`{"uri", "name", "mime_type"}`).
        resources: for `list_resources`, the listed resources and templates.
    """

    content: list[dict[str, Any]]
    structured_content: dict[str, Any]
    for_user: list[dict[str, Any]]
    resource_refs: list[dict[str, Any]]
    resources: dict[str, Any]


def _b64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _describe_block(block: Mapping[str, Any]) -> str:
    """A short text standing in for a non-text part, so the model knows it is there."""
    kind = block.get("type", "data")
    mime = block.get("mime_type") or "application/octet-stream"
    if block.get("base64") is not None:
        return f"[{kind}: {mime}, {_b64_size(block['base64'])} bytes]"
    if block.get("url"):
        return f"[{kind}: {mime}, {block['url']}]"
    return f"[{kind}: {mime}]"


def _blocks_for_model(blocks: Sequence[Mapping[str, Any]]) -> tuple[str, MCPArtifact | None]:
    """A resource's contents, as LangChain blocks, as the model's text and the artifact."""
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    others = [dict(b) for b in blocks if b.get("type") != "text"]
    content = "\n\n".join(texts + [_describe_block(b) for b in others])
    return content, ({"content": others} if others else None)


def contents_for_model(contents: Sequence[Mapping[str, Any]]) -> tuple[str, MCPArtifact | None]:
    """A resource's contents (``resources/read``'s ``contents``, protocol form) as the
    model's text and the message's artifact: text as text; binary contents as an image or
    file block (its ``uri`` kept), described in the text."""
    blocks: list[dict[str, Any]] = []
    for part in contents:
        if part.get("text") is not None:
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("blob") is not None:
            mime = part.get("mimeType") or "application/octet-stream"
            make = create_image_block if mime.startswith("image/") else create_file_block
            block = dict(make(base64=part["blob"], mime_type=mime))
            block["uri"] = part["uri"]
            blocks.append(block)
    return _blocks_for_model(blocks)


def _block_and_text(block: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """An MCP content block (protocol form) as a LangChain block, and the text that
    stands for it."""
    kind = block.get("type", "")
    if kind == "text":
        return {"type": "text", "text": block["text"]}, block["text"]
    if kind in ("image", "audio"):
        lc = {"type": kind, "base64": block["data"], "mime_type": block.get("mimeType")}
        return lc, _describe_block(lc)
    if kind == "resource_link":
        lc = {"type": "file", "url": block["uri"], "mime_type": block.get("mimeType")}
        return lc, f"[link: {block.get('name')} {unquote(block['uri'])}]"
    if kind == "resource":
        res = block["resource"]
        uri, mime = res["uri"], res.get("mimeType")
        if res.get("text") is not None:
            return {
                "type": "text",
                "text": res["text"],
            }, f"[resource {unquote(uri)}]\n{res['text']}"
        lc = {"type": "file", "base64": res["blob"], "mime_type": mime, "url": uri}
        size = _b64_size(res["blob"])
        return lc, f"[file: {unquote(uri)}, {mime or 'application/octet-stream'}, {size} bytes]"
    return {"type": "text", "text": json.dumps(block)}, f"[{kind or 'unknown'} content]"


def result_for_model(result: CallToolResult | Mapping[str, Any]) -> tuple[str, MCPArtifact | None]:
    """A tool's MCP result as the model's text and the message's artifact.

    The text follows the server's order of parts; a part for the person only
    (``audience: ["user"]``) stays out of it and goes to ``artifact["for_user"]``;
    non-text parts are described in the text and kept whole in ``artifact["content"]``;
    embedded resources and links keep their uri and name.
    """
    result = wire(result)
    texts: list[str] = []
    artifact: MCPArtifact = {}
    for block in result.get("content") or ():
        lc, text = _block_and_text(block)
        audience = (block.get("annotations") or {}).get("audience")
        if audience is not None and "assistant" not in audience:
            artifact.setdefault("for_user", []).append(lc)
            continue
        texts.append(text)
        if lc["type"] != "text":
            artifact.setdefault("content", []).append(lc)
        if block["type"] in ("resource", "resource_link"):
            res = block["resource"] if block["type"] == "resource" else block
            ref = {"uri": res["uri"], "name": res.get("name"), "mime_type": res.get("mimeType")}
            artifact.setdefault("resource_refs", []).append(ref)
    if result.get("structuredContent") is not None:
        artifact["structured_content"] = dict(result["structuredContent"])
    content = "\n\n".join(texts)
    if not content and artifact.get("for_user"):
        content = "[the result is addressed to the user; it was shown to them, not to you]"
    return content, (artifact or None)
