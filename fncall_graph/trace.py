"""A transcript of every model call of a graph run, in four views.

For each model call Qwen-Agent's write-up of the database-assistant example prints the raw input, the pre-processed input the
model really sees, the model's raw output and the post-processed output. A
:class:`Tracer` rebuilds those four views while a graph built by
:func:`~fncall_graph.create_fncall_graph` streams with
``stream_mode=["updates", "values"]`` (other modes may be added):

- **raw input**: the canonical history the ``model`` node starts from (the graph's
  system prompt in front), as OpenAI-style dicts;
- **processed input**: what the model really received, as the inner run's callback saw it
  (the same as the ``model`` node's ``model_input``);
- **raw output**: what the inner chat model returned before any parsing, caught by
  :class:`RawOutputRecorder`, a LangChain callback handler. Prompt dialects call the
  inner model in a run tagged ``nostream``; its text is the raw output (a string). With
  the native dialect there is no inner run: the provider's reply is the raw output
  (an OpenAI-style dict, ``reasoning_content`` kept);
- **processed output**: the canonical ``AIMessage`` the node added, as an OpenAI-style
  dict (``tool_calls`` with JSON-string arguments), plus ``invalid_tool_calls`` when
  some calls could not be read.

Example:
    ```python
    tracer = Tracer(system_prompt="你扮演一个数据库助手")
    config = {"configurable": {"thread_id": "t"}, "callbacks": [tracer.recorder]}
    tracer.start_round("数据库有几张表")
    for mode, chunk in graph.stream(inputs, config, stream_mode=["updates", "values"]):
        for record in tracer.feed(mode, chunk):
            print(record.to_json())
    ```
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    convert_to_openai_messages,
)
from langchain_core.outputs import LLMResult
from langgraph.constants import TAG_NOSTREAM

from fncall_graph.adapters.formats.base import text_of
from fncall_graph.graphs.factory import MODEL

__all__ = ["ModelCallRecord", "RawOutputRecorder", "Tracer"]


def message_dict(message: BaseMessage) -> dict[str, Any]:
    """``message`` as an OpenAI-style dict, keeping what that format drops.

    ``reasoning_content`` (thinking models) and ``invalid_tool_calls`` (calls that could
    not be read) have no place in OpenAI's message format; they are added as extra keys.
    """
    out: dict[str, Any] = convert_to_openai_messages(message)  # type: ignore[assignment]
    reasoning = message.additional_kwargs.get("reasoning_content")
    if reasoning:
        out["reasoning_content"] = reasoning
    if isinstance(message, AIMessage) and message.invalid_tool_calls:
        out["invalid_tool_calls"] = [dict(c) for c in message.invalid_tool_calls]
    return out


class RawOutputRecorder(BaseCallbackHandler):
    """Keeps what the chat models of one graph run returned, for the tracer to collect.

    Pass it in the run's ``callbacks``; LangChain hands it to every nested run, the
    inner model call of a prompt dialect included. Safe to call from LangGraph's
    worker threads.
    """

    # inline: the records must be complete when the model node's update is streamed
    run_inline = True
    fncall_sees_wrapped_run = True  # SEES_WRAPPED_RUN: the wrapped model's own run too

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inner: dict[UUID, tuple[bool, list[BaseMessage]]] = {}
        self._outputs: list[tuple[bool, BaseMessage, list[BaseMessage]]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self._inner[run_id] = (TAG_NOSTREAM in (tags or []), messages[0] if messages else [])

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            started = self._inner.pop(run_id, None)
            if started is None or not response.generations or not response.generations[0]:
                return
            generation = response.generations[0][0]
            message = getattr(generation, "message", None)
            if isinstance(message, BaseMessage):
                self._outputs.append((started[0], message, started[1]))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self._inner.pop(run_id, None)

    def take(self) -> tuple[bool, BaseMessage, list[BaseMessage]] | None:
        """The model call that just ended: whether it was an inner run, its raw reply, and
        the messages it was sent.

        An inner (``nostream``) run wins over the wrapper around it; otherwise the last
        chat-model run is the provider's own reply. The record is cleared.
        """
        with self._lock:
            outputs, self._outputs = self._outputs, []
        inner = [o for o in outputs if o[0]]
        if inner:
            return inner[-1]
        if outputs:
            return outputs[-1]
        return None


@dataclass
class ModelCallRecord:
    """The four views of one model call, and where it happened.

    Attributes:
        index: the call's number in the session, from 1.
        round: the question's number in the session, from 1.
        question: the user's question of that round.
        call: the call's number within the round, from 1.
        dialect: the dialect the call spoke.
        raw_input: the canonical history, OpenAI-style dicts.
        processed_input: what the model received, OpenAI-style dicts.
        raw_output: the model's text before parsing (prompt dialects), or the
            provider's reply as a dict (native).
        processed_output: the canonical reply, an OpenAI-style dict.
        call_format: the format the reply's calls in text were read in (``"hermes"``,
            ``"mistral"``, …; ``None``: not known yet, every format was looked for).
        call_format_source: where that format came from (``"dialect"``, ``"declared"``,
            ``"server"``, ``"name"``, ``"learned"``, ``"unknown"``).
    """

    index: int
    round: int
    question: str
    call: int
    dialect: str | None
    raw_input: list[dict[str, Any]]
    processed_input: list[dict[str, Any]]
    raw_output: str | dict[str, Any] | None
    processed_output: dict[str, Any]
    call_format: str | None = None
    call_format_source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        """One line of JSON (a JSON Lines record)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    def to_text(self) -> str:
        """The four views, one after another, for reading."""

        def block(value: Any) -> str:
            if isinstance(value, str):
                return value
            return json.dumps(value, ensure_ascii=False, indent=1)

        return "\n".join(
            [
                "raw input:",
                block(self.raw_input),
                "processed input:",
                block(self.processed_input),
                "raw output:",
                block(self.raw_output),
                "processed output:",
                block(self.processed_output),
            ]
        )


