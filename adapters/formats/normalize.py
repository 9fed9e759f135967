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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.tool import InvalidToolCall, ToolCall

from .arg_types import tool_schemas, typed_call
from .base import Dialect, ToolLike, split_content, text_of
from .calls import MARKUP_FORMAT_KEY, CallIds, merge_calls, unparsed_calls, used_call_ids
from .own_calls import Echoes, auto_read, opened_thought, quoting_answer, read_text
from .own_calls import echo_sources as _echo_texts
from .readers import get_reader
from .registry import get_dialect
from .scanner import explains_its_calls
from .stream_reading import StreamReading, fitted_call

__all__ = ["MARKUP_FORMAT_KEY", "normalize", "used_call_ids"]


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
      reply is read exactly as the graph and ``with_dialect`` read it: by
      :meth:`~.stream_reading.StreamReading.whole`, the one reading a stream's chunks
      add up to (a reply that only quotes the dialect's call syntax calls nothing, and
      keeps it as its answer; ReAct's fenced action blob without ``Action:`` is a call);
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
            are read), the texts themselves, or an :class:`~.own_calls.Echoes` made of them;
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
    text, block_reasoning, others, was_list = split_content(message.content)

    d = None if dialect is None else get_dialect(dialect)
    echoes = _echoes(echo_sources)
    if d is not None and not d.native:
        # a prompt dialect's reply: the graph's own reading, one implementation
        plan = _Plan(d, list(tools) if tools else None, set(taken_ids), call_format, echoes)
        read = StreamReading(plan).whole(message)
        return read if tool_names is None else _known_only(read, set(tool_names))
    markup_format: str | None = None
    texts: dict[str, Mapping[str, str]] = {}
    if call_format is not None:
        # the model's format is known: read as its engine reads it
        reader = get_reader(call_format)
        parsed, texts, events = read_text(reader, opened_thought(text))
        markup_format = call_format
        if (parsed.tool_calls or parsed.invalid_tool_calls) and explains_its_calls(events):
            # the reply shows the syntax: it calls nothing, and keeps what it shows
            parsed = AIMessage(
                content=quoting_answer(text), additional_kwargs=dict(parsed.additional_kwargs)
            )
            texts = {}
    else:
        parsed, markup_format, texts = auto_read(text)

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
        field_invalid = unparsed_calls(kwargs.get("tool_calls"))
    # A native reply whose calls the provider's parser found has no calls of its own in
    # its text: markup there is quoted or echoed (a tool result's), never run.
    from_text = parsed is not None and not field
    calls, invalid = merge_calls(
        field,
        field_invalid,
        _typed(list(parsed.tool_calls), texts, tools) if from_text and parsed is not None else [],
        list(parsed.invalid_tool_calls) if from_text and parsed is not None else [],
        None if tool_names is None else set(tool_names),
        CallIds(taken_ids),
    )
    if call_format is not None and isinstance(content, str) and not field:
        # the format's loose call forms (ReAct's action blob with no ``Action:``), fitted
        # to the tools as a prompt dialect's reading fits them; echoes checked after
        fitter = get_reader(call_format)
        if fitter.fits_loose_calls:
            shaped = AIMessage(content=content, tool_calls=calls, additional_kwargs=kwargs)
            fitted = fitter.fit_to_tools(shaped, tools)
            calls, content = list(fitted.tool_calls), text_of(fitted.content)
    if echoes is not None:
        calls, echoed = echoes.split(calls)
        invalid.extend(echoed)
    # The provider's raw call list would now disagree with ``tool_calls``; the field wins.
    kwargs.pop("tool_calls", None)
    kwargs.pop("function_call", None)
    metadata = dict(message.response_metadata)
    if markup_format is not None and calls and not field:
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


@dataclass(slots=True)
class _Plan:
    """What reading a prompt dialect's reply outside a model call needs (a
    :class:`~.stream_reading.ReadingPlan`, as the model call's own is)."""

    dialect: Dialect
    tools: list[Any] | None
    taken: set[str]
    call_format: str | None
    echoes: Echoes | None
    one_call: bool = False
    json_answer: bool = False
    schemas: dict[str, Any] | None = field(default=None)

    @property
    def reader(self) -> Dialect:
        return self.dialect if self.call_format is None else get_reader(self.call_format)

    def read(self, reply: BaseMessage) -> AIMessage:  # a native reply's: not read here
        raise NotImplementedError("a prompt dialect's reply is read whole")

    def fit(self, call: ToolCall, texts: Mapping[str, str] | None = None) -> ToolCall:
        return fitted_call(self, call, texts)

    def not_run(self, call: ToolCall) -> InvalidToolCall:  # one_call is never set here
        raise NotImplementedError

    def repaired_answer(self, text: str) -> str | None:  # json_answer is never set here
        return None


def _known_only(read: AIMessage, known: set[str]) -> AIMessage:
    """``read`` with its calls of tools not in ``known`` made unreadable, with why."""
    calls, unknown = merge_calls([], [], list(read.tool_calls), [], known, CallIds())
    if not unknown:
        return read
    invalid = [*read.invalid_tool_calls, *unknown]
    return read.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})


def _echoes(given: Sequence[BaseMessage] | Sequence[str] | Echoes | None) -> Echoes | None:
    if not given:
        return None
    return given if isinstance(given, Echoes) else Echoes(_sources(given))


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
