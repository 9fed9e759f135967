"""A server's prompts: listed (:class:`MCPPrompt`), and filled in as LangChain messages."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, HumanMessage

from .listing import paginate
from .stack import wire

if TYPE_CHECKING:
    from .sessions import Server

__all__ = ["MCPPrompt"]


def prompt_message(prompt: str, message: Mapping[str, Any]) -> HumanMessage | AIMessage:
    """One message of an MCP prompt (protocol form) as a LangChain message."""
    content = message["content"]
    if content.get("type") != "text":
        raise ValueError(
            f"MCP prompt {prompt!r}: a {content.get('type')!r} part cannot be a chat message"
        )
    if message["role"] == "assistant":
        return AIMessage(content=content["text"])
    return HumanMessage(content=content["text"])


@dataclass(frozen=True)
class MCPPrompt:
    """A prompt a server offers: ``name`` is ``f"{server}{separator}{prompt}"``.

    ``arguments`` are the server's ``{"name", "description", "required"}`` dicts.
    """

    name: str
    server: str
    prompt: str
    description: str
    arguments: tuple[dict[str, Any], ...]


async def list_prompts(server: Server, separator: str) -> list[MCPPrompt]:
    """The prompts ``server`` offers (none if it does not declare prompts)."""
    link = server.link
    if link is None or wire(link.init)["capabilities"].get("prompts") is None:
        return []
    found: list[Any] = await server.request(
        "prompts/list", lambda s: paginate(lambda c: s.list_prompts(cursor=c), "prompts")
    )
    return [
        MCPPrompt(
            name=f"{server.name}{separator}{p['name']}",
            server=server.name,
            prompt=p["name"],
            description=p.get("description") or "",
            arguments=tuple(p.get("arguments") or ()),
        )
        for p in found
    ]


async def get_prompt(
    server: Server, prompt: MCPPrompt, arguments: Mapping[str, Any] | None
) -> list[HumanMessage | AIMessage]:
    """The messages of ``prompt`` (one of ``server``'s) filled with ``arguments``.

    Raises:
        ValueError: a required argument is missing.
    """
    given = dict(arguments or {})
    missing = [a["name"] for a in prompt.arguments if a.get("required") and a["name"] not in given]
    if missing:
        raise ValueError(f"MCP prompt {prompt.name!r} needs the argument(s) {', '.join(missing)}")
    # MCP prompt arguments are strings
    values = {
        k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in given.items()
    }
    result = await server.request(
        f"prompt {prompt.prompt!r}", lambda session: session.get_prompt(prompt.prompt, values)
    )
    return [prompt_message(prompt.name, m) for m in wire(result)["messages"]]
