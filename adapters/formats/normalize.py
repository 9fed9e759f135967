"""Any provider's ``AIMessage`` → the canonical one the graph keeps.

Providers hand back tool calls in different places: OpenAI-compatible servers with a
tool parser fill ``tool_calls``; the same model behind a server without one (Qwen3,
QwQ) writes ``<tool_call>`` markup into ``content``; some do both. Reasoning arrives as
``<think>`` blocks in the text, as ``additional_kwargs["reasoning_content"]`` (Ollama,
DeepSeek, vLLM) or as ``"reasoning"``/``"thinking"`` content blocks (LangChain v1,
Anthropic). :func:`normalize` reads all of them in one pass, so the rest of the graph
sees one shape: answer text in ``content``, calls in ``tool_calls`` (unique ids),
unreadable calls in ``invalid_tool_calls``, reasoning in
``additional_kwargs["reasoning_content"]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

from .base import THINK, Dialect, new_call_id
from .readers import AUTO, NO_CALL_MARKUP
from .readers.whole_reply import OPENERS, whole_reply_format

__all__ = ["markup_dialect", "normalize"]

_REASONING_BLOCKS = frozenset({"reasoning", "thinking"})
# Blocks that restate what the ``tool_calls`` field already holds.
_CALL_BLOCKS = frozenset(
    {"tool_use", "tool_call", "tool_call_chunk", "function_call", "invalid_tool_call"}
)


def normalize(
    message: BaseMessage,
    dialect: Dialect | str | None = "hermes",
    *,
    tool_names: Iterable[str] | None = None,
) -> AIMessage:
    """Return the canonical form of a model's reply.

    Calls are taken from the ``tool_calls`` field (and ``invalid_tool_calls``) and
    from markup in ``content``:

    * with a prompt dialect (``"hermes"``, ``"qwen"``, ``"react"`` or an instance), the
      text is read with that dialect's ``parse``;
    * with ``None`` or ``"native"``, the text is read only if prompt-dialect markup
      appears in it (``<tool_call>`` → Hermes, ``✿FUNCTION✿`` → Qwen), or a ``<think>``
      block (also one whose ``<think>`` was in the prompt, so only ``</think>``
      shows); otherwise ``content`` is left as it is.

    A call present both in the field and in the markup (same name and arguments) is
    kept once, with the field's id: a call is never read twice. Calls
    without an id, or repeating an id already used in the message, get a fresh one.

    Reasoning from ``additional_kwargs["reasoning_content"]``, from ``"reasoning"`` /
    ``"thinking"`` content blocks and from ``<think>`` blocks is joined (in that order)
    into ``additional_kwargs["reasoning_content"]``, never into the answer or the
    calls. ``id``, ``name``, ``response_metadata`` and ``usage_metadata`` are kept.

    Content given as a list of blocks becomes a string when only text is left; other
    blocks (images, say) are kept after one text block.

    Args:
        message: the reply (``AIMessage`` or ``AIMessageChunk``).
        dialect: how calls are written in ``content``; see above.
        tool_names: if given, calls read from *markup* must name one of these tools;
            others go to ``invalid_tool_calls`` with the reason, so an answer that only
            quotes the call syntax runs nothing. Calls from the ``tool_calls`` field are
            kept as the provider gave them.

    Returns:
        A new ``AIMessage``; ``message`` is not modified.

    Example:
        A Qwen3 server started without a tool parser puts the call in ``content``:

        >>> from langchain_core.messages import AIMessage
        >>> raw = AIMessage(
        ...     content='<think>Count the tables.</think>\\n<tool_call>\\n'
        ...     '{"name": "sqlite-list_tables", "arguments": {}}\\n</tool_call>'
        ... )
        >>> msg = normalize(raw, None)
        >>> [(c["name"], c["args"]) for c in msg.tool_calls]
        [('sqlite-list_tables', {})]
        >>> msg.content, msg.additional_kwargs["reasoning_content"]
        ('', 'Count the tables.')
    """
    kwargs = dict(message.additional_kwargs)
    text, block_reasoning, others, was_list = _split_content(message.content)

    d = _resolve(dialect)
    parsed = d.parse(text) if d is not None and not d.native else _auto_parse(text)

    # ---- content
    content: str | list[str | dict[str, Any]]
    body = str(parsed.content) if parsed is not None else text
    if parsed is None and not was_list:
        content = message.content
    elif others:
        content = ([{"type": "text", "text": body}] if body else []) + others
    else:
        content = body

    # ---- reasoning
    reasoning_parts: list[str] = []
    for part in (
        kwargs.get("reasoning_content"),
        *block_reasoning,
        parsed.additional_kwargs.get("reasoning_content") if parsed is not None else None,
    ):
        if isinstance(part, str) and part.strip() and part not in reasoning_parts:
            reasoning_parts.append(part)
    kwargs.pop("reasoning_content", None)
    if reasoning_parts:
        kwargs["reasoning_content"] = "\n".join(reasoning_parts)

    # ---- calls
    calls, invalid = _merge_calls(
        list(getattr(message, "tool_calls", []) or []),
        list(getattr(message, "invalid_tool_calls", []) or []),
        list(parsed.tool_calls) if parsed is not None else [],
        list(parsed.invalid_tool_calls) if parsed is not None else [],
        None if tool_names is None else set(tool_names),
    )
    # The provider's raw call list would now disagree with ``tool_calls``; the field wins.
    kwargs.pop("tool_calls", None)
    kwargs.pop("function_call", None)

    return AIMessage(
        content=content,
        tool_calls=calls,
        invalid_tool_calls=invalid,
        additional_kwargs=kwargs,
        response_metadata=dict(message.response_metadata),
        usage_metadata=getattr(message, "usage_metadata", None),
        id=message.id,
        name=message.name,
    )


def markup_dialect(message: BaseMessage | str) -> str | None:
    """The format of the call markup a reply's text is written in, if it holds its own calls.

    The name of a prompt dialect (``"hermes"``, ``"qwen"``) when the model speaks one —
    a native reply with ``<tool_call>`` in its text tells that the model speaks Hermes and
    its server has no tool parser — or of another format the readers know
    (``"mistral"``, ``"deepseek"``, ``"harmony"``, …; see
    :mod:`fncall_graph.adapters.formats.readers`). Markup the reply only quotes (see
    :func:`_own_call_syntax`) and calls written while thinking do not count.

    >>> markup_dialect('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')
    'hermes'
    >>> markup_dialect('[TOOL_CALLS][{"name": "f", "arguments": {}}]')
    'mistral'
    >>> markup_dialect("plain answer") is None
    True
    """
    text = message if isinstance(message, str) else _split_content(message.content)[0]
    found = _first_marker(_without_thinking(text))
    if found is not None:
        return found[2]
    return whole_reply_format(_without_thinking(text))


def _first_marker(text: str) -> tuple[int, str, str] | None:
    """``(index, marker, format)`` of the first call marker that is the reply's own."""
    at = _MARKERS.search(text)
    if at is None:
        return None
    marker = at.group()
    reader = AUTO.reader_of(marker)
    name = "qwen" if marker == _QWEN_MARKER else reader.name if reader else ""
    special = reader is not None and reader.special
    if not _own_call_syntax(text, at.start(), marker, special=special):
        return None
    return at.start(), marker, name