class Tracer:
    """Builds a :class:`ModelCallRecord` for every model call from a graph's stream.

    Args:
        system_prompt: the graph's ``system_prompt``, put in front of a raw input that
            has no system message (the ``model`` node does the same).

    Attributes:
        recorder: the callback handler to pass in the run's ``callbacks``.
        records: every record so far.
    """

    def __init__(self, system_prompt: str | None = None) -> None:
        self.system_prompt = system_prompt
        self.recorder = RawOutputRecorder()
        self.records: list[ModelCallRecord] = []
        self._round = 0
        self._question = ""
        self._call = 0
        self._values: Mapping[str, Any] = {}

    def start_round(self, question: str) -> None:
        """A new user question: the next calls belong to it."""
        self._round += 1
        self._question = question
        self._call = 0

    def feed(self, mode: str, chunk: Any) -> list[ModelCallRecord]:
        """Take one ``(mode, chunk)`` item of the stream; return the calls it completed."""
        if mode == "values" and isinstance(chunk, Mapping):
            self._values = chunk
            return []
        if mode != "updates" or not isinstance(chunk, Mapping):
            return []
        update = chunk.get(MODEL)
        if not isinstance(update, Mapping):
            return []
        replies = [m for m in update.get("messages") or [] if isinstance(m, AIMessage)]
        if not replies:
            return []
        dialect = update.get("dialect") or self._values.get("dialect")
        record = self._record(replies[-1], self.recorder.take(), dialect)
        # the format the reply was read in: the one known when the call was made (the
        # previous state), or the one this reply set (learned, or a dialect switch)
        source = update if "call_format" in update else self._values
        record.call_format = source.get("call_format")
        record.call_format_source = source.get("call_format_source")
        self.records.append(record)
        return [record]

    def _record(
        self,
        reply: AIMessage,
        raw: tuple[bool, BaseMessage, list[BaseMessage]] | None,
        dialect: str | None,
    ) -> ModelCallRecord:
        self._call += 1
        history: list[AnyMessage] = list(self._values.get("messages") or [])
        if self.system_prompt and not (history and isinstance(history[0], SystemMessage)):
            history.insert(0, SystemMessage(self.system_prompt))
        raw_output: str | dict[str, Any] | None = None
        processed_input: list[dict[str, Any]] = []
        if raw is not None:
            inner, message, sent = raw
            processed_input = convert_to_openai_messages(sent)  # type: ignore[assignment]
            plain = not getattr(message, "tool_calls", None) and not message.additional_kwargs.get(
                "reasoning_content"
            )
            # text is what a prompt dialect parses; anything richer stays a whole message
            raw_output = text_of(message.content) if inner and plain else message_dict(message)
        return ModelCallRecord(
            index=len(self.records) + 1,
            round=self._round,
            question=self._question,
            call=self._call,
            dialect=dialect,
            raw_input=[message_dict(m) for m in history],
            processed_input=processed_input,
            raw_output=raw_output,
            processed_output=message_dict(reply),
        )
