"""Qwen-Agent's ✿ call format: its markers, and the reading of a ``✿FUNCTION✿`` block.

::

    ✿FUNCTION✿: get_weather
    ✿ARGS✿: {"city": "上海"}
    ✿RESULT✿: 多云，温度 25°C
    ✿RETURN✿: 上海今天多云，25°C。

The Qwen dialect (:mod:`~fncall_graph.adapters.formats.qwen`) writes the prompt and reads
replies with :func:`read_calls`; auto-detection and stream reading take the markers from
here. The auto reader does not read it: a reply in it is read by the Qwen dialect.

Engine: Qwen-Agent's ``fncall_prompt`` (its FN_CALL_TEMPLATE); read by the Qwen dialect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from langchain_core.messages.tool import tool_call

from ..calls import (
    CallEvent,
    ContentDelta,
    ParseEvent,
    coerce_args,
    find_unquoted,
    in_json_string,
    invalid,
    nests_too_deep,
    new_call_id,
)

__all__ = []

FN_NAME = "✿FUNCTION✿"
FN_ARGS = "✿ARGS✿"
FN_RESULT = "✿RESULT✿"
FN_EXIT = "✿RETURN✿"
#: The markers of Qwen-Agent's function-calling prompt.
QWEN_MARKERS = (FN_NAME, FN_ARGS, FN_RESULT, FN_EXIT)
#: What may follow a marker: an ASCII or a full-width colon.
COLONS = ":："


def _after_colon(text: str) -> str:
    """``text`` without leading white space and one leading ``:``/``：``."""
    text = text.lstrip()
    return text[1:].lstrip() if text[:1] and text[0] in COLONS else text


def _next_marker(text: str) -> tuple[int, str] | None:
    """The first marker in ``text`` that is not inside a JSON string of the arguments."""
    hits = [(i, m) for m in QWEN_MARKERS if (i := find_unquoted(text, m)) >= 0]
    return min(hits) if hits else None


def _split_args(text: str) -> tuple[str, str]:
    """The arguments' text and what the model wrote after it.

    A strict JSON value (markers inside its strings included) or a fenced block ends
    where it ends; anything else runs to the next marker and is left to lenient repair.
    """
    text = text.strip()
    if text.startswith("```"):
        end = text.find("```", 3)
        if end >= 0:
            inner = text[3:end]
            inner = inner.split("\n", 1)[1] if "\n" in inner else inner
            return inner, text[end + 3 :]
    if text.startswith(("{", "[", '"')) and not nests_too_deep(text):
        try:  # (a raw line break in a string is the model's; the string goes on)
            _, end = _LENIENT.raw_decode(text)
            return text[:end], text[end:]
        except ValueError:
            pass
    hit = _next_marker(text)
    return (text, "") if hit is None else (text[: hit[0]], text[hit[0] :])


_LENIENT = json.JSONDecoder(strict=False)


def _payload(text: str) -> str:
    # Qwen-Agent's fix for `{"a": 1} <!-- comment -->`: up to the last "}".
    text = text.strip()
    k = text.rfind("}")
    return text[: k + 1] if text.startswith("{") and k > 0 else text


def _is_name(name: str) -> bool:
    return bool(name) and not any(ch.isspace() or ch in "{}[]\"'" for ch in name)


def _read_args(name: str, args_text: str, raw: str) -> ParseEvent:
    payload = _payload(args_text)
    if not payload:
        return CallEvent(tool_call(name=name, args={}, id=new_call_id()))
    try:
        return CallEvent(tool_call(name=name, args=coerce_args(payload), id=new_call_id()))
    except ValueError as exc:
        return invalid(raw, f"bad {FN_ARGS} for {name!r}: {exc}", name=name)


def read_calls(text: str, *, closed: bool = True) -> Iterator[ParseEvent]:
    """Read the calls in ``text``, the text after a ``✿FUNCTION✿`` marker.

    Usually one call; more when the model put several ``✿ARGS✿`` under one name or
    wrote the next marker on the same line as the arguments. With ``closed=False`` (the
    reply ended in the call), arguments that end inside a string (a server cut the reply
    at a stop word written in an argument) are an invalid call, never completed and run;
    a closing bracket left out is repaired, as Qwen-Agent does.
    """
    raw = FN_NAME + text
    hit = _next_marker(text)
    head = text if hit is None else text[: hit[0]]
    name, _, rest = _after_colon(head).strip().partition("\n")
    name = name.strip()
    if not _is_name(name):
        reason = "missing tool name" if not name else f"unreadable tool name {name!r}"
        yield invalid(raw, f"{reason} after {FN_NAME}")
    elif hit is None or hit[1] != FN_ARGS:
        if rest.strip():
            yield invalid(raw, f"no {FN_ARGS} line after {FN_NAME}: {name}", name=name)
        else:
            yield CallEvent(tool_call(name=name, args={}, id=new_call_id()))
    if hit is None:
        return
    tail = text[hit[0] :]
    while tail.startswith(FN_ARGS) and _is_name(name):
        args_text, tail = _split_args(_after_colon(tail[len(FN_ARGS) :]))
        if not closed and not tail and in_json_string(args_text):
            yield invalid(raw, f"the reply ended inside the {FN_ARGS} of {name!r}", name=name)
            return
        yield _read_args(name, args_text, raw)
        # what follows the arguments: more of them, another call, or the model running on
        nxt = _next_marker(tail)
        tail = "" if nxt is None else tail[nxt[0] :]
    if tail.startswith(FN_NAME):
        yield from read_calls(tail[len(FN_NAME) :], closed=closed)
    elif tail.startswith(FN_EXIT):
        yield ContentDelta(_after_colon(tail[len(FN_EXIT) :]))
    # a ✿RESULT✿ here is invented: it and what follows are dropped
