"""An MCP tool's input schema, read for the graph: checked, its references resolved or
dropped, cleaned for prompt dialects; and the arguments a call sends by it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from ..formats.base import clean_schema

__all__ = []

logger = logging.getLogger("fncall_graph.adapters.mcp.toolkit")


def nulls_as_schema_allows(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` less the optional ones given as ``null`` where the tool's schema does
    not allow ``null`` for them: a model (and an application) often writes ``null`` for
    "not given", and MCP sends what the schema allows, which is to leave it out. A
    ``null`` the schema allows, and one for a required parameter, are sent as given."""
    required = set(schema.get("required") or ())
    properties = schema.get("properties") or {}
    return {
        name: value
        for name, value in arguments.items()
        if value is not None or name in required or _allows_null(properties.get(name))
    }


def _allows_null(schema: Any) -> bool:
    """Whether a parameter's schema takes ``null``: ``"null"`` among its types, its
    ``enum`` or ``const``, a branch of its ``anyOf``/``oneOf`` that does, or nothing
    said that refuses it (no type; a ``$ref`` is not followed here)."""
    if not isinstance(schema, Mapping):
        return True
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema:
        return None in (schema["enum"] or ())
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    branches = [b for key in ("anyOf", "oneOf") for b in schema.get(key) or ()]
    if branches:
        return any(_allows_null(branch) for branch in branches)
    return kind is None


def input_schema(server: str, tool: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tool's input schema, cleaned for prompt dialects and model APIs.

    A ``$ref`` this client cannot follow (to another document, or to nothing) is left
    out, its sibling keywords kept, with a log line: one odd schema must not keep the
    server's other tools, or the toolkit, from starting. ``None`` (the tool is left out,
    logged) when even that does not give a usable schema, or when it is no JSON schema at
    all (``{"type": "strange"}``: no argument could be checked against it)."""
    problem = _not_a_schema(tool.get("inputSchema"))
    if problem is not None:
        logger.warning(
            "MCP server %r: tool %r left out: its input schema is not a valid JSON schema (%s)",
            server,
            tool["name"],
            problem,
        )
        return None
    try:
        return clean_schema(tool["inputSchema"])
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        cause = exc
    dropped: list[str] = []
    schema = _local_refs_only(tool["inputSchema"], tool["inputSchema"], dropped)
    try:
        cleaned = clean_schema(schema)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        logger.warning(
            "MCP server %r: tool %r left out: its input schema cannot be read (%s)",
            server,
            tool["name"],
            exc,
        )
        return None
    logger.warning(
        "MCP server %r: tool %r: its input schema refers to %s, which this client cannot "
        "follow (%s); the tool is kept without those references",
        server,
        tool["name"],
        ", ".join(dropped),
        cause,
    )
    return cleaned


def _not_a_schema(schema: Any) -> str | None:
    """Why ``schema`` is no JSON schema (checked against its draft's metaschema, 2020-12
    by default, as MCP says), or ``None``."""
    import jsonschema  # ~0.1 s: loaded when a server's tools are listed

    if not isinstance(schema, Mapping):
        return f"an object was expected, got {type(schema).__name__}"
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top"
        return f"{exc.message} at {where}"
    return None


def _local_refs_only(node: Any, root: Mapping[str, Any], dropped: list[str]) -> Any:
    """``node`` without the ``$ref``s that do not point into ``root`` (``#/...``)."""
    if isinstance(node, list):
        return [_local_refs_only(item, root, dropped) for item in node]
    if not isinstance(node, Mapping):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref" and not (isinstance(value, str) and _resolves(root, value)):
            dropped.append(repr(value))
            continue
        out[key] = _local_refs_only(value, root, dropped)
    return out


def _resolves(root: Mapping[str, Any], ref: str) -> bool:
    if not ref.startswith("#"):
        return False
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True