def _without_thinking(text: str) -> str:
    """``text`` less its ``<think>`` blocks (and all before a ``</think>`` never opened)."""
    close = text.rfind(THINK.close[0])
    if close < 0:
        return text
    return text[close + len(THINK.close[0]) :]


def _own_call_syntax(text: str, at: int, marker: str, *, special: bool = False) -> bool:
    """Whether the markup at ``at`` is the reply's own calls, not markup it quotes.

    The rule: the first call marker stands outside any code fence or inline code; a
    marker in plain text (``<tool_call>``, ``✿FUNCTION✿``, ``>>>``) must also start a
    line (a special token, ``[TOOL_CALLS]`` or ``<|tool_call|>``, cannot be quoted by
    accident); and after the last closed call nothing but white space follows. An answer
    that shows the syntax (in a code block, in backticks, or with prose after it) runs
    nothing; a reply made of calls, with or without words before them, does.
    """
    line_start = text.rfind("\n", 0, at) + 1
    before = text[line_start:at]
    if not special and before.strip():
        return False  # mid-sentence: quoted
    if _quoted(text, at):
        return False  # inside a fenced code block or inline code
    reader = AUTO.reader_of(marker)
    closers = [
        b.close[0] for b in (reader.blocks if reader else ()) if b.open == marker and b.close
    ]
    if closers and reader is not None and all(b.consume_close for b in reader.blocks):
        closer = closers[0]
        last_open, last_close = text.rfind(marker), text.rfind(closer)
        after = text[last_close + len(closer) :] if last_close > last_open else ""
        for token in AUTO.drop_tokens:  # end-of-turn tokens and wrappers are no prose
            after = after.replace(token, "")
        if after.strip():
            return False  # prose after the calls: an explanation that quotes them
    return True


def _quoted(text: str, at: int) -> bool:
    """Whether ``at`` lies inside a fenced code block or inline code."""
    line_start = text.rfind("\n", 0, at) + 1
    return text.count("```", 0, at) % 2 == 1 or text[line_start:at].count("`") % 2 == 1


# --------------------------------------------------------------------------- helpers

