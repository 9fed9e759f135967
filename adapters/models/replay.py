"""The replay model: recorded outputs played back, in order, with the inputs kept.

:class:`ReplayChatModel` stands in for a real model in graph tests, the way LangChain's
``GenericFakeChatModel`` does, with what tool-use tests need on top: ``bind_tools``,
streaming in several chunks (text and native tool calls), stop sequences applied as a
server applies them, every call's input messages and keyword arguments recorded, and
a clear error when the recording runs out.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> model = ReplayChatModel(
    ...     ['<tool_call>\\n{"name": "sqlite-list_tables", "arguments": {}}\\n</tool_call>',
    ...      "There are 3 tables."]
    ... )
    >>> model.invoke([HumanMessage("How many tables?")]).content[:11]
    '<tool_call>'
    >>> model.invoke("and now?").content
    'There are 3 tables.'
    >>> [m.content for m in model.inputs[0]]
    ['How many tables?']
    >>> model.invoke("more?")
    Traceback (most recent call last):
    ...
    fncall_graph.adapters.models.replay.ReplayExhausted: replay has 2 outputs, call 3 asked for more
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import invalid_tool_call, tool_call_chunk
from langchain_core.output_parsers.openai_tools import parse_tool_call
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr, field_validator, model_validator

from ..formats.base import text_of

__all__ = ["ReplayChatModel", "ReplayExhausted"]

# Token-ish pieces: runs of white space, short word pieces, single other characters, so
# markers such as ``<tool_call>`` arrive split over several chunks as they do from a server.
_TOKEN = re.compile(r"\s+|\w{1,6}|[^\w\s]", re.UNICODE)


class ReplayExhausted(RuntimeError):
    """The recording has no reply for the call: more calls than outputs, or (per
    conversation) a question it was not recorded answering, or one whose replies ran out.
    The message names the recording and what was asked."""


class _Cursor:
    """The replay position, shared by a model and every copy ``bind_tools`` makes."""

    __slots__ = ("lock", "position")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.position = 0


def message_from_output(output: str | dict[str, Any] | BaseMessage) -> AIMessage:
    """One recorded output as an ``AIMessage``.

    A string is the raw text of a reply. A dict holds message fields: LangChain's
    (``content``, ``tool_calls`` with ``name``/``args``/``id``, ``additional_kwargs``,
    ``response_metadata``, ...) or an OpenAI chat-completions ``message`` (``role``,
    ``tool_calls`` with ``function.arguments`` as a JSON string, ``reasoning_content``).
    Unreadable OpenAI arguments become ``invalid_tool_calls``, as langchain-openai does.
    """
    if isinstance(output, AIMessage):
        return output
    if isinstance(output, BaseMessage):
        raise TypeError(f"a recorded output must be an AI message, got {output.type!r}")
    if isinstance(output, str):
        return AIMessage(content=output)
    if not isinstance(output, dict):
        raise TypeError(f"a recorded output is a str, dict or AIMessage, got {output!r}")
    fields = dict(output)
    fields.pop("role", None)
    fields.pop("type", None)
    if fields.get("content") is None:
        fields["content"] = ""
    kwargs = dict(fields.pop("additional_kwargs", None) or {})
    if "reasoning_content" in fields:
        kwargs["reasoning_content"] = fields.pop("reasoning_content")
    calls, invalid = [], list(fields.pop("invalid_tool_calls", None) or [])
    for raw in fields.pop("tool_calls", None) or []:
        if "function" not in raw:
            calls.append({"type": "tool_call", "id": None, **raw})
            continue
        try:
            calls.append(parse_tool_call(raw, return_id=True))
        except Exception as exc:  # bad JSON arguments: keep the call, as invalid
            fn = raw["function"]
            invalid.append(
                invalid_tool_call(
                    name=fn.get("name"), args=fn.get("arguments"), id=raw.get("id"), error=str(exc)
                )
            )
    return AIMessage(
        **fields, additional_kwargs=kwargs, tool_calls=calls, invalid_tool_calls=invalid
    )


class ReplayChatModel(BaseChatModel):
    """A chat model that plays recorded raw outputs back, one per call, in order.

    Args:
        outputs: the recorded outputs: a string is the reply's raw text; a dict holds
            message fields (``tool_calls`` for replays of native function calling,
            see :func:`message_from_output`); an ``AIMessage`` is used as it is.
        chunk_size: when streaming, split text into pieces of this many characters;
            ``None`` splits into token-ish pieces (white space, short word pieces,
            single punctuation), so markup arrives split as it does from a server.
        raise_on_tools: raise what Ollama raises for a model without tool support
            (``ollama.ResponseError``, status 400) whenever tools are bound to the
            call; for tests of the fallback to a prompt dialect.
        model: the model name that error quotes.
        per_conversation: pick each reply by the conversation instead of a running
            cursor, so every conversation (thread) gets its replies in any order, in
            any process, side by side (a LangGraph server with several workers or
            replicas). Without ``questions``: the output whose index is the number of
            AI messages in the input. With ``questions``: see :meth:`reply_index`.
            A ``replay:`` spec turns it on for a recording that lists its questions
            (``?per-conversation`` and ``?in-order`` choose).
        questions: the user questions the recording answers, in order (``questions``
            in a replay file); each question's replies run up to and including its
            first reply that calls no tool, so the outputs make exactly one such turn
            per question.

    Attributes:
        inputs: the input messages of every call, in order (calls that raised included),
            shared with copies made by ``bind_tools``.
        calls: the keyword arguments of every call (``stop``, ``tools``, ...).
        bound_tools: the tools (OpenAI format) this copy was bound with, if any.

    A call with ``stop`` sequences cuts the reply at the first of them, as a server
    would. The cursor is shared by bound copies and safe to use from several threads.
    Every reply is a new message with an id of its own (its run's, as LangChain gives a
    provider's reply without one; a recorded id is not replayed), so an output played
    twice in one thread adds a second message instead of replacing the first.

    Example:
        >>> from langchain_core.tools import tool
        >>> @tool
        ... def get_weather(city: str) -> str:
        ...     '''Weather of a city.'''
        ...     return "sunny"
        >>> model = ReplayChatModel(
        ...     [{"content": "", "tool_calls": [
        ...         {"name": "get_weather", "args": {"city": "北京"}, "id": "call_1"}]}]
        ... )
        >>> bound = model.bind_tools([get_weather])
        >>> bound.invoke("weather?").tool_calls[0]["args"]
        {'city': '北京'}
        >>> model.calls[0]["tools"][0]["function"]["name"]
        'get_weather'
    """

    outputs: list[AIMessage]
    chunk_size: int | None = None
    raise_on_tools: bool = False
    per_conversation: bool = False
    model: str = "replay"
    source: str | None = None
    """Where the recording came from (free text, from the replay file)."""
    dialect: str | None = None
    """The dialect the recording was made with, if the replay file names one."""
    questions: list[str] | None = None
    bound_tools: list[dict[str, Any]] | None = None
    inputs: list[list[BaseMessage]] = Field(default_factory=list)
    calls: list[dict[str, Any]] = Field(default_factory=list)
    _cursor: _Cursor = PrivateAttr(default_factory=_Cursor)
    _turns: list[range] = PrivateAttr(default_factory=list)

    def __init__(
        self,
        outputs: Sequence[str | AIMessage | dict[str, Any]] | None = None,
        *,
        chunk_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        if outputs is None:
            outputs = kwargs.pop("outputs", None)
        if outputs is None:
            raise TypeError("ReplayChatModel needs the recorded outputs")
        super().__init__(outputs=outputs, chunk_size=chunk_size, **kwargs)

    @field_validator("outputs", mode="before")
    @classmethod
    def _messages(cls, value: Any) -> list[AIMessage]:
        if isinstance(value, str | dict):
            raise TypeError("outputs must be a sequence of outputs, not a single one")
        return [message_from_output(o) for o in value]

    @field_validator("chunk_size")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("chunk_size must be at least 1")
        return value

    @model_validator(mode="after")
    def _split_turns(self) -> ReplayChatModel:
        if self.questions is None:
            return self
        turns, start = [], 0
        for i, output in enumerate(self.outputs):
            if not self._calls_a_tool(output):
                turns.append(range(start, i + 1))
                start = i + 1
        if len(turns) != len(self.questions) or start != len(self.outputs):
            raise ValueError(
                f"{self._label()}: {len(self.questions)} questions, but its outputs make "
                f"{len(turns)} turns (a turn ends at a reply that calls no tool)"
                + (
                    f" and {len(self.outputs) - start} outputs after the last"
                    if start < len(self.outputs)
                    else ""
                )
            )
        self._turns = turns
        return self

    def _calls_a_tool(self, output: AIMessage) -> bool:
        if output.tool_calls or output.invalid_tool_calls:
            return True
        from ..formats.registry import get_dialect  # the recording's own reading

        text = output.content if isinstance(output.content, str) else ""
        return bool(self.dialect and text and get_dialect(self.dialect).parse(text).tool_calls)

    def _label(self) -> str:
        return self.model if self.model != "replay" else f"replay {self.source or '(outputs)'}"

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ReplayChatModel:
        """A replay model for a recording file.

        The file holds ``{"source": ..., "dialect": ..., "questions": [...], "outputs":
        [...]}`` (all but ``outputs`` optional), a bare JSON
        list of outputs, or (``.jsonl``) one JSON output per line.

        Example:
            >>> import json, tempfile
            >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            ...     json.dump({"dialect": "hermes", "outputs": ["hello"]}, f)
            >>> m = ReplayChatModel.from_file(f.name)
            >>> m.dialect, m.invoke("hi").content
            ('hermes', 'hello')
        """
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            data: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
        if isinstance(data, dict):
            if "outputs" not in data:
                raise ValueError(f"{path}: a replay file needs an 'outputs' list")
            kwargs.setdefault("source", data.get("source"))
            kwargs.setdefault("dialect", data.get("dialect"))
            kwargs.setdefault("questions", data.get("questions"))
            data = data["outputs"]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of outputs, got {type(data).__name__}")
        kwargs.setdefault("source", kwargs.get("source") or str(path))
        return cls(data, **kwargs)

    # ------------------------------------------------------------------ replay

    @property
    def position(self) -> int:
        """How many outputs have been played."""
        return self._cursor.position

    @property
    def remaining(self) -> int:
        """How many outputs are left."""
        return len(self.outputs) - self._cursor.position

    def _next(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> AIMessage:
        with self._cursor.lock:
            self.inputs.append(list(messages))
            self.calls.append({"stop": stop, **kwargs})
            if self.raise_on_tools and kwargs.get("tools"):
                raise _tools_unsupported(self.model)
            n = self.reply_index(messages, stop) if self.per_conversation else self._cursor.position
            if n >= len(self.outputs):
                named = self.source is not None or self.model != "replay"
                where = f" ({self._label()}, asked {_asked(messages)!r})" if named else ""
                raise ReplayExhausted(
                    f"replay has {len(self.outputs)} outputs, call {n + 1} asked for more{where}"
                )
            self._cursor.position = n + 1
            message = self.outputs[n]
        return _apply_stop(_fresh(message), stop)

    def reply_index(
        self, messages: Sequence[BaseMessage], stop: Sequence[str] | None = None
    ) -> int:
        """Which output answers ``messages`` when replies are picked per conversation.

        Without ``questions``, the number of AI messages in ``messages``. With them, the
        conversation's question is the last user message that is a recorded question
        (or holds one, in a prompt dialect that writes the turn's steps into the user
        message, as ReAct and Qwen do); the reply is that question's next one: as many
        into its replies as the conversation holds after it (AI messages, or steps
        written in that message, counted by the call's stop sequences). A question
        asked again, in any thread, gets its replies again from its first.

        Raises:
            ReplayExhausted: no user message is a recorded question, or the question's
                replies are all given (the conversation asked something after it); the
                message names the recording, what was asked and what it answers.
        """
        if self.questions is None:
            return sum(isinstance(m, AIMessage) for m in messages)
        users = [i for i, m in enumerate(messages) if m.type == "human"]
        asked = _asked(messages)
        for i in reversed(users):
            text = text_of(messages[i].content)
            found = [q for q in self.questions if q in text]
            if not found:
                continue
            question = max(found, key=len)  # the whole question, not a part of another
            turn = self._turns[self.questions.index(question)]
            after = text.split(question, 1)[1]
            steps = min((after.count(s) for s in stop or () if s), default=0)
            step = steps + sum(isinstance(m, AIMessage) for m in messages[i + 1 :])
            if step < len(turn):
                return turn[step]
            raise ReplayExhausted(
                f"{self._label()} has no reply for {asked!r}: its {len(turn)} replies to "
                f"{question!r} are all given; it answers: {self._asks()}"
            )
        raise ReplayExhausted(
            f"{self._label()} has no reply for {asked!r}: it was recorded answering "
            f"only these questions, asked as written: {self._asks()}"
        )

    def _asks(self) -> str:
        return " | ".join(self.questions or ())

    # ------------------------------------------------------------------ chat model

    @property
    def _llm_type(self) -> str:
        return "replay-chat-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "source": self.source, "outputs": len(self.outputs)}

    def __repr_args__(self) -> Any:
        # LangChain puts a model's repr in every run's start event: a summary, not every output
        return [("model", self.model), ("outputs", len(self.outputs)), ("position", self.position)]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=self._next(messages, stop, **kwargs))]
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._next(messages, stop, **kwargs)
        for chunk in _chunks(message, self._split):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = self._next(messages, stop, **kwargs)
        for chunk in _chunks(message, self._split):
            yield ChatGenerationChunk(message=chunk)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """A copy bound to ``tools`` (OpenAI format), sharing this model's replay cursor.

        The outputs do not depend on the tools: they are what was recorded. The tools
        reach every call's keyword arguments (``calls[i]["tools"]``) so tests can see them.
        """
        formatted = [convert_to_openai_tool(t) for t in tools]
        # shallow copy: ``outputs``, ``inputs``, ``calls`` and the cursor stay shared
        bound = self.model_copy(update={"bound_tools": formatted})
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return bound.bind(tools=formatted, **kwargs)

    def _split(self, text: str) -> list[str]:
        if self.chunk_size:
            return [text[i : i + self.chunk_size] for i in range(0, len(text), self.chunk_size)]
        return _TOKEN.findall(text)


# --------------------------------------------------------------------------- helpers


def _tools_unsupported(model: str) -> Exception:
    """What the ollama client raises when a model's template has no tool support.

    Ollama answers ``400 {"error": "registry.ollama.ai/library/NAME does not support
    tools"}``; the client turns the body into ``ollama.ResponseError`` and langchain-ollama
    lets it through unchanged.
    """
    from ollama import ResponseError

    name = model if ":" in model else f"{model}:latest"
    return ResponseError(
        json.dumps({"error": f"registry.ollama.ai/library/{name} does not support tools"}), 400
    )


def _asked(messages: Sequence[BaseMessage]) -> str:
    """The last user message's text, clipped: what the model was asked."""
    last = next((m for m in reversed(messages) if m.type == "human"), None)
    return _clip(text_of(last.content)) if last is not None else "(no user message)"


def _clip(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _fresh(recorded: AIMessage) -> AIMessage:
    """A new message with the recorded output's fields and no id, so the call's run gives
    it its own (``lc_run-<run id>``), as a provider's reply has its own: a question asked
    again in one thread gets new messages beside the first answer's, where the recorded
    object (which LangChain stamps with its first run's id) or a recorded id would make
    ``add_messages`` replace them. Deep, so nothing done to a reply reaches the recording."""
    return recorded.model_copy(update={"id": None}, deep=True)


def _apply_stop(message: AIMessage, stop: Sequence[str] | None) -> AIMessage:
    """The reply cut before the first stop sequence, as an OpenAI-compatible server does."""
    if not stop or not isinstance(message.content, str):
        return message
    text = message.content
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    if cut < 0:
        return message
    return message.model_copy(update={"content": text[:cut]})


def _chunks(message: AIMessage, split: Callable[[str], list[str]]) -> Iterator[AIMessageChunk]:
    """``message`` as stream chunks whose sum equals it: reasoning, text, then tool calls."""
    kwargs = dict(message.additional_kwargs)
    reasoning = kwargs.pop("reasoning_content", None)
    out: list[AIMessageChunk] = []
    if isinstance(reasoning, str) and reasoning:
        out += [
            AIMessageChunk(content="", additional_kwargs={"reasoning_content": piece})
            for piece in split(reasoning)
        ]
    if kwargs:
        out.append(AIMessageChunk(content="", additional_kwargs=kwargs))
    content = message.content
    if isinstance(content, str):
        out += [AIMessageChunk(content=piece) for piece in split(content)]
    elif content:
        out.append(AIMessageChunk(content=content))
    index = 0
    for call in message.tool_calls:
        args = json.dumps(call["args"], ensure_ascii=False)
        half = len(args) // 2  # two pieces per call, so aggregation is exercised
        out.append(
            AIMessageChunk(
                content="",
                tool_call_chunks=[
                    tool_call_chunk(name=call["name"], args=args[:half], id=call["id"], index=index)
                ],
            )
        )
        out.append(
            AIMessageChunk(
                content="",
                tool_call_chunks=[
                    tool_call_chunk(name=None, args=args[half:], id=None, index=index)
                ],
            )
        )
        index += 1
    for bad in message.invalid_tool_calls:
        out.append(
            AIMessageChunk(
                content="",
                tool_call_chunks=[
                    tool_call_chunk(name=bad["name"], args=bad["args"], id=bad["id"], index=index)
                ],
            )
        )
        index += 1
    out.append(
        AIMessageChunk(
            content="",
            response_metadata=dict(message.response_metadata),
            usage_metadata=message.usage_metadata,
            chunk_position="last",
        )
    )
    for chunk in out:
        if message.id:
            chunk.id = message.id
        yield chunk
