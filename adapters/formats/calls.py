"""A call as reading a reply gives it: the events, the JSON text its arguments are
written in, their checks, and its id.

A reply is read into events (:data:`ParseEvent`): answer text, reasoning, complete calls
and calls that could not be read. A :class:`StreamParser` yields them chunk by chunk, as
soon as they are certain; its :meth:`~StreamParser.message` is the read reply.

JSON a model wrote is text first. Markup a call's arguments quote (``</tool_call>`` in
code a call passes) is the argument's text: :func:`in_json_string` tells where a string
is open, and :func:`find_unquoted`, :func:`split_unquoted` and :func:`partition_unquoted`
find markers outside strings. :func:`brackets_closed` tells whether a value was written
whole, and :func:`bracket_depth` how deep it nests. It is read leniently
(:func:`loads_lenient`); arguments become a dict (:func:`coerce_args`) that JSON can
carry to a tool: no NaN, no infinities, no nesting deeper than :data:`MAX_ARGS_DEPTH`
(:func:`argument_problem`).

Each call gets an id unique across turns and threads (:func:`new_call_id`), by the one
call-identity rule (:class:`CallIds`): a call keeps its id unless it has none, or the id
is taken by the thread or by an earlier call of the same reply. A call read from two
places (the provider's ``tool_calls`` field and the reply's text) is one call
(:func:`unmatched`); :func:`merge_calls` puts the two together, giving the field's calls
the checks text-read calls get.
"""

from __future__ import annotations

import ast
import json
import math
import re
import reprlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

__all__ = ["in_json_string"]


#: ``response_metadata`` key of a native reply whose calls were read from markup in its
#: content (its server had no tool parser): the format they were written in.
# -- what reading a reply gives: events, and the stream parser that yields them
MARKUP_FORMAT_KEY = "fncall_markup_format"


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """Answer text, markup already removed."""

    text: str


class ShownMarkup(ContentDelta):
    """Answer text that is call markup the reply only shows (in a list item, a code
    block, quotation marks, …: :mod:`.scanner`): text, never a call."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text (``<think>`` blocks, ReAct thoughts), kept apart from the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class CallEvent:
    """A complete, readable tool call.

    ``texts``: the arguments the format wrote as untyped text (``<parameter=n>5``), as
    written, by name; the tool's schema decides their types (:mod:`.arg_types`).
    """

    call: ToolCall
    texts: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class InvalidCallEvent:
    """A tool call that could not be read, with the reason in ``call["error"]``."""

    call: InvalidToolCall


ParseEvent = ContentDelta | ReasoningDelta | CallEvent | InvalidCallEvent


def text_after_calls(events: Iterable[ParseEvent]) -> str:
    """The answer text a reply's events give after its last call (``""`` for none)."""
    after: list[str] = []
    for ev in events:
        if isinstance(ev, CallEvent | InvalidCallEvent):
            after = []
        elif isinstance(ev, ContentDelta):
            after.append(ev.text)
    return "".join(after)


class StreamParser(ABC):
    """Fed chunks of a model's text, yields events as soon as they are certain."""

    @abstractmethod
    def feed(self, chunk: str) -> list[ParseEvent]:
        """Take the next chunk; return what it completes."""

    @abstractmethod
    def close(self) -> list[ParseEvent]:
        """End of output: flush what was held back (an unclosed last call included)."""

    @abstractmethod
    def message(self) -> AIMessage:
        """The canonical ``AIMessage`` for everything fed so far (call after :meth:`close`)."""


# -- JSON a model wrote, as text: where its strings stand, whether its brackets close
def in_json_string(text: str) -> bool:
    r"""Whether ``text`` (a call's text so far) ends inside a JSON string.

    The one rule for markup written inside an argument's string (``</tool_call>``,
    ``✿RESULT✿``, ``Observation:`` in code or prose a call passes): it is that argument's
    text and never ends the call, nor splits it. The scanner asks it of a closer
    (:meth:`~.base.PromptDialect.block_may_close`); readers that split a call's text on markers
    use :func:`find_unquoted`, :func:`split_unquoted` and :func:`partition_unquoted`.

    The text is read from its first bracket: a ``"`` opens a string only inside ``{…}`` or
    ``[…]``, so quotes in the markup or prose around the JSON (``Action: "search"``) do
    not count; escapes inside a string (``\"``, ``\\``) are followed.

    Example:
        >>> in_json_string('{"code": "</tool_call>'), in_json_string(r'{"say": "\"hi\" ')
        (True, True)
        >>> in_json_string(r'{"dir": "C:\\"'), in_json_string(r'{"dir": "C:\\')
        (False, True)
        >>> in_json_string('Said "hi'), in_json_string('{"a": 1} and "')
        (False, False)
    """
    state = _StringState()
    state.read(text, 0, len(text))
    return state.quoted


