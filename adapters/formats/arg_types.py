"""Argument values typed by the tool's JSON schema.

Many call formats write every value as text (Qwen3-Coder's ``<parameter=x>5</parameter>``,
GLM's ``<arg_value>``, MiniMax's and DSML's ``<parameter name=…>``, Step-3, Hunyuan,
Kimi-K3, Seed-OSS). Their readers take a value as JSON where it parses; the tool's
schema says what it should be: ``"5"`` for a ``string`` parameter, ``5`` for an
``integer`` one. Readers hand the texts as written with each call
(:class:`~.base.CallEvent` ``texts``); :func:`typed_args` types them by the schema. Values
a format types itself (JSON) are left as the model wrote them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages.tool import ToolCall

from .base import ToolLike, to_tool_specs
from .calls import nests_too_deep, python_literal

__all__ = []

_NO_VALUE = object()


def tool_schemas(tools: Sequence[ToolLike] | None) -> dict[str, dict[str, Any]]:
    """``{tool name: parameters schema}`` of ``tools`` (any form a dialect takes)."""
    return {spec.name: spec.parameters for spec in to_tool_specs(tools)}


def typed_call(
    call: ToolCall, texts: Mapping[str, str] | None, schemas: Mapping[str, Any]
) -> ToolCall:
    """``call`` with the arguments its format wrote as text (``texts``, as written) typed
    by its tool's schema (:func:`typed_args`); as it is for a tool not in ``schemas``."""
    schema = schemas.get(call["name"])
    if not texts or not isinstance(schema, Mapping):
        return call
    return {**call, "args": typed_args(call["args"], texts, schema)}


def typed_args(
    args: dict[str, Any], texts: Mapping[str, str], schema: Mapping[str, Any]
) -> dict[str, Any]:
    """``args`` with each argument written as text (``texts``) typed as its property's
    schema asks.

    The text becomes an integer, number, boolean, null, array or object where the schema
    asks for one and the text spells it (as JSON, or as a Python literal such as
    ``{'check': True}``), and stays text where the schema asks for a string. ``anyOf`` /
    ``oneOf`` alternatives and a list of types are tried in order. An argument that fits
    none of the allowed types, or whose property has no schema, keeps the value it was
    read as (JSON where it parses), for the tool's own check to report.

    Example:
        >>> schema = {"properties": {"n": {"type": "integer"}, "zip": {"type": "string"},
        ...     "tags": {"type": "array"}, "on": {"anyOf": [{"type": "boolean"}]}}}
        >>> args = {"n": 5, "zip": 1234, "tags": "[1, 2]", "on": "True"}
        >>> typed_args(args, {k: str(v) for k, v in args.items()}, schema)
        {'n': 5, 'zip': '1234', 'tags': [1, 2], 'on': True}
    """
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return args
    out = dict(args)
    for key, text in texts.items():
        if key in out and isinstance(props.get(key), Mapping):
            value = _typed(text, props[key])
            if value is not _NO_VALUE:
                out[key] = value
    return out


def _typed(text: str, schema: Mapping[str, Any]) -> Any:
    """``text`` as a type ``schema`` allows that it spells, or ``_NO_VALUE``: the other
    types first and ``string`` last, since any text is a string (``null`` under
    ``anyOf[string, null]`` is null, as llama.cpp's and vLLM's Qwen3-Coder readers type it).
    """
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        alts = [a for a in alternatives if isinstance(a, Mapping)]
        for alt in sorted(alts, key=lambda a: _types(a) == ["string"]):
            if (value := _typed(text, alt)) is not _NO_VALUE:
                return value
        return _NO_VALUE
    enum = schema.get("enum")
    if isinstance(enum, list):
        return next((c for c in (text, _from_text(text)) if c in enum), _NO_VALUE)
    for kind in sorted(_types(schema), key=lambda k: k == "string"):
        value = text if kind == "string" else _convert(text, kind)
        if value is not _NO_VALUE:
            return value
    return _NO_VALUE


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True  # a type this module does not know: nothing to fit


def _convert(text: str, kind: str) -> Any:
    """``text`` as a ``kind``, or ``_NO_VALUE`` when it does not spell one."""
    value = _from_text(text)
    if kind in ("integer", "number") and value is _NO_VALUE and _DECIMAL.fullmatch(text.strip()):
        # ``007``: no JSON number, but the integer Python's int() reads, as vLLM's
        # Qwen3-Coder reader types it (``_convert_param_value``)
        value = int(text.strip())
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if value is not _NO_VALUE and _is(value, kind) else _NO_VALUE


_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _from_text(value: Any) -> Any:
    """The JSON (or Python literal) value ``value`` spells, if it is text that spells one."""
    if not isinstance(value, str):
        return _NO_VALUE
    text = value.strip()
    if not text:
        return _NO_VALUE
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    if nests_too_deep(text):
        return _NO_VALUE
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        try:
            parsed = python_literal(text)  # {'check': True}, a set or tuple as a list
        except ValueError:
            return _NO_VALUE
    if isinstance(parsed, float) and not math.isfinite(parsed):
        return _NO_VALUE
    return parsed
