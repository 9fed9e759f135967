"""Calls written as XML-like tags whose parameter values are untyped text.

::

    <tool_call>                                     Qwen3-Coder, Qwen3.5, Step-3.5
    <function=get_weather>                          (Seed-OSS: <seed:tool_call>…</seed:tool_call>)
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>

    <function=get_weather>{"city": "Paris"}</function>          Llama 3.1

    <tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>
                                                    GLM-4.5 / 4.6 (a newline after the name), 4.7

    <minimax:tool_call>                             MiniMax-M2 / M2.1
    <invoke name="get_weather">
    <parameter name="city">Paris</parameter>
    </invoke>
    </minimax:tool_call>

    ]<]minimax[>[<tool_call>                        MiniMax-M3: every tag behind a namespace
    ]<]minimax[>[<invoke name="get_weather">        token; nested values as nested tags
    ]<]minimax[>[<city>Paris]<]minimax[>[</city>
    ]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

    <｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f">
    <steptml:parameter name="p">v</steptml:parameter></steptml:invoke><｜tool_call_end｜>
    <｜tool_calls_end｜>                             Step-3

Parameter values carry no types in these formats: a value written as JSON (``5``,
``true``, ``{"a": 1}``) or as a Python container (``{'a': True}``) is taken as that
value, anything else as a string.

The repairs the inference servers make are made here too, and no others: a
``<parameter=…>`` whose ``</parameter>`` is missing ends at the next parameter (on a line
of its own or inside the line, unless the value closes each tag it holds) or at
``</function>``; GLM's last ``<arg_value>`` whose closer is missing runs to the call's
closer; a ``<function=NAME`` or ``<parameter=NAME`` whose ``>`` is missing has
the name's first word as its name; a call whose ``</function>`` is missing ends where
the next call or the block's closer starts; a closer inside a value (source code that
holds one) is the value's own text unless a tag follows it. A call the reply ended
inside is never run; the whole calls before it are.

Engines: vLLM ``qwen3coder_tool_parser.py`` (read at 0054011d: exactly one newline
trimmed at each end of a value; a value ends at its ``</parameter>``, the next
``<parameter=`` or ``</function>``; ``_convert_param_value``'s typing, done here by
:mod:`~fncall_graph.adapters.formats.arg_types`) and llama.cpp
``common/parsers/qwen3-coder.cpp`` (read at 001edca1: a Qwen3-Coder call may come
without its ``<tool_call>``; non-string types tried before the string); vLLM
``step3_tool_parser.py`` (read at 0a426f59) and SGLang ``step3_detector.py`` (039e4472)
strip a Step-3 value, which is kept here as written; vLLM ``minimax_m2_tool_parser.py``,
``seed_oss_tool_parser.py``, llama.cpp ``minimax-m3.cpp`` and GLM as in
:mod:`.tool_call_tag` (index versions d848ed67, 0b2d55ad, e0fc2257; not re-read).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from ..calls import ContentDelta, ParseEvent, find_unquoted, in_json_string, invalid
from ..markup import TOOL_CALL, Block
from .base import (
    Reader,
    json_value,
    named_call,
    read_json_calls,
    text_args,
)

__all__ = []

FUNCTION, FUNCTION_END = "<function=", "</function>"
PARAM, PARAM_END = "<parameter=", "</parameter>"
SEED_CALL = ("<seed:tool_call>", "</seed:tool_call>")
MINIMAX_CALL = ("<minimax:tool_call>", "</minimax:tool_call>")
# markup that wraps calls but carries nothing: what is left of it between calls
_WRAPPERS = re.compile(
    "|".join(
        map(re.escape, (TOOL_CALL.open, *TOOL_CALL.close, *SEED_CALL, FUNCTION_END, PARAM_END))
    )
)
# what may follow a structural </function> (white space aside), and what starts the
# next call where a </function> is missing
_NEXT_CALL = (FUNCTION, TOOL_CALL.open, *TOOL_CALL.close, *SEED_CALL)
# what may follow a structural </parameter>
_AFTER_PARAM = (PARAM, FUNCTION_END, *_NEXT_CALL)
_BAD_NAME = re.compile(r"[{}<>\"'\s]")


def read_function_calls(text: str, *, closed: bool) -> Iterator[ParseEvent]:
    """Read the ``<function=NAME>…</function>`` calls in ``text``, and the text between.

    ``closed=False``: the reply ended inside ``text``, so a call whose ``</function>``
    has not come is cut short and is reported, not run.
    """
    pos = 0
    while True:
        start = text.find(FUNCTION, pos)
        prose = _WRAPPERS.sub("", text[pos : start if start >= 0 else len(text)]).strip()
        if prose:
            yield ContentDelta(prose)
        if start < 0:
            return
        event, pos = _read_function(text, start, closed=closed)
        yield event


def _read_function(text: str, start: int, *, closed: bool) -> tuple[ParseEvent, int]:
    """The call at ``text[start:]`` (which starts with ``<function=``), and where it ends."""
    head = start + len(FUNCTION)
    name, body = _tag_name(text, head)
    if not name and body >= len(text) and not closed:
        return invalid(text[start:], "the reply ended inside a <function= tag; not run"), body
    if not name or _BAD_NAME.search(name):
        end = text.find(FUNCTION_END, head)
        end = len(text) if end < 0 else end + len(FUNCTION_END)
        return invalid(text[start:end], "unreadable <function=NAME> tag"), end
    if text[body:].lstrip().startswith(("{", "[")):
        return _json_function(text, start, body, name, closed=closed)
    texts: dict[str, str] = {}
    pos = body
    while True:
        pos = _skip_space(text, pos)
        if text.startswith(FUNCTION_END, pos):
            raw = text[start : pos + len(FUNCTION_END)]
            return _text_call(name, texts, raw), pos + len(FUNCTION_END)
        if text.startswith(PARAM, pos):
            # the tag line's indentation is layout on every line of the value
            indent = text[text.rfind("\n", 0, pos) + 1 : pos]
            key, value_at = _tag_name(text, pos + len(PARAM))
            if not key:
                return _cut(text, start, name), len(text)
            own_line = text.startswith("\n", value_at)
            value_at += own_line
            end, pos = _value_end(text, value_at, closed=closed)
            if end < 0:
                return _cut(text, start, name, inside=key), len(text)
            layout = indent if not indent.strip() else ""
            texts[key] = _strip_layout(text[value_at:end], layout, own_line=own_line)
            continue
        if (pos >= len(text) and closed) or text.startswith(_NEXT_CALL, pos):
            # </function> missing where the block's closer or the next call came
            return _text_call(name, texts, text[start:pos]), pos
        end = text.find(FUNCTION_END, pos)
        if pos >= len(text) or end < 0 or not _structural_function_end(text, end, closed=closed):
            return _cut(text, start, name), len(text)
        pos = end  # stray words between parameters: kept out of the call


def _json_function(
    text: str, start: int, body: int, name: str, *, closed: bool
) -> tuple[ParseEvent, int]:
    """``<function=NAME>{json}</function>`` (Llama 3.1)."""
    end = find_unquoted(text[body:], FUNCTION_END)  # not a closer in a string argument
    end = end + body if end >= 0 else end
    stop = len(text) if end < 0 else end
    events = list(
        read_json_calls(
            '{"name": '
            + json.dumps(name, ensure_ascii=False)
            + ', "arguments": '
            + text[body:stop]
            + "}",
            closed=closed or end >= 0,
            where=f"{FUNCTION}{name}>",
            prose_after=False,
        )
    )
    return events[0], stop + (len(FUNCTION_END) if end >= 0 else 0)


def _tag_name(text: str, at: int) -> tuple[str, int]:
    """The name of a ``<function=``/``<parameter=`` tag whose name starts at ``at``, and
    where its body starts. A missing ``>`` ends the name at its first word (at the line's
    end, or at the next tag); ``<parameter=parameter=x>`` is ``x``."""
    i = at
    while i < len(text) and text[i] not in ">\n<":
        i += 1
    if i >= len(text):
        return "", i  # the reply ended inside the tag
    name = text[at:i].strip()
    for prefix in ("parameter=", "function="):
        name = name.removeprefix(prefix)
    if text[i] == ">":
        return name, i + 1
    # no '>': the name is the first word; a value may follow it on the same line
    word = name.split(maxsplit=1)[0] if name.strip() else ""
    if word != name:
        i = text.index(word, at) + len(word) + 1
    return word.rstrip(":;,."), i


def _value_end(text: str, at: int, *, closed: bool) -> tuple[int, int]:
    """Where the parameter value starting at ``at`` ends, and where what follows starts;
    ``(-1, -1)`` when the text ends inside it."""
    search = at
    close = -1
    while True:
        found = text.find(PARAM_END, search)
        if found < 0:
            break
        after = _skip_space(text, found + len(PARAM_END))
        if after >= len(text) or text.startswith(_AFTER_PARAM, after):
            close = found
            break
        search = found + len(PARAM_END)  # a </parameter> inside the value's own text
    # a missing </parameter>: the next parameter on a line of its own, or </function>
    implicit = [i + 1 for i in (text.find("\n" + PARAM, at),) if i >= 0]
    # or a next parameter inside the line (``Dallas<parameter=state>TX``), as vLLM's
    # Qwen3-Coder reader ends a value at any ``<parameter=``; unless the value holds its
    # own tags, each closed before the value's closer (source code quoting the format)
    inline = _unclosed_param(text, at, close)
    if inline >= 0:
        implicit.append(inline)
    func_end = text.find(FUNCTION_END, at)
    while func_end >= 0 and not _structural_function_end(text, func_end, closed=closed):
        func_end = text.find(FUNCTION_END, func_end + 1)
    if func_end >= 0:
        implicit.append(func_end)
    first_implicit = min(implicit, default=-1)
    if close >= 0 and (first_implicit < 0 or close < first_implicit):
        return close, close + len(PARAM_END)
    if first_implicit >= 0:
        return first_implicit, first_implicit
    if closed:
        return len(text), len(text)
    return -1, -1


def _unclosed_param(text: str, at: int, close: int) -> int:
    """The first ``<parameter=NAME>`` after ``at`` (before ``close``, the value's closer,
    when found) that no ``</parameter>`` of its own follows inside the value, or -1."""
    stop = close if close >= 0 else len(text)
    pos, opened = at, []
    while True:
        nxt = text.find(PARAM, pos, stop)
        end = text.find(PARAM_END, pos, stop)
        if nxt < 0 and end < 0:
            return opened[0] if opened else -1
        if nxt >= 0 and (end < 0 or nxt < end):
            key, _ = _tag_name(text, nxt + len(PARAM))
            if key and not _BAD_NAME.search(key):
                opened.append(nxt)
            pos = nxt + len(PARAM)
        else:
            if opened:
                opened.pop()
            pos = end + len(PARAM_END)


def _structural_function_end(text: str, at: int, *, closed: bool) -> bool:
    """Whether the ``</function>`` at ``at`` ends the call, not a value's text: a tag
    follows it, or the block ends there; where the reply itself ended there, only one
    on a line of its own counts (one inside a line of code may be cut short)."""
    after = _skip_space(text, at + len(FUNCTION_END))
    if after < len(text):
        return text.startswith(_NEXT_CALL, after)
    return closed or text[:at].rstrip(" \t").endswith("\n")


def _cut(text: str, start: int, name: str, *, inside: str | None = None) -> ParseEvent:
    where = f"the parameter {inside!r} of " if inside else ""
    return invalid(
        text[start:],
        f"the reply ended inside {where}{FUNCTION}{name}> before the call was complete; "
        "the call was not run",
        name=name,
    )


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _strip_layout(value: str, indent: str, *, own_line: bool) -> str:
    """A value without its layout, as Qwen3-Coder's engines read it: one newline after
    the tag (taken by the caller; ``own_line`` says it was there) and one before the
    closer (vLLM's ``qwen3_coder`` trims exactly these), and, for a call written indented
    (under a list item, say), the closer's indentation and the ``<parameter=…>`` line's
    ``indent`` on each line of the value that starts a line. Other white space is the
    value's: a code value keeps its own indentation.
    """
    lines = value.split("\n")
    if len(lines) > 1 and indent and not lines[-1].strip(" \t"):
        lines[-1] = ""  # the indentation of the closer's own line
    if indent:
        lines = [
            line if i == 0 and not own_line else line.removeprefix(indent)
            for i, line in enumerate(lines)
        ]
    return "\n".join(lines).removesuffix("\n")


# --------------------------------------------------------------------------- GLM

_ARG = re.compile(r"<arg_key>(.*?)</arg_key>(?:\\n|\s)*<arg_value>(.*?)</arg_value>", re.DOTALL)
_GLM_NAME = re.compile(r"\s*([^\s<>{}\"']+)\s*")


def read_arg_pairs(text: str, *, closed: bool) -> Iterator[ParseEvent]:
    """GLM-4.5/4.6/4.7: ``NAME`` then ``<arg_key>…</arg_key><arg_value>…</arg_value>``
    pairs, with or without newlines between them (Hunyuan HY v3 puts ``<tool_sep>`` after
    the name); ``NAME`` alone is a call without arguments."""
    name_match = _GLM_NAME.match(text)
    name = name_match.group(1) if name_match else ""
    rest = text[name_match.end() :] if name_match else text
    rest = rest.removeprefix("<tool_sep>")
    if not name or (rest.strip() and not rest.lstrip().startswith("<arg_key>")):
        yield invalid(text, "a GLM tool call must start with the tool's name")
        return
    if rest.rfind("<arg_value>") > rest.rfind("</arg_value>"):
        # the last value's </arg_value> missing where the call's closer came: the value
        # runs to it. A closer inside a value is the value's text (the block went on), so
        # one that ends the reply is the call's own
        tail = rest.rstrip()
        if not closed and tail.endswith(TOOL_CALL.close[0]):
            rest, closed = tail.removesuffix(TOOL_CALL.close[0]), True
        if closed:
            rest = rest + "</arg_value>"
    pairs = _ARG.findall(rest)
    if not closed:
        yield invalid(
            text, f"the reply ended inside the call of {name!r}; the call was not run", name=name
        )
        return
    if rest.count("<arg_key>") > len(pairs):
        yield invalid(text, f"an <arg_key> of {name!r} has no <arg_value>", name=name)
        return
    # a value keeps its spaces, as GLM's engines keep a string's (a JSON value is read
    # stripped: see json_value)
    yield _text_call(name, {k.strip(): v for k, v in pairs}, text)


def _text_call(name: str, texts: dict[str, str], raw: str) -> ParseEvent:
    args, texts = text_args(texts.items())
    return named_call(name, args, raw, texts=texts)


# --------------------------------------------------------------------------- MiniMax

_NAME_ATTR = r"""name\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))\s*"""
_INVOKE = re.compile(r"<invoke\s+" + _NAME_ATTR + r">(.*?)</invoke>", re.DOTALL)
_INVOKE_PARAM = re.compile(r"<parameter\s+" + _NAME_ATTR + r">(.*?)</parameter>", re.DOTALL)


def read_invokes(
    text: str, *, closed: bool, where: str = MINIMAX_CALL[0], prefix: str = ""
) -> Iterator[ParseEvent]:
    """MiniMax-M2 ``<invoke name="f"><parameter name="p">v</parameter></invoke>`` …, and
    Step-3's ``steptml:``-prefixed tags (``prefix="steptml:"``). Whole invokes are read
    even when the reply ended before the wrapper's closer; one cut short is not run."""
    invoke, param = (_INVOKE, _INVOKE_PARAM) if not prefix else _prefixed(prefix)
    end = 0
    for match in invoke.finditer(text):
        name = next(g for g in match.groups()[:3] if g is not None)
        # MiniMax's readers strip a value; Step-3's keep it as written (vLLM's step3
        # parser: an edit tool's "    if x:" keeps its indentation)
        params = {
            next(g for g in p.groups()[:3] if g is not None).strip(): (
                p.group(4) if prefix else p.group(4).strip()
            )
            for p in param.finditer(match.group(4))
        }
        yield _text_call(name, params, match.group(0))
        end = match.end()
    rest = text[end:]
    if f"<{prefix}invoke" in rest:
        yield invalid(rest.strip(), f"the reply ended inside an <invoke> of {where}; not run")
    elif end == 0 and text.strip():
        yield invalid(text, f"no <{prefix}invoke name=…> inside {where}")


