"""Tool descriptions in one canonical shape, whatever they came as.

Dialects accept LangChain ``BaseTool``s, plain functions, OpenAI function dicts
(``{"type": "function", "function": {...}}`` or the bare ``{"name", "parameters"}``)
and MCP tool dicts (``{"name", "description", "inputSchema"}``). They all become a
:class:`ToolSpec` whose ``parameters`` are cleaned to ``type/properties/required``,
the shape the Hermes prompt of Qwen-Agent prints.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.utils.json_schema import dereference_refs

from .messages import dumps

__all__ = ["ToolLike", "ToolSpec", "clean_schema", "to_tool_spec", "to_tool_specs"]

ToolLike = Union[BaseTool, Mapping[str, Any], Callable[..., Any], "ToolSpec"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as every dialect sees it: a name, a description and a cleaned JSON schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )

    def as_openai(self) -> dict[str, Any]:
        """The OpenAI ``{"type": "function", "function": {...}}`` form, keys in Qwen-Agent's order."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    @cached_property
    def openai_json(self) -> str:
        """:meth:`as_openai` as the JSON text a prompt lists it in (:func:`.messages.dumps`),
        written once: a prompt dialect lists its tools on every model call."""
        return dumps(self.as_openai())


def clean_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Keep ``type``, ``properties`` and ``required`` of an object schema.

    ``required`` is added as ``[]`` when missing, as Qwen-Agent's MCP manager does, so
    models always see the same three keys. Property schemas are kept as they are, except
    that ``$ref``s into ``$defs`` are inlined first, so nested models keep their meaning.

    >>> clean_schema({"type": "object", "properties": {}, "title": "x"})
    {'type': 'object', 'properties': {}, 'required': []}
    """
    schema = dict(schema or {})
    if "$defs" in schema or "definitions" in schema:
        schema = dereference_refs(schema)
    return {
        "type": schema.get("type", "object"),
        "properties": dict(schema.get("properties") or {}),
        "required": list(schema.get("required") or []),
    }


def to_tool_spec(tool: ToolLike) -> ToolSpec:
    """Turn any supported tool description into a :class:`ToolSpec`.

    Raises:
        TypeError: for an object that is none of the supported forms, naming its type.
    """
    if isinstance(tool, ToolSpec):
        return tool
    if isinstance(tool, Mapping):
        if "inputSchema" in tool:  # MCP tool dict
            return ToolSpec(
                name=str(tool["name"]),
                description=str(tool.get("description") or ""),
                parameters=clean_schema(tool["inputSchema"]),
            )
        fn = tool.get("function", tool)
        if isinstance(fn, Mapping) and "name" in fn:
            return ToolSpec(
                name=str(fn["name"]),
                description=str(fn.get("description") or ""),
                parameters=clean_schema(fn.get("parameters")),
            )
    if isinstance(tool, BaseTool) and isinstance(tool.args_schema, Mapping):
        # MCP tools carry a dict schema already; convert_to_openai_tool would rebuild it
        return ToolSpec(tool.name, tool.description or "", clean_schema(tool.args_schema))
    if isinstance(tool, BaseTool):
        return _described(tool)
    if isinstance(tool, Mapping) or callable(tool):
        return _converted(tool)
    raise TypeError(f"cannot describe a tool of type {type(tool).__name__}: {tool!r}")


def _converted(tool: Any) -> ToolSpec:
    fn = convert_to_openai_tool(tool)["function"]
    return ToolSpec(
        name=fn["name"],
        description=fn.get("description") or "",
        parameters=clean_schema(fn.get("parameters")),
    )


# A BaseTool described once while its name, description and schema stay as they are:
# a prompt dialect describes its tools on every model call, and building the JSON schema
# of a pydantic ``args_schema`` is most of a call's own cost.
_described_tools: dict[int, tuple[weakref.ref[BaseTool], tuple[Any, ...], ToolSpec]] = {}


def _described(tool: BaseTool) -> ToolSpec:
    ident = id(tool)
    seen = _described_tools.get(ident)
    stamp = (tool.name, tool.description, id(tool.args_schema))
    if seen is not None and seen[0]() is tool and seen[1] == stamp:
        return seen[2]
    spec = _converted(tool)
    try:
        ref = weakref.ref(tool, lambda _: _described_tools.pop(ident, None))
    except TypeError:  # a tool that takes no weak reference: described each time
        return spec
    _described_tools[ident] = (ref, stamp, spec)
    return spec


def to_tool_specs(tools: Iterable[ToolLike] | None) -> list[ToolSpec]:
    """:func:`to_tool_spec` over a list; ``None`` is no tools."""
    return [to_tool_spec(t) for t in tools or ()]