def find_unquoted(text: str, marker: str, start: int = 0) -> int:
    """The index of the first ``marker`` at or after ``start`` that stands outside the
    JSON strings of ``text`` (read from its beginning, see :func:`in_json_string`), or -1.

    Example:
        >>> find_unquoted('{"a": "x<e>"}<e>', "<e>")
        13
    """
    state = _StringState()
    done = 0
    at = text.find(marker, start)
    while at >= 0:
        state.read(text, done, at)
        done = at
        if not state.quoted:
            return at
        at = text.find(marker, at + 1)
    return -1


def split_unquoted(text: str, marker: str) -> list[str]:
    """``text.split(marker)``, but a ``marker`` inside a JSON string does not split.

    Example:
        >>> split_unquoted('a|{"b": "|"}|c', "|")
        ['a', '{"b": "|"}', 'c']
    """
    parts: list[str] = []
    start = 0
    while (at := find_unquoted(text, marker, start)) >= 0:
        parts.append(text[start:at])
        start = at + len(marker)
    parts.append(text[start:])
    return parts


def partition_unquoted(text: str, marker: str) -> tuple[str, str, str]:
    """``text.partition(marker)``, but a ``marker`` inside a JSON string does not count."""
    at = find_unquoted(text, marker)
    if at < 0:
        return text, "", ""
    return text[:at], marker, text[at + len(marker) :]


class _StringState:
    """The bracket depth and string state of JSON text read so far (see :func:`in_json_string`)."""

    __slots__ = ("deepest", "depth", "escaped", "quoted")

    def __init__(self) -> None:
        self.depth = 0
        self.deepest = 0
        self.quoted = False
        self.escaped = False  # a backslash in a string ended the text read so far

    def read(self, text: str, start: int, end: int) -> None:
        """Read ``text[start:end]``, the stretch after what was read before."""
        if start >= end:
            return
        depth, quoted, deepest = self.depth, self.quoted, self.deepest
        if self.escaped:
            start += 1  # the character the backslash escapes
            self.escaped = False
        for match in _JSON_SIGNS.finditer(text, start, end):
            sign = match.group()
            if sign[0] == "\\":
                # an escape pair inside a string; a lone backslash ends the stretch
                self.escaped = quoted and len(sign) == 1
            elif quoted:
                quoted = sign != '"'
            elif sign == '"':
                quoted = depth > 0
            elif sign in "{[":
                depth += 1
                deepest = max(deepest, depth)
            else:
                depth = max(depth - 1, 0)
        self.depth, self.quoted, self.deepest = depth, quoted, deepest


# what changes the string state: an escape pair, a quote, a bracket
_JSON_SIGNS = re.compile(r'\\.|\\|["{}\[\]]', re.DOTALL)


def brackets_closed(text: str, *, quotes: str = '"', must_open: bool = False) -> bool:
    """Whether every bracket opened in ``text`` is closed, strings taken into account.

    Args:
        text: JSON-ish text.
        quotes: the characters that open and close a string (``"\"'"`` for Python-style
            dicts as well).
        must_open: also require at least one bracket.

    Example:
        >>> brackets_closed('{"a": "}"}'), brackets_closed('{"a": [1'), brackets_closed("x")
        (True, False, True)
    """
    depth, quote, escaped, opened = 0, "", False, False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in quotes:
            quote = ch
        elif ch in "{[":
            depth += 1
            opened = True
        elif ch in "}]":
            depth -= 1
    return (opened or not must_open) and depth <= 0 and not quote


def bracket_depth(text: str) -> int:
    """How deep the brackets of ``text`` nest, brackets in JSON strings not counted.

    Example:
        >>> bracket_depth('[{"a": "[[["}]'), bracket_depth("x")
        (2, 0)
    """
    state = _StringState()
    state.read(text, 0, len(text))
    return state.deepest


# -- a call's arguments read from what a model wrote, and the call events made of them
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
    import json_repair  # loaded with the first reply whose JSON needs repair

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


# -- a reply's calls, each once and each with its own id
def used_call_ids(messages: Sequence[BaseMessage]) -> set[str]:
    """The call ids a history already uses: its calls' (readable or not) and its results'."""
    used: set[str] = set()
    for m in messages:
        if isinstance(m, AIMessage):
            used.update(c["id"] for c in m.tool_calls if c.get("id"))
            used.update(c["id"] for c in m.invalid_tool_calls if c.get("id"))
        elif (call_id := getattr(m, "tool_call_id", None)) is not None:
            used.add(call_id)
    return used


class CallIds:
    """The one call-identity rule: a call keeps its id unless it has none, or the id is
    taken (by the thread, or by an earlier call of the same reply); then it gets a new one.

    Example:
        >>> ids = CallIds({"call_0"})
        >>> ids.assign("call_1")
        'call_1'
        >>> ids.assign("call_1") != "call_1", ids.assign("call_0") != "call_0"
        (True, True)
    """

    __slots__ = ("_used",)

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._used = set(taken)

    def assign(self, call_id: str | None) -> str:
        if not call_id or call_id in self._used:
            call_id = new_call_id()
        self._used.add(call_id)
        return call_id