_QWEN_MARKER = "✿FUNCTION✿"
_MARKERS = re.compile(
    "|".join(
        re.escape(m)
        for m in sorted(
            {_QWEN_MARKER, *(b.open for b in AUTO.blocks if b.kind == "call")},
            key=len,
            reverse=True,
        )
    )
)
# what, without a call marker of the reply's own, still is markup
_OTHER_MARKUP = re.compile(
    "|".join(
        re.escape(m)
        for m in sorted(
            {*(b.open for b in NO_CALL_MARKUP.blocks), *NO_CALL_MARKUP.drop_tokens},
            key=len,
            reverse=True,
        )
    )
)


def _resolve(dialect: Dialect | str | None) -> Dialect | None:
    if dialect is None or isinstance(dialect, Dialect):
        return dialect
    from .. import get_dialect  # the registry imports dialect modules lazily

    return get_dialect(dialect)


def _auto_parse(text: str) -> AIMessage | None:
    """Read ``text`` in the format its own call markup is written in, if any."""
    close = text.find(THINK.close[0])
    if close >= 0 and not 0 <= text.find(THINK.open) < close:
        # QwQ / DeepSeek-R1 templates put ``<think>`` in the prompt, so the reply
        # starts inside the thought and only its end marker shows.
        text = THINK.open + text
    found = _first_marker(_without_thinking(text))
    if found is not None:
        return (_resolve("qwen") if found[2] == "qwen" else AUTO).parse(text)  # type: ignore[union-attr]
    other = _OTHER_MARKUP.search(text)
    if _without_thinking(text).lstrip().startswith(OPENERS) or (
        other is not None and not _quoted(text, other.start())
    ):
        return NO_CALL_MARKUP.parse(text)
    return None


def _split_content(
    content: str | list[Any] | None,
) -> tuple[str, list[str], list[dict[str, Any]], bool]:
    """``(text, reasoning texts, other blocks, was a list)`` of message content."""
    if content is None:
        return "", [], [], False
    if isinstance(content, str):
        return content, [], [], False
    text: list[str] = []
    reasoning: list[str] = []
    others: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            text.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type", "text")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind in _REASONING_BLOCKS:
            if r := _reasoning_text(block):
                reasoning.append(r)
        elif kind not in _CALL_BLOCKS:
            others.append(block)
    return "".join(text), reasoning, others, True


def _reasoning_text(block: dict[str, Any]) -> str:
    """The text of a reasoning block in the LangChain v1, Anthropic or OpenAI shape."""
    for key in ("reasoning", "thinking", "text"):
        value = block.get(key)
        if isinstance(value, str) and value:
            return value
    summary = block.get("summary")  # OpenAI Responses: [{"type": "summary_text", "text"}]
    if isinstance(summary, list):
        return "\n".join(
            str(s.get("text")) for s in summary if isinstance(s, dict) and s.get("text")
        )
    return ""


def _key(name: str | None, args: Any) -> tuple[str, str]:
    return (name or "", json.dumps(args, sort_keys=True, ensure_ascii=False, default=str))


def _merge_calls(
    field: list[ToolCall],
    field_invalid: list[InvalidToolCall],
    markup: list[ToolCall],
    markup_invalid: list[InvalidToolCall],
    known: set[str] | None,
) -> tuple[list[ToolCall], list[InvalidToolCall]]:
    """Field calls first, then markup calls the field does not already hold; ids unique."""
    seen_ids: set[str] = set()

    def fresh(call_id: str | None) -> str:
        if not call_id or call_id in seen_ids:
            call_id = new_call_id()
        seen_ids.add(call_id)
        return call_id

    calls: list[ToolCall] = []
    pending: dict[tuple[str, str], int] = {}  # field calls not yet matched by markup
    for c in field:
        calls.append(tool_call(name=c["name"], args=dict(c["args"]), id=fresh(c.get("id"))))
        k = _key(c["name"], c["args"])
        pending[k] = pending.get(k, 0) + 1

    invalid: list[InvalidToolCall] = [
        invalid_tool_call(
            name=c.get("name"), args=c.get("args"), id=fresh(c.get("id")), error=c.get("error")
        )
        for c in field_invalid
    ]

    for c in markup:
        k = _key(c["name"], c["args"])
        if pending.get(k):
            pending[k] -= 1  # the same call, once from each source: count it once
            continue
        if known is not None and c["name"] not in known:
            invalid.append(
                invalid_tool_call(
                    name=c["name"],
                    args=json.dumps(c["args"], ensure_ascii=False),
                    id=fresh(c.get("id")),
                    error=f"unknown tool {c['name']!r}; available tools: "
                    + (", ".join(sorted(known)) or "none"),
                )
            )
            continue
        calls.append(tool_call(name=c["name"], args=dict(c["args"]), id=fresh(c.get("id"))))

    invalid.extend(
        invalid_tool_call(
            name=c.get("name"), args=c.get("args"), id=fresh(c.get("id")), error=c.get("error")
        )
        for c in markup_invalid
    )
    return calls, invalid
