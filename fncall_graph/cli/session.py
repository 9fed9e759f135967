"""A thread of questions and approvals, run through a graph and shown on the terminal."""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ToolMessage,
)

from fncall_graph.adapters.formats.base import text_of
from fncall_graph.graphs.factory import APPROVE, MODEL, TOOLS
from fncall_graph.guarantees import REPEAT_KEY
from fncall_graph.trace import ModelCallRecord, Tracer

from .approval import TerminalReview
from .resources import CLIError
from .terminal import UI, _first_line, reports_failure

__all__ = []


@dataclass
class Outcome:
    """How a turn ended."""

    answer: AIMessage | None
    stopped: str | None = None  # why there is no final answer


class Session:
    """Questions and approvals in one thread of a graph, shown through a :class:`UI`.

    Args:
        graph: a graph from :func:`~fncall_graph.create_fncall_graph`.
        thread_id: the thread.
        ui: where the session is shown.
        tracer: builds the four views of every model call, if tracing.
        trace_file: where each record goes as one JSON line, if given.
        show_trace: print each record on the UI.
        gated: the tools that ask before they run.
        toolkit: the MCP toolkit, for its prompts.
        unattended: no person answers approvals: gated calls are rejected (see
            :class:`~fncall_graph.cli.approval.TerminalReview`).
    """

    def __init__(
        self,
        graph: Any,
        thread_id: str,
        ui: UI,
        *,
        tracer: Tracer | None = None,
        trace_file: IO[str] | None = None,
        show_trace: bool = False,
        gated: Sequence[str] = (),
        toolkit: Any = None,
        unattended: bool = False,
    ) -> None:
        self.graph = graph
        self.toolkit = toolkit  # the MCP toolkit, for its prompts
        self.thread_id = thread_id
        self.ui = ui
        self.tracer = tracer
        self.trace_file = trace_file
        self.show_trace = show_trace
        self.gated = set(gated)
        self.review = TerminalReview(ui, thread_id, unattended=unattended)
        self.config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
        self._cancel = _CancelOnInterrupt()
        self.config["callbacks"] = [self._cancel]
        if tracer is not None:
            self.config["callbacks"].append(tracer.recorder)

    # -- public

    def ask(self, question: str) -> Outcome:
        """Ask ``question`` and run the turn to its end, approvals included."""
        if self.tracer is not None:
            self.tracer.start_round(question)
        return self._run({"messages": [("user", question)]})

    def open_with(self, prompt: str, arguments: str = "") -> Outcome:
        """Ask with an MCP prompt's messages: ``arguments`` as ``key=value`` words or JSON."""
        if self.toolkit is None:
            raise CLIError("no MCP servers, so no prompts (give --mcp CONFIG)")
        try:
            messages = self.toolkit.get_prompt(prompt, _prompt_arguments(arguments))
        except (KeyError, ValueError) as exc:
            raise CLIError(str(exc).strip("'\"")) from exc
        if self.tracer is not None:
            self.tracer.start_round(text_of(messages[-1].content) if messages else prompt)
        return self._run({"messages": messages})

    def pending(self) -> bool:
        """Whether the thread stopped before its end (an approval, or a crash)."""
        state = self.graph.get_state(self.config)
        # a turn stopped right after its input was saved shows no ``next`` node, only
        # the task that takes the input in; ``invoke(None)`` runs it
        return bool(state.next or state.tasks)

    def exists(self) -> bool:
        state = self.graph.get_state(self.config)
        return bool(state.values) or bool(state.next)

    def resume(self) -> Outcome:
        """Finish the turn the thread was in: answer its approvals, or run it on."""
        from langgraph.types import Command

        state = self.graph.get_state(self.config)
        messages = state.values.get("messages") or []
        question = _last_question(messages)
        if self.tracer is not None:
            self.tracer.start_round(question)
        # The turn began in another process: restate it, and put its calls on the board
        # so that their outcome is shown as it would have been then.
        self.ui.note("(resuming the turn this thread stopped in)")
        self.ui.heading(f"you> {question}")
        for call in _unanswered_calls(messages):
            self.ui.call_started(
                call.get("id") or "", call["name"], call["args"], waiting=bool(state.interrupts)
            )
        if not state.interrupts:
            return self._run(None)
        decision = self.review.decide(list(state.interrupts))
        self.ui.calls_resumed(self.review.rejected)
        return self._run(Command(resume=decision))

    def messages(self) -> list[BaseMessage]:
        return list(self.graph.get_state(self.config).values.get("messages") or [])

    # -- the stream

    def _run(self, payload: Any) -> Outcome:
        from langgraph.types import Command

        while True:
            interrupts = self._stream(payload)
            if not interrupts:
                break
            payload = Command(resume=self.review.decide(interrupts))
            self.ui.calls_resumed(self.review.rejected)
        self.ui.close()
        messages = self.messages()
        last = messages[-1] if messages else None
        if not isinstance(last, AIMessage) or last.tool_calls:
            return Outcome(None, "the turn ended without an answer")
        if last.additional_kwargs.get("fncall_stop_reason"):
            return Outcome(last, _first_line(str(last.content)))
        return Outcome(last)

    def _stream(self, payload: Any) -> list[Any]:
        interrupts: list[Any] = []
        modes = ["messages", "updates", "custom"]
        if self.tracer is not None:
            modes.append("values")
        self.ui.thinking()
        with self._cancel.armed():
            for mode, chunk in self.graph.stream(payload, self.config, stream_mode=modes):
                interrupts += self._chunk(mode, chunk)
        return interrupts

    def _chunk(self, mode: str, chunk: Any) -> list[Any]:
        """Show one item of the stream; returns the interrupts it carries."""
        if mode == "messages":
            message, meta = chunk
            if meta.get("langgraph_node") == MODEL and isinstance(
                message, AIMessageChunk | AIMessage
            ):
                self.ui.token(text_of(message.content))
            return []
        if mode == "custom":
            report = chunk.get("mcp_progress") if isinstance(chunk, Mapping) else None
            if report:  # an MCP server reports a running call's progress
                self.ui.call_progress(
                    report.get("tool_call_id") or "",
                    report.get("progress") or 0,
                    report.get("total"),
                    report.get("message"),
                )
            return []
        if self.tracer is not None:
            for record in self.tracer.feed(mode, chunk):
                self._record(record)
        if mode != "updates":
            return []
        self._updates(chunk)
        if TOOLS in chunk:  # the tools answered: the model is called next
            self.ui.thinking()
        return list(chunk.get("__interrupt__") or ())

    def _updates(self, chunk: Mapping[str, Any]) -> None:
        for node, update in chunk.items():
            if node.startswith("__") or not isinstance(update, Mapping):
                continue
            for message in update.get("messages") or []:
                if isinstance(message, AIMessage):
                    self.ui.end_answer()
                    # a reply with a gated call waits as a whole: nothing runs before the decision
                    waits = node == MODEL and any(
                        c["name"] in self.gated for c in message.tool_calls
                    )
                    for call in message.tool_calls:
                        self.ui.call_started(
                            call.get("id") or "", call["name"], call["args"], waiting=waits
                        )
                elif isinstance(message, ToolMessage):
                    text = text_of(message.content)
                    if node == APPROVE:
                        state, detail = "rejected", text
                    elif isinstance(message.artifact, dict) and REPEAT_KEY in message.artifact:
                        # the repeat guard answered it: not run, whatever its status
                        ended = message.artifact[REPEAT_KEY].get("ends_turn")
                        state = "repeated"
                        detail = _first_line(text) if ended else "not run again: earlier result"
                    elif message.status == "error" or reports_failure(text):
                        state, detail = "error", _first_line(text)
                    else:
                        state, detail = "done", ""
                    self.ui.call_finished(message.tool_call_id, state, detail)

    def _record(self, record: ModelCallRecord) -> None:
        if self.trace_file is not None:
            self.trace_file.write(record.to_json() + "\n")
            self.trace_file.flush()
        if self.show_trace:
            self.ui.trace(record)