def call_key(name: str | None, args: Any) -> tuple[str, str]:
    """A call's identity for matching one call read from two places: name and arguments."""
    try:
        return (name or "", json.dumps(args, sort_keys=True, ensure_ascii=False, default=str))
    except (ValueError, RecursionError):  # unreadable arguments match no other call
        return (name or "", f"<unreadable {id(args)}>")


def unmatched(calls: Iterable[ToolCall], already: Iterable[ToolCall]) -> list[ToolCall]:
    """The calls of ``calls`` that ``already`` does not hold (same name and arguments),
    each counted once: one call read from two places (the provider's field and the text)
    is one call."""
    pending: dict[tuple[str, str], int] = {}
    for c in already:
        k = call_key(c["name"], c["args"])
        pending[k] = pending.get(k, 0) + 1
    out: list[ToolCall] = []
    for c in calls:
        k = call_key(c["name"], c["args"])
        if pending.get(k):
            pending[k] -= 1
        else:
            out.append(c)
    return out


def merge_calls(
    field: list[ToolCall],
    field_invalid: list[InvalidToolCall],
    markup: list[ToolCall],
    markup_invalid: list[InvalidToolCall],
    known: set[str] | None,
    ids: CallIds,
) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """Field calls first, then markup calls the field does not already hold; ids by ``ids``."""
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for c in field:
        checked = field_call(c, ids)
        if checked.get("type") == "tool_call":
            calls.append(checked)  # type: ignore[arg-type]
        else:
            invalid.append(checked)  # type: ignore[arg-type]
    invalid.extend(field_unreadable(c, ids) for c in field_invalid)
    for c in unmatched(markup, field):
        if known is not None and c["name"] not in known:
            invalid.append(
                invalid_tool_call(
                    name=c["name"],
                    args=json.dumps(c["args"], ensure_ascii=False),
                    id=ids.assign(c.get("id")),
                    error=f"unknown tool {c['name']!r}; available tools: "
                    + (", ".join(sorted(known)) or "none"),
                )
            )
            continue
        calls.append(tool_call(name=c["name"], args=dict(c["args"]), id=ids.assign(c.get("id"))))
    invalid.extend(
        invalid_tool_call(
            name=c.get("name"), args=c.get("args"), id=ids.assign(c.get("id")), error=c.get("error")
        )
        for c in markup_invalid
    )
    return calls, invalid


def field_call(c: ToolCall, ids: CallIds) -> ToolCall | InvalidToolCall:
    """A call from the provider's ``tool_calls`` field, given the checks a call read from
    text gets: unreadable when its arguments are not plain JSON data; its id by ``ids``."""
    problem = argument_problem(c["args"])
    if problem is None:
        return tool_call(name=c["name"], args=dict(c["args"]), id=ids.assign(c.get("id")))
    return invalid_tool_call(
        name=c["name"],
        args=_shown(c["args"]),
        id=ids.assign(c.get("id")),
        error=f"bad arguments for {c['name']!r}: {problem}",
    )


def field_unreadable(c: InvalidToolCall, ids: CallIds) -> InvalidToolCall:
    """A call the provider's field holds as unreadable, kept so, with why; its id by ``ids``."""
    return invalid_tool_call(
        name=c.get("name"),
        args=c.get("args"),
        id=ids.assign(c.get("id")),
        error=c.get("error") or _why_unreadable(c.get("args")),
    )


def _shown(args: Any, limit: int = 2000) -> str:
    """Refused arguments as text for ``invalid_tool_calls`` (which holds a string)."""
    try:
        text = json.dumps(args, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        text = reprlib.repr(args)  # bounded in depth and length, unlike repr()
    return text if len(text) <= limit else text[:limit] + "…"


def _why_unreadable(args: Any) -> str:
    """The error of a provider's call that came unreadable and without one (LangChain
    gives none when a streamed call's arguments cannot be parsed)."""
    problem = _args_problem(args)
    return "the provider's tool call could not be read" + (f": {problem}" if problem else "")


def _args_problem(args: Any) -> str | None:
    try:
        coerce_args(args)
    except ValueError as error:
        return str(error)
    return None


def unparsed_calls(raw: Any) -> list[dict[str, Any]]:
    """The provider's raw OpenAI calls (``additional_kwargs["tool_calls"]``) whose
    arguments cannot be read, when LangChain parsed none (it drops the calls of a list
    whose parsing raised, as arguments nested too deep make it): unreadable calls."""
    out: list[dict[str, Any]] = []
    for item in raw if isinstance(raw, list) else []:
        function = item.get("function") if isinstance(item, dict) else None
        if isinstance(function, dict):
            args = function.get("arguments")
            if (problem := _args_problem(args)) is not None:
                out.append(
                    {
                        "name": function.get("name"),
                        "args": args if isinstance(args, str) else _shown(args),
                        "id": item.get("id"),
                        "error": f"the provider's tool call could not be read: {problem}",
                    }
                )
    return out
