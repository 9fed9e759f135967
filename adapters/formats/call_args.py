"""A call's arguments read from what a model wrote, and the call events made of them.

JSON a model wrote is read leniently (:func:`loads_lenient`); arguments become a dict
(:func:`coerce_args`) that JSON can carry to a tool: no NaN, no infinities, no nesting
deeper than :data:`MAX_ARGS_DEPTH` (:func:`argument_problem`). Each call gets an id unique
across turns and threads (:func:`new_call_id`).
"""

from __future__ import annotations

import ast
import json
import math
import uuid
from collections.abc import Sequence
from typing import Any

import json_repair
from langchain_core.messages.tool import invalid_tool_call, tool_call

from .events import CallEvent, InvalidCallEvent, ParseEvent
from .json_text import bracket_depth

__all__ = ["MAX_ARGS_DEPTH", "coerce_args", "literal_value", "loads_lenient", "python_literal"]


def new_call_id() -> str:
    """A tool-call id unique across turns and threads (never "1", "2" again)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def loads_lenient(text: str) -> Any:
    """Read JSON a model wrote, repairing the usual breakage.

    Strict JSON first; then json-repair for single quotes, trailing commas, Python
    literals, missing closing brackets and the like.

    Raises:
        ValueError: when nothing JSON-like can be recovered.
    """
    text = text.strip()
    if not text:
        raise ValueError("empty JSON")
    if nests_too_deep(text):  # never handed to a reader that recurses per bracket
        raise ValueError(TOO_DEEP)
    try:
        return json.loads(text)
    except ValueError:
        pass
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    try:
        value = json_repair.repair_json(text, return_objects=True, skip_json_loads=True)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except Exception as exc:  # json-repair is best effort; anything it throws is "unreadable"
        raise ValueError(f"unreadable JSON: {exc}") from exc
    if value == "" or value is None:
        raise ValueError(f"unreadable JSON: {_clip(text)}")
    return value


def python_literal(text: str) -> Any:
    """The JSON value a Python literal spells (``{'check': True}``, ``('a', 'b')``,
    ``{'x', 'y'}``): tuples and sets as lists of their items in the order written.

    Raises:
        ValueError: when ``text`` is no literal, or holds what JSON cannot carry (bytes).

    >>> python_literal("{'tags': {'urgent', 'bug'}, 'on': True}")
    {'tags': ['urgent', 'bug'], 'on': True}
    """
    try:
        tree = ast.parse(text.strip(), mode="eval").body
        return literal_value(tree)
    except (SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(f"not a Python literal: {exc}") from None


def literal_value(node: ast.expr) -> Any:
    """The JSON value of one parsed Python literal (see :func:`python_literal`)."""
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:
                raise ValueError("a ** inside a literal")
            name = literal_value(key)
            if not isinstance(name, str):
                raise ValueError(f"the key {name!r} is not a string")
            out[name] = literal_value(item)
        return out
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [literal_value(e) for e in node.elts]
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    value = ast.literal_eval(node)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} is not a JSON number")
    if value is not None and not isinstance(value, str | int | float):
        raise ValueError(
            f"{ast.unparse(node)} is a {type(value).__name__}, which JSON cannot carry"
        )
    return value


_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def coerce_args(value: Any) -> dict[str, Any]:
    """Arguments as a dict, whether given as an object or as a JSON string.

    Raises:
        ValueError: when the arguments are not a JSON object.
    """
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        value = loads_lenient(value)
        if isinstance(value, str):  # arguments double-encoded as a JSON string
            value = loads_lenient(value)
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    _check_plain(value, "arguments", 0)
    return value


#: How deep call arguments may nest; deeper is refused as unreadable, not recursed into.
MAX_ARGS_DEPTH = 64
#: The error of a call whose arguments nest deeper than :data:`MAX_ARGS_DEPTH`.
TOO_DEEP = f"arguments nest deeper than {MAX_ARGS_DEPTH} levels"
# JSON text deeper than this holds no readable call: arguments, and the call object or
# list around them (``{"tool_calls": [{"function": {"arguments": …}}]}``)
_TEXT_DEPTH = MAX_ARGS_DEPTH + 8


def nests_too_deep(text: str) -> bool:
    """Whether the JSON in ``text`` nests deeper than a call's arguments may, with the
    call's own wrapping (brackets in strings do not count).

    Such text is refused before any reader sees it: JSON's readers recurse per bracket,
    and a model (or provider) writing thousands of them would exhaust Python's stack.

    Example:
        >>> nests_too_deep("[" * 100 + "]" * 100), nests_too_deep('{"a": "' + "[" * 100 + '"}')
        (True, False)
    """
    if text.count("[") + text.count("{") <= _TEXT_DEPTH:
        return False
    return bracket_depth(text) > _TEXT_DEPTH


def argument_problem(args: Any) -> str | None:
    """Why a call's decoded arguments cannot go to a tool, or ``None`` when they can.

    The same check text-read calls get: a provider's ``tool_calls`` field can carry
    NaN or infinities (Python's JSON reader takes them) and nesting deep enough to
    break the checkpoint's serializer.

    >>> argument_problem({"x": float("nan")})
    'arguments.x is nan, which is not a JSON number'
    >>> argument_problem({"city": "Paris"}) is None
    True
    """
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    try:
        _check_plain(args, "arguments", 0)
    except ValueError as error:
        return str(error)
    return None


def _check_plain(value: Any, where: str, depth: int) -> None:
    """Refuse what JSON cannot carry to a tool: NaN, infinities, absurd nesting, and any
    value that is not JSON's (bytes, sets, objects a reader or provider let through), so
    that no reply raises later where its arguments are written as JSON."""
    if depth > MAX_ARGS_DEPTH:
        raise ValueError(TOO_DEEP)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} is {value!r}, which is not a JSON number")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} has the key {key!r}, which is not a JSON string")
            _check_plain(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]", depth + 1)
    elif value is not None and not isinstance(value, str | int | float):  # bool is an int
        raise ValueError(f"{where} is a {type(value).__name__}, which JSON cannot carry")


def call_from_object(
    obj: Any,
    *,
    raw: str,
    name_key: str = "name",
    args_key: str = "arguments",
    args_keys: Sequence[str] = ("parameters", "args"),
) -> ParseEvent:
    """Turn a decoded ``{"name": ..., "arguments": ...}`` object into a call event."""
    if not isinstance(obj, dict):
        return invalid(raw, f"expected a JSON object with {name_key!r}, got {type(obj).__name__}")
    name = obj.get(name_key)
    if not isinstance(name, str) or not name.strip():
        return invalid(raw, f"missing tool name ({name_key!r})")
    args = obj.get(args_key)
    for key in args_keys:
        if args is None:
            args = obj.get(key)
    try:
        return CallEvent(tool_call(name=name.strip(), args=coerce_args(args), id=new_call_id()))
    except ValueError as exc:
        return invalid(raw, f"bad arguments for {name.strip()!r}: {exc}", name=name.strip())


def invalid(raw: str, error: str, *, name: str | None = None) -> InvalidCallEvent:
    return InvalidCallEvent(invalid_tool_call(name=name, args=raw, id=new_call_id(), error=error))


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