@functools.cache
def _prefixed(prefix: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The invoke and parameter patterns with ``prefix`` on every tag name."""

    def add(pattern: re.Pattern[str]) -> re.Pattern[str]:
        source = pattern.pattern
        for tag in ("invoke", "parameter"):
            source = source.replace(f"<{tag}", f"<{prefix}{tag}")
            source = source.replace(f"</{tag}", f"</{prefix}{tag}")
        return re.compile(source, re.DOTALL)

    return add(_INVOKE), add(_INVOKE_PARAM)


#: MiniMax-M3's namespace token: its tags stand behind it
NS = "]<]minimax[>["
M3_OPEN, M3_CLOSE = NS + TOOL_CALL.open, NS + TOOL_CALL.close[0]
_M3_INVOKE = re.compile(re.escape(NS) + r'\s*<invoke name="([^"]*)">')
_M3_INVOKE_END = NS + "</invoke>"


def read_m3_invokes(text: str) -> Iterator[ParseEvent]:
    """MiniMax-M3: each tag behind the namespace token; a tag holding text is a value,
    one holding tags an object (``<item>`` children: a list; a repeated tag: a list).
    Whole invokes are read wherever the reply ended; one cut short is not run."""
    pos = 0
    while True:
        match = _M3_INVOKE.search(text, pos)
        if match is None:
            if pos == 0 and text.strip():
                yield invalid(text, f"no {NS}<invoke name=…> inside {M3_OPEN}")
            return
        end = text.find(_M3_INVOKE_END, match.end())
        if end < 0:
            yield invalid(
                text[match.start() :],
                f"the reply ended inside the call of {match.group(1)!r}; not run",
                name=match.group(1),
            )
            return
        raw = text[match.start() : end + len(_M3_INVOKE_END)]
        try:
            args = _m3_tree(text[match.end() : end])
        except ValueError as exc:
            yield invalid(raw, f"unreadable MiniMax-M3 call: {exc}", name=match.group(1))
        else:
            yield named_call(match.group(1), args, raw)
        pos = end + len(_M3_INVOKE_END)


def _m3_tree(body: str) -> dict[str, Any]:
    stack: list[list[Any]] = [["", {}]]  # [tag, value]; None: a container not yet known
    for chunk in body.split(NS):
        chunk = chunk.strip()
        if not chunk:
            continue
        if chunk.startswith("</"):
            tag = chunk[2:].split(">", 1)[0].strip()
            if len(stack) == 1 or stack[-1][0] != tag:
                raise ValueError(f"</{tag}> closes no open tag")
            _, value = stack.pop()
            _add_child(stack[-1], tag, {} if value is None else value)
            continue
        if not chunk.startswith("<") or ">" not in chunk:
            raise ValueError(f"text outside a tag: {chunk[:40]!r}")
        tag, value = chunk[1:].split(">", 1)
        stack.append([tag.strip(), json_value(value) if value else None])
    if len(stack) != 1:
        raise ValueError(f"<{stack[-1][0]}> is never closed")
    return stack[0][1]


def _add_child(parent: list[Any], tag: str, value: Any) -> None:
    """Put a closed tag's value into its parent: ``<item>`` children make a list, other
    tags an object, a tag repeated a list under that key."""
    if parent[1] is None:
        parent[1] = [] if tag == "item" else {}
    holder = parent[1]
    if isinstance(holder, list):
        holder.append(value)
    elif not isinstance(holder, dict):
        raise ValueError(f"<{parent[0]}> holds both text and tags")
    elif tag in holder:
        old = holder[tag]
        holder[tag] = [*old, value] if isinstance(old, list) else [old, value]
    else:
        holder[tag] = value


# --------------------------------------------------------------------------- readers


class FunctionTagReader(Reader):
    """``<function=NAME>…</function>``: Qwen3-Coder, Qwen3.5, Step-3.5, Llama 3.1."""

    name: ClassVar[str] = "function-tag"
    FUNCTION: ClassVar[Block] = Block(FUNCTION, (FUNCTION_END,), "call")
    blocks: ClassVar[tuple[Block, ...]] = (FUNCTION,)
    # Qwen3-Coder's template wraps each call in <tool_call>: the wrapper is the format's
    drop_tokens: ClassVar[tuple[str, ...]] = (FUNCTION_END, TOOL_CALL.open, *TOOL_CALL.close)
    special: ClassVar[bool] = False
    examples: ClassVar[tuple[str, ...]] = (
        "<function=get_weather>\n<parameter=city>\n巴黎\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>",
        '<function=get_weather>{"city": "Paris"}</function>'
        '<function=get_time>{"zone": "CET"}</function>',
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_function_calls(
            FUNCTION + text + (FUNCTION_END if closed else ""), closed=closed
        )

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        # a </function> inside a parameter's value (source code) is the value's text
        args = text.partition(">")[2].lstrip()
        if args.startswith("{"):
            return not in_json_string(args)
        return not_inside_value(FUNCTION + text)


SEED_THINK = ("<seed:think>", "</seed:think>")
SEED_EOS = "<seed:eos>"


class SeedOssReader(Reader):
    """Seed-OSS: ``<function=…>`` calls inside ``<seed:tool_call>``; ``<seed:think>`` is
    reasoning."""

    name: ClassVar[str] = "seed-oss"
    blocks: ClassVar[tuple[Block, ...]] = (
        Block(SEED_CALL[0], (SEED_CALL[1],), "call"),
        Block(SEED_THINK[0], (SEED_THINK[1],), "reasoning"),
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (SEED_CALL[1], SEED_THINK[1], SEED_EOS)
    channel_tokens: ClassVar[tuple[str, ...]] = (SEED_EOS, SEED_THINK[1])
    examples: ClassVar[tuple[str, ...]] = (
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
        "</function>\n</seed:tool_call>",
        "<seed:think>The user wants two things.</seed:think>"
        "<seed:tool_call><function=get_weather><parameter=city>Paris</parameter></function>"
        "</seed:tool_call><seed:tool_call><function=get_time><parameter=zone>CET</parameter>"
        "</function></seed:tool_call>",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_function_calls(text, closed=closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        return not_inside_value(text)


def not_inside_value(text: str) -> bool:
    """Whether a closer after ``text`` (calls so far) stands outside any parameter value:
    every opened ``<parameter=`` has ended (by its closer, or by a later parameter), or
    the closer starts a line, as the templates write it (a value missing its
    ``</parameter>``); a closer inside a line of a value is the value's text."""
    if text.rstrip(" \t").endswith("\n"):
        return True
    last = text.rfind(PARAM)
    if last < 0:
        return True
    key, value_at = _tag_name(text, last + len(PARAM))
    if not key:
        return True
    end, _ = _value_end(text, value_at + text.startswith("\n", value_at), closed=False)
    return end >= 0


class MinimaxReader(Reader):
    """MiniMax-M2 ``<minimax:tool_call>`` and MiniMax-M3 ``]<]minimax[>[<tool_call>``."""

    name: ClassVar[str] = "minimax"
    M3: ClassVar[Block] = Block(M3_OPEN, (M3_CLOSE,), "call")
    blocks: ClassVar[tuple[Block, ...]] = (
        Block(MINIMAX_CALL[0], (MINIMAX_CALL[1],), "call"),
        M3,
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (MINIMAX_CALL[1], M3_CLOSE)
    examples: ClassVar[tuple[str, ...]] = (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
        '</parameter>\n</invoke>\n<invoke name="get_time">\n<parameter name="zone">CET'
        "</parameter>\n</invoke>\n</minimax:tool_call>",
        f'{M3_OPEN}\n{NS}<invoke name="get_weather">\n{NS}<city>Paris{NS}</city>\n'
        f"{NS}</invoke>\n{M3_CLOSE}",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        if block.open == M3_OPEN:
            return read_m3_invokes(text)
        return read_invokes(text, closed=closed)

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        # a closer inside a <parameter> value is the value's text
        return block.open == M3_OPEN or text.rfind("<parameter") <= text.rfind("</parameter>")


STEP_CALLS = ("<｜tool_calls_begin｜>", "<｜tool_calls_end｜>")
STEP_CALL = ("<｜tool_call_begin｜>", "<｜tool_call_end｜>")
STEP_SEP = "<｜tool_sep｜>"


class Step3Reader(Reader):
    """Step-3: ``steptml`` invokes between ``<｜tool_call_begin｜>`` tokens."""

    name: ClassVar[str] = "step3"
    blocks: ClassVar[tuple[Block, ...]] = (Block(STEP_CALLS[0], (STEP_CALLS[1],), "call"),)
    drop_tokens: ClassVar[tuple[str, ...]] = (STEP_CALLS[1],)
    examples: ClassVar[tuple[str, ...]] = (
        f"{STEP_CALLS[0]}{STEP_CALL[0]}function{STEP_SEP}"
        '<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris'
        f"</steptml:parameter></steptml:invoke>{STEP_CALL[1]}{STEP_CALL[0]}function{STEP_SEP}"
        '<steptml:invoke name="get_time"><steptml:parameter name="zone">CET'
        f"</steptml:parameter></steptml:invoke>{STEP_CALL[1]}{STEP_CALLS[1]}",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        for part in text.split(STEP_CALL[0])[1:] or [text]:
            body, ended, _ = part.partition(STEP_CALL[1])
            kind, sep, invoke = body.partition(STEP_SEP)
            if not sep:
                kind, invoke = "function", body
            if kind.strip() != "function":
                yield invalid(part, f"Step-3 call of unknown type {kind.strip()!r}")
                continue
            yield from read_invokes(
                invoke,
                closed=closed or bool(ended),
                where=STEP_CALL[0],
                prefix="steptml:",
            )

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        return True  # values are text between tags, not JSON strings: a closer closes
