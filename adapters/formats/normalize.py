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
import reprlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall, invalid_tool_call, tool_call

from .arg_types import tool_schemas, typed_call
from .base import Dialect
from .call_args import argument_problem, coerce_args, new_call_id
from .events import CallEvent, text_after_calls
from .markup import THINK
from .placement import explains_its_calls, shown_as_example
from .readers import AUTO, NO_CALL_MARKUP, get_reader
from .readers.base import strict_prefix
from .readers.whole_reply import OPENERS, whole_reply_format
from .reading import Echoes
from .reading import echo_sources as _echo_texts
from .registry import get_dialect
from .schema import ToolLike

__all__ = [
    "MARKUP_FORMAT_KEY",
    "CallIds",
    "call_key",
    "markup_dialect",
    "normalize",
    "quotes_its_calls",
    "quoting_answer",
    "unmatched",
    "used_call_ids",
]

#: ``response_metadata`` key of a native reply whose calls were read from markup in its
#: content (its server had no tool parser): the format they were written in.
MARKUP_FORMAT_KEY = "fncall_markup_format"

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
    taken_ids: Iterable[str] = (),
    tools: Sequence[ToolLike] | None = None,
    call_format: str | None = None,
    echo_sources: Sequence[BaseMessage] | Sequence[str] | Echoes | None = None,
) -> AIMessage:
    """Return the canonical form of a model's reply.

    Calls are taken from the ``tool_calls`` field (and ``invalid_tool_calls``) and
    from markup in ``content``:

    * with a prompt dialect (``"hermes"``, ``"qwen"``, ``"react"`` or an instance), the
      text is read with that dialect's ``parse``, unless the reply only quotes the
      dialect's call syntax (:func:`quotes_its_calls`): then it is left as it is;
    * with ``None`` or ``"native"``, the text is read only if prompt-dialect markup
      appears in it (``<tool_call>`` → Hermes, ``✿FUNCTION✿`` → Qwen), or a ``<think>``
      block (also one whose ``<think>`` was in the prompt, so only ``</think>``
      shows); otherwise ``content`` is left as it is.

    With ``None`` or ``"native"``, a reply with calls in the field has no others: markup
    in its text (a tool result the model echoed, an example) adds none. With a prompt
    dialect, a call present both in the field and in the markup (same name and
    arguments) is kept once, with the field's id: a call is never read twice. A call keeps its id
    unless it has none, or the id is in ``taken_ids`` or already used in the message:
    then it gets a fresh one (:class:`CallIds`). A call id names one call in a thread
    (its result, and its claim: a call runs at most once per id), so pass the ids the
    thread already used (:func:`used_call_ids`) for models that number their calls
    ``call_0``, ``call_1`` in every reply.

    With ``None`` or ``"native"``, a reply whose calls came from markup in its content
    (and none from the field) records the format in
    ``response_metadata[MARKUP_FORMAT_KEY]``.

    Reasoning from ``additional_kwargs["reasoning_content"]``, from ``"reasoning"`` /
    ``"thinking"`` content blocks and from ``<think>`` blocks is joined (in that order)
    into ``additional_kwargs["reasoning_content"]``, never into the answer or the
    calls. ``id``, ``name``, ``response_metadata`` and ``usage_metadata`` are kept.

    Content given as a list of blocks becomes a string when only text is left; other
    blocks (images, say) are kept after one text block.

    With ``call_format`` (the model's format, known: declared, from its server or learned
    in the thread), the text is read the way that format's engine reads it: only that
    format's markup is read, wherever it stands in the reply (after a sentence, in a list
    item, calls with text between them), with the engine's repairs; markup of any other
    format is text; nothing is guessed about a call being only shown. Without it, the
    format is detected as above.

    With ``echo_sources`` (the thread's earlier messages, or texts), a call whose name and
    arguments a tool result or a user's message already writes, in any known format (the
    product's neutralising marks removed), is an echo: it goes to ``invalid_tool_calls``
    with the reason, never to ``tool_calls``.

    Args:
        message: the reply (``AIMessage`` or ``AIMessageChunk``).
        dialect: how calls are written in ``content``; see above.
        tool_names: if given, calls read from *markup* must name one of these tools;
            others go to ``invalid_tool_calls`` with the reason, so an answer that only
            quotes the call syntax runs nothing. Calls from the ``tool_calls`` field are
            kept as the provider gave them.
        taken_ids: call ids the thread already used; see above.
        tools: the tools offered (any form a dialect takes); the arguments of calls
            read from *markup* are fitted to their schemas (``"5"`` → ``5`` for an
            integer parameter; see :func:`~.arg_types.typed_args`). Without them, a value
            a format writes as text is read as JSON where it parses.
        call_format: the model's call format, one of
            :data:`~fncall_graph.adapters.formats.readers.CALL_FORMATS`; ``None``:
            detected.
        echo_sources: the messages before the reply (their tool results and user messages
            are read), the texts themselves, or an :class:`~.reading.Echoes` made of them;
            see above.

    Raises:
        ValueError: for an unknown ``call_format``, listing the known ones.

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

    d = None if dialect is None else get_dialect(dialect)
    markup_format: str | None = None
    texts: dict[str, Mapping[str, str]] = {}
    if call_format is not None or (d is not None and not d.native):
        # the model's format is known (or the dialect's own): read as its engine reads it
        reader = get_reader(call_format) if call_format is not None else d
        assert reader is not None
        parsed, texts, after = _read(reader, _opened_thought(text) if call_format else text)
        markup_format = call_format
        if (parsed.tool_calls or parsed.invalid_tool_calls) and (
            explains_its_calls(after) or (call_format is None and quotes_its_calls(reader, text))
        ):
            # the reply shows the syntax: it calls nothing, and keeps what it shows
            parsed = AIMessage(
                content=quoting_answer(text), additional_kwargs=dict(parsed.additional_kwargs)
            )
            texts = {}
    else:
        parsed, markup_format, texts = _auto_parse(text)

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
    field = list(getattr(message, "tool_calls", []) or [])
    field_invalid = list(getattr(message, "invalid_tool_calls", []) or [])
    if not field and not field_invalid:  # raw calls LangChain could not parse: not lost
        field_invalid = _unparsed(kwargs.get("tool_calls"))
    # A native reply whose calls the provider's parser found has no calls of its own in
    # its text: markup there is quoted or echoed (a tool result's), never run.
    from_text = parsed is not None and not (field and (d is None or d.native))
    calls, invalid = _merge_calls(
        field,
        field_invalid,
        _typed(list(parsed.tool_calls), texts, tools) if from_text and parsed is not None else [],
        list(parsed.invalid_tool_calls) if from_text and parsed is not None else [],
        None if tool_names is None else set(tool_names),
        CallIds(taken_ids),
    )
    if echo_sources:
        echoes = (
            echo_sources if isinstance(echo_sources, Echoes) else Echoes(_sources(echo_sources))
        )
        calls, echoed = echoes.split(calls)
        invalid.extend(echoed)
    # The provider's raw call list would now disagree with ``tool_calls``; the field wins.
    kwargs.pop("tool_calls", None)
    kwargs.pop("function_call", None)
    metadata = dict(message.response_metadata)
    if markup_format is not None and calls and not field and (d is None or d.native):
        metadata[MARKUP_FORMAT_KEY] = markup_format

    return AIMessage(
        content=content,
        tool_calls=calls,
        invalid_tool_calls=invalid,
        additional_kwargs=kwargs,
        response_metadata=metadata,
        usage_metadata=getattr(message, "usage_metadata", None),
        id=message.id,
        name=message.name,
    )


def _sources(given: Sequence[BaseMessage] | Sequence[str]) -> list[tuple[str, str]] | list[str]:
    """Echo sources as texts: messages are read for their tool results and user texts."""
    if all(isinstance(g, str) for g in given):
        return list(given)  # type: ignore[arg-type]
    return _echo_texts([g for g in given if isinstance(g, BaseMessage)])


def _typed(
    calls: list[ToolCall],
    texts: Mapping[str, Mapping[str, str]],
    tools: Sequence[ToolLike] | None,
) -> list[ToolCall]:
    if not tools or not texts:
        return calls
    schemas = tool_schemas(tools)
    return [typed_call(c, texts.get(c["id"]), schemas) for c in calls]


def _read(dialect: Dialect, text: str) -> tuple[AIMessage, dict[str, Mapping[str, str]], str]:
    """``dialect.parse(text)``, the arguments its calls wrote as text (by call id), and
    the answer text after its last call."""
    parser = dialect.stream_parser()
    events = [*parser.feed(text), *parser.close()]
    texts = {e.call["id"]: e.texts for e in events if isinstance(e, CallEvent) and e.texts}
    return parser.message(), texts, text_after_calls(events)


def markup_dialect(message: BaseMessage | str) -> str | None:
    """The format of the call markup a reply's text is written in, if it holds its own calls.

    The name of a prompt dialect (``"hermes"``, ``"qwen"``) when the model speaks one —
    a native reply with ``<tool_call>`` in its text tells that the model speaks Hermes and
    its server has no tool parser — or of another format the readers know
    (``"mistral"``, ``"deepseek"``, ``"harmony"``, …; see
    :mod:`fncall_graph.adapters.formats.readers`). Markup the reply only quotes (see
    :func:`_own_call_syntax`) and calls written while thinking do not count.

    >>> markup_dialect('<tool_call>\\n{"name": "f", "arguments": {}}\\n</tool_call>')
    'hermes'
    >>> markup_dialect('[TOOL_CALLS][{"name": "f", "arguments": {}}]')
    'mistral'
    >>> markup_dialect("plain answer") is None
    True
    """
    text = message if isinstance(message, str) else _split_content(message.content)[0]
    return _markup_format(_without_thinking(_opened_thought(text)))


def _markup_format(answer: str) -> str | None:
    """The format of the calls ``answer`` (a reply less its thinking) writes, if any."""
    found = _first_marker(answer)
    return found[2] if found is not None else whole_reply_format(answer)


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
    """``text`` less its reasoning blocks, in every format's markers (``<think>``,
    ``<seed:think>``, ``[THINK]``, Gemma's thought channel, …), as the scanner reads them:
    a block ends at its first closer; a closer with no block open is not thinking."""
    out: list[str] = []
    pos = 0
    while (opened := _REASONING_OPEN.search(text, pos)) is not None:
        out.append(text[pos : opened.start()])
        block = _REASONING_BLOCK[opened.group()]
        ends = [(i, c) for c in block.close if (i := text.find(c, opened.end())) >= 0]
        if not ends:
            return "".join(out)  # thinking to the end of the reply
        at, closer = min(ends)
        pos = at + (len(closer) if block.consume_close else 0)
    out.append(text[pos:])
    return "".join(out)


def quotes_its_calls(dialect: Dialect, text: str) -> bool:
    """Whether a reply in a prompt dialect only shows the dialect's call syntax.

    The rule :func:`markup_dialect` applies to every format, on the dialect's own call
    marker: a first call inside code, after an example cue ("For example:"), in the
    middle of a sentence, or followed by prose about it, is quoted. ReAct's blob sits in
    a fence of its own: the fence after ``Action:`` is its markup, not a quotation.
    """
    answer = _without_thinking(_opened_thought(text))
    found = [
        (at, b.open)
        for b in dialect.blocks
        if b.kind == "call" and (at := answer.find(b.open)) >= 0
    ]
    if not found:
        return False
    # the dialect's markup may open before its first call (ReAct's ``Thought:``)
    opened = min(at for b in dialect.blocks if (at := answer.find(b.open)) >= 0)
    if shown_as_example(answer[:opened]):
        return True
    at, marker = min(found)
    return not _own_call_syntax(answer, at, marker)


def quoting_answer(text: str) -> str:
    """The answer of a reply that only quotes call syntax: its text less its thinking."""
    return _without_thinking(_opened_thought(text)).strip()


def _own_call_syntax(text: str, at: int, marker: str, *, special: bool = False) -> bool:
    """Whether the markup at ``at`` is the reply's own calls, not markup it quotes.

    The rule: the first call marker stands outside any code fence or inline code and
    does not follow an example cue ("for example", "e.g.", "such as"); a marker in plain
    text (``<tool_call>``, ``✿FUNCTION✿``, ``>>>``) starts a line or follows a finished
    sentence (``Let me check. <tool_call>``), not a sentence it is part of (a special
    token, ``[TOOL_CALLS]`` or ``<|tool_call|>``, cannot be quoted by accident); and the
    line after the last call does not say the calls were examples
    (:func:`~.placement.explains_its_calls`). Where each call stands is the scanner's
    rule (:mod:`.placement`).
    """
    if _quoted(text, at):
        return False  # inside a fenced code block or inline code
    # the reply's markup may start before its first call (a thought, a channel)
    first = _ANY_MARKUP.search(text, 0, at)
    if shown_as_example(text[: first.start() if first else at]):
        return False  # shown as an example
    line = text[text.rfind("\n", 0, at) + 1 : at].strip()
    if not special and line and line[-1] not in _SENTENCE_END:
        return False  # mid-sentence: quoted
    reader = AUTO.reader_of(marker)
    closers = [
        b.close[0] for b in (reader.blocks if reader else ()) if b.open == marker and b.close
    ]
    last_open = text.rfind(marker)
    last_close = text.rfind(closers[0]) if closers else -1
    if (
        last_close > last_open
        and reader is not None
        and all(b.consume_close for b in reader.blocks)
    ):
        after = text[last_close + len(closers[0]) :]
    else:  # the block runs to the end of the reply, or to the next call's marker
        after = _after_json(text, last_open + len(marker.rstrip("[{")))
    for token in AUTO.drop_tokens:  # end-of-turn tokens and wrappers are no prose
        after = after.replace(token, "")
    return not explains_its_calls(after)  # else prose that says the calls were examples


def _after_json(text: str, start: int) -> str:
    """What follows the JSON value of the call that starts at ``start`` (a format with
    no closer: ``[TOOL_CALLS][…]``, ``<|python_tag|>{…}``); ``""`` if it holds none."""
    brace = min((i for i in (text.find("{", start), text.find("[", start)) if i >= 0), default=-1)
    if brace < 0 or "\n\n" in text[start:brace] or "<" in text[start:brace]:
        return ""  # no JSON right after the marker: the format's own tags follow it
    values, rest = strict_prefix(text[brace:])  # calls may follow each other (``; {…}``)
    if values and "```" in text[start:brace]:  # the call's own fence (ReAct's blob) closes
        rest = rest.lstrip().removeprefix("```")
    return rest if values else ""


# what a sentence that a call may follow on the same line ends with
_SENTENCE_END = frozenset(".!?:。！？：…")


def _quoted(text: str, at: int) -> bool:
    """Whether ``at`` lies inside a fenced code block or inline code (which may run over
    the lines of one paragraph)."""
    if text.count("```", 0, at) % 2 == 1:
        return True
    paragraph = text.rfind("\n\n", 0, at) + 1
    fence = text.rfind("```", 0, at)
    start = max(paragraph, fence + 3 if fence >= 0 else 0)
    return text[start:at].count("`") % 2 == 1


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
# every marker and token of every format
_ANY_MARKUP = re.compile(
    "|".join(
        re.escape(m)
        for m in sorted(
            {_QWEN_MARKER, *(b.open for b in AUTO.blocks), *AUTO.drop_tokens},
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


_REASONING_BLOCK = {b.open: b for b in AUTO.blocks if b.kind == "reasoning"}
_REASONING_OPEN = re.compile(
    "|".join(map(re.escape, sorted(_REASONING_BLOCK, key=len, reverse=True)))
)
# closers a reply shows when its prompt opened the thought: a reasoning block's closer
# that its reader also drops where it stands alone (harmony's ``<|end|>`` ends any message)
_THOUGHT_OPENER = {THINK.close[0]: THINK.open} | {
    b.close[0]: b.open
    for r in AUTO.readers
    for b in reversed(r.blocks)
    if b.kind == "reasoning" and b.close and b.close[0] in r.drop_tokens and b.close[0] != "<|end|>"
}
_THOUGHT_CLOSERS = re.compile(
    "|".join(map(re.escape, sorted(_THOUGHT_OPENER, key=len, reverse=True)))
)


def _opened_thought(text: str) -> str:
    """``text`` with the thought its prompt opened put back in front.

    QwQ / DeepSeek-R1 templates end the prompt with ``<think>``, Seed-OSS, Magistral,
    Kimi-K3, Gemma 4 and PLaMo with their own thinking opener: the reply starts inside
    the thought and only its closer shows (``</think>``, ``</seed:think>``, ``[/THINK]``,
    ``<channel|>`` …). A closer after a call or other markup (inside a call's arguments,
    after a channel) opened nothing: the text is left as it is.
    """
    closer = _THOUGHT_CLOSERS.search(text)
    if closer is None:
        return text
    opener = _THOUGHT_OPENER[closer.group()]
    before = text[: closer.start()]
    if opener in before or _ANY_MARKUP.search(before):
        return text
    return opener + text


def _auto_parse(
    text: str,
) -> tuple[AIMessage | None, str | None, dict[str, Mapping[str, str]]]:
    """``text`` read in the format its own call markup is written in, that format, and
    the arguments its calls wrote as text (by call id).

    ``(None, None, {})`` when it holds no markup at all.
    """
    text = _opened_thought(text)
    answer = _without_thinking(text)
    found = _first_marker(answer)
    if found is not None:
        reader = get_dialect("qwen") if found[2] == "qwen" else AUTO
        parsed, texts, _ = _read(reader, text)
        return parsed, found[2], texts
    other = _OTHER_MARKUP.search(text)
    if answer.lstrip().startswith(OPENERS) or (
        other is not None and not _quoted(text, other.start())
    ):
        return NO_CALL_MARKUP.parse(text), whole_reply_format(answer), {}
    return None, None, {}


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


def _merge_calls(
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
        problem = argument_problem(c["args"])
        if problem is None:
            calls.append(
                tool_call(name=c["name"], args=dict(c["args"]), id=ids.assign(c.get("id")))
            )
        else:  # the field's calls get the checks text-read calls get
            invalid.append(
                invalid_tool_call(
                    name=c["name"],
                    args=_shown(c["args"]),
                    id=ids.assign(c.get("id")),
                    error=f"bad arguments for {c['name']!r}: {problem}",
                )
            )
    invalid.extend(
        invalid_tool_call(
            name=c.get("name"),
            args=c.get("args"),
            id=ids.assign(c.get("id")),
            error=c.get("error") or _why_unreadable(c.get("args")),
        )
        for c in field_invalid
    )
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


def _unparsed(raw: Any) -> list[dict[str, Any]]:
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