class _TurnCancelled(Exception):
    """Ends the running model call or tool of a turn that Ctrl-C interrupted."""


class _QuietCancel(logging.Filter):
    """LangChain logs a warning for every callback that raises, even one that raises on
    purpose (``raise_error``): the cancel of an interrupted turn is not an error to show."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (len(args) == 3 and args[0] == _CancelOnInterrupt.__name__)


# the logger of langchain_core.callbacks.manager, which logs it
logging.getLogger("langchain_core.callbacks.manager").addFilter(_QuietCancel())


class _CancelOnInterrupt(BaseCallbackHandler):
    """Stops the work of a turn that Ctrl-C interrupted, at its next token or step.

    An interrupted LangGraph stream waits for its running node before it returns; a
    generation left running would hold the terminal (and the model server) until its
    end. Raising from the token callback ends the call and closes its request, so the
    server stops generating too.
    """

    raise_error = True
    run_inline = True
    # the wrapped model's own tokens: its generation stops at once, not at its end
    fncall_sees_wrapped_run = True  # SEES_WRAPPED_RUN

    def __init__(self) -> None:
        self.interrupted = threading.Event()

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """While the block runs, Ctrl-C also stops the turn's running work."""
        self.interrupted.clear()
        if threading.current_thread() is not threading.main_thread():
            yield  # signal handlers belong to the main thread
            return

        def on_sigint(signum: int, frame: Any) -> None:
            self.interrupted.set()
            signal.default_int_handler(signum, frame)

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _check(self) -> None:
        if self.interrupted.is_set():
            raise _TurnCancelled("the turn was interrupted")

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        self._check()

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self._check()

    def on_llm_start(self, serialized: Any, prompts: Any, **kwargs: Any) -> None:
        self._check()

    def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
        self._check()


def _prompt_arguments(text: str) -> dict[str, Any]:
    """``city=北京 days=3`` or ``{"city": "北京"}``: an MCP prompt's arguments."""
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CLIError(f"prompt arguments are not JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise CLIError("prompt arguments must be a JSON object")
        return value
    pairs = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep:
            raise CLIError(f"prompt argument {word!r}: write name=value")
        pairs[key] = value
    return pairs


def _unanswered_calls(messages: Sequence[BaseMessage]) -> list[Any]:
    """The calls of the last model reply that have no result yet."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return [c for c in message.tool_calls if c.get("id") not in answered]
    return []


def _last_question(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return text_of(message.content)
    return ""
