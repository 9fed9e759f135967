"""The few things LangGraph and LangChain have no public API for, in one place.

Each entry says what it is for and is checked by ``tests/house/test_compat.py``, which fails
loudly when a release moves or changes it. An import that breaks here breaks at import
time: nothing falls back silently to a different behaviour.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.tools import BaseTool, StructuredTool, Tool

# The test LangChain's chat models make to stream a call's tokens (``_should_stream``): a
# handler of this kind among the run's, as LangGraph's ``messages`` stream mode and
# ``astream_events`` attach. No public API says whether a run's tokens are watched.
from langchain_core.tracers._streaming import _StreamingCallbackHandler

# LangGraph reads a run's default durability from this config key when ``invoke`` gets
# no ``durability=``; ``compile()`` and ``with_config`` have no public setting for it.
from langgraph._internal._constants import CONFIG_KEY_DURABILITY

# The value a ``DeltaChannel`` saves in a checkpoint as its full copy, now and then: a
# saver that stores message lists once (``store_messages_once``) stores that copy's
# messages once too, and gives the copy back as it came.
from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot

# LangGraph's batch reducer for a ``DeltaChannel`` of messages (``add_messages``'s rules
# over a batch of writes, batching-invariant as the channel needs): the one LangGraph's
# own loop gives stable ids to before a write is saved (``ensure_message_ids``), so a
# message replayed from the thread's writes keeps its id. Exported with a leading
# underscore, as experimental.
from langgraph.graph.message import _messages_delta_reducer as messages_delta_reducer

if TYPE_CHECKING:
    # made on first use, below; to a type checker it is the ChatOpenAI it extends
    from langchain_openai import ChatOpenAI as ChatOpenAIMaxTokens

__all__ = [
    "CONFIG_KEY_CHECKPOINTER",
    "CONFIG_KEY_DURABILITY",
    "ChatOpenAIMaxTokens",
    "DeltaSnapshot",
    "answer_mcp1_request",
    "has_own_async",
    "messages_delta_reducer",
    "pause",
    "pause_all",
    "plain_answer",
    "resumed_by_id",
    "resumes_by_id",
    "run_tool_calls_here",
    "streams_tokens",
    "task_answers",
    "task_position",
    "validate_answer",
]


def streams_tokens(callbacks: Any) -> bool:
    """Whether a chat-model run started with ``callbacks`` (a config's ``callbacks``: a
    manager, a list or ``None``) has its tokens watched: LangChain's own test for
    streaming a call (a ``_StreamingCallbackHandler`` among the handlers)."""
    handlers = callbacks.handlers if isinstance(callbacks, BaseCallbackManager) else callbacks
    return any(isinstance(h, _StreamingCallbackHandler) for h in handlers or ())


def has_own_async(tool: BaseTool) -> bool:
    """Whether ``tool`` has an async implementation of its own.

    ``BaseTool.ainvoke`` of a sync-only tool runs it in the event loop's default
    executor, where a call that hangs would hold up the loop's shutdown; the tools node
    runs such tools in threads of its own when they have a timeout. LangChain has no
    public flag for it: ``StructuredTool``/``Tool`` keep ``coroutine``, other tools
    override ``_arun``.
    """
    if isinstance(tool, StructuredTool | Tool):
        return tool.coroutine is not None
    return type(tool)._arun is not BaseTool._arun


def _chat_openai_max_tokens() -> type:
    # langchain-openai (and the openai client under it) takes a second or more to import:
    # the class is made when first asked for, not when this module loads.
    from langchain_openai import ChatOpenAI

    class ChatOpenAIMaxTokens(ChatOpenAI):
        """``ChatOpenAI`` that sends a token limit as ``max_tokens``.

        langchain-openai sends it as ``max_completion_tokens`` (OpenAI's name since 2024);
        llama.cpp's and other OpenAI-compatible servers read only ``max_tokens``. The
        request payload has no public hook, so the one private method is overridden here.
        """

        __qualname__ = "ChatOpenAIMaxTokens"

        def _get_request_payload(
            self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any
        ) -> dict:
            payload = super()._get_request_payload(input_, stop=stop, **kwargs)
            if "max_completion_tokens" in payload:
                payload["max_tokens"] = payload.pop("max_completion_tokens")
            return payload

    return ChatOpenAIMaxTokens


_made = threading.Lock()  # one class, even when two threads ask for it first at once


def __getattr__(name: str) -> Any:
    if name == "ChatOpenAIMaxTokens":
        with _made:
            if name not in globals():
                globals()[name] = _chat_openai_max_tokens()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The checkpointer a running graph saves to: the compiled graph's own, or the one a
# LangGraph server gives it at run time. Nodes read it from their config under this key.
# A run resumed with ``Command(resume={interrupt_id: value, ...})`` carries that map in its
# tasks' config under CONFIG_KEY_RESUME_MAP; LangGraph hands each value to the interrupt
# of that id only.
from langgraph._internal._constants import (  # noqa: E402
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_RESUME_MAP,
)

# The id LangGraph gives a task's interrupt number ``n`` (0, 1, ... in call order), and
# the exception ``interrupt`` raises to pause a task (its docs: never raised directly).
from langgraph.errors import GraphInterrupt  # noqa: E402
from langgraph.types import Interrupt, _interrupt_id  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402


def resumes_by_id(config: Any) -> bool:
    """Whether the run of the task ``config`` belongs to answers interrupts by id
    (``Command(resume={interrupt.id: value, ...})``). Such a run sends no answer without
    an id: one that an interrupt would get all the same was left at the checkpoint by an
    earlier run."""
    return bool(((config or {}).get("configurable") or {}).get(CONFIG_KEY_RESUME_MAP))


def pause(config: Any, value: Any, index: int, response_schema: Any) -> NoReturn:
    """Pause the task ``config`` belongs to at its interrupt number ``index``, as
    ``interrupt(value, response_schema=...)`` does when no answer is given, but without
    taking an answer without an id that waits at the checkpoint (``interrupt`` would take
    it: LangGraph hands such an answer to whichever interrupt asks next). The interrupts
    before ``index`` must have taken their answers."""
    pause_all(config, [(value, index, response_schema)], [])


def resumed_by_id(config: Any, index: int = 0) -> bool:
    """Whether the run of the task ``config`` belongs to answers the task's interrupt
    number ``index`` by that interrupt's id (``Command(resume={interrupt.id: value})``):
    that value reaches that interrupt only. Any other answer an interrupt gets is the
    run's (or an earlier run's) answer without an id."""
    configurable = (config or {}).get("configurable") or {}
    answers = configurable.get(CONFIG_KEY_RESUME_MAP)
    task_ns = configurable.get("checkpoint_ns")
    return bool(answers) and task_ns is not None and _interrupt_id(task_ns, index) in answers


# Several interrupts of one task pending at once. ``interrupt`` raises one at a time;
# LangGraph keeps the answers a task has taken as one list (a ``RESUME`` write sent through
# CONFIG_KEY_SEND, read back as its scratchpad's ``resume``: item ``n`` answers interrupt
# number ``n``) and hands out a run's answer without an id through the scratchpad's
# ``get_null_resume``; a ``GraphInterrupt`` may carry several interrupts.
from langgraph._internal._constants import (  # noqa: E402
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SEND,
    RESUME,
)
from langgraph.types import _validate_resume  # noqa: E402


def task_answers(config: Any, count: int) -> tuple[list[Any], dict[int, Any]]:
    """The answers the task ``config`` belongs to has for its interrupts ``0 .. count-1``:
    those saved with the task by earlier runs (a list, ``None`` where none was), and
    those this run brings by interrupt id (``Command(resume={interrupt.id: value})``),
    by interrupt number.

    LangGraph itself adds one answer of the run to the saved ones (the one for the
    interrupt after them); it is left out of the first list, and is in the second."""
    configurable = (config or {}).get("configurable") or {}
    scratchpad = configurable[CONFIG_KEY_SCRATCHPAD]
    task_ns = configurable["checkpoint_ns"]
    answers = configurable.get(CONFIG_KEY_RESUME_MAP) or {}
    brought = {
        n: answers[_interrupt_id(task_ns, n)]
        for n in range(count)
        if _interrupt_id(task_ns, n) in answers
    }
    # the run's own values are the map's objects; saved ones were read from the checkpoint
    mine = {id(v) for v in answers.values()}
    saved = [None if id(v) in mine else v for v in scratchpad.resume[:count]]
    return saved + [None] * (count - len(saved)), brought


def plain_answer(config: Any) -> Any:
    """The answer without an interrupt id the run of the task ``config`` belongs to
    brought (``Command(resume=value)``), taken so no other interrupt takes it; ``None``:
    none. An earlier run's answer that no interrupt took may wait there too: a run that
    answers by id must not read it (see :func:`resumes_by_id`)."""
    configurable = (config or {}).get("configurable") or {}
    return configurable[CONFIG_KEY_SCRATCHPAD].get_null_resume(True)


def validate_answer(response_schema: Any, value: Any) -> Any:
    """``value`` checked against ``response_schema`` as ``interrupt`` checks an answer: a
    ``pydantic.ValidationError`` marked as an invalid answer (LangGraph and ``ToolNode``
    then save nothing and let it through, so the interrupt can be answered again)."""
    return _validate_resume(TypeAdapter(response_schema), value)


def pause_all(
    config: Any, asks: Sequence[tuple[Any, int, Any]], answers: Sequence[Any]
) -> NoReturn:
    """Pause the task ``config`` belongs to at several interrupts at once, each
    ``(value, index, response_schema)`` raised as ``interrupt`` raises its interrupt
    number ``index`` (the same id, so ``Command(resume={interrupt.id: ...})`` answers
    it), after saving ``answers`` with the task (item ``n`` the answer to interrupt
    ``n``, ``None`` for one still asked): :func:`task_answers` reads them back."""
    configurable = (config or {}).get("configurable") or {}
    task_ns = configurable["checkpoint_ns"]
    saved = list(answers)
    if any(a is not None for a in saved):
        configurable[CONFIG_KEY_SCRATCHPAD].resume[:] = saved
        configurable[CONFIG_KEY_SEND]([(RESUME, saved)])
    raise GraphInterrupt(
        tuple(
            Interrupt(
                value,
                _interrupt_id(task_ns, index),
                response_schema=TypeAdapter(schema).json_schema(),
            )
            for value, index, schema in asks
        )
    )


def task_position(config: Any) -> tuple[str, str, str] | None:
    """Where a node's task runs: (thread id, the graph's namespace, the id of the
    checkpoint its step runs from), or ``None`` outside a thread.

    LangGraph gives each task ``checkpoint_ns`` = ``<graph ns>|<node>:<task id>`` (no
    graph ns at the root) and ``checkpoint_map`` = graph ns → the step's checkpoint id.
    """
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    task_ns = configurable.get("checkpoint_ns")
    steps = configurable.get("checkpoint_map") or {}
    if thread_id is None or task_ns is None:
        return None
    namespace = task_ns.rpartition("|")[0]
    step = steps.get(namespace)
    if step is None:
        return None
    return str(thread_id), namespace, str(step)


async def answer_mcp1_request(session: Any, request_id: int | str, error: Any) -> bool:
    """Answer the request an mcp 1.x ``ClientSession`` waits on under ``request_id`` with
    ``error`` (an ``ErrorData``), as if its server had; ``False`` when none waits.

    A response the SDK's transport cannot validate (a ``result`` that is not an object,
    which MCP forbids) never reaches its request: the session hands only the validation
    error to its message handler, and the request waits out its timeout. mcp 1.x has no
    public way to answer a pending request (mcp 2.x's client lets its read stream be
    wrapped instead); its pending requests are the session's ``_response_streams``.
    """
    from mcp.types import JSONRPCError

    if isinstance(request_id, str) and request_id.isdigit():
        request_id = int(request_id)  # the SDK sends integer ids; a server may echo text
    stream = session._response_streams.get(request_id)
    if stream is None:
        return False
    await stream.send(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
    return True


# ToolNode's one-call path (``_func`` without its thread pool): ``ToolNode.invoke`` runs
# every call in a thread pool it makes per invoke (a thread started per call); a caller
# that runs the call in a thread of its own anyway (the tools node's sync chain, for its
# timeout) would otherwise hand each call over twice. The pieces are ToolNode's own.
from langchain_core.runnables.config import get_config_list  # noqa: E402
from langgraph._internal._constants import CONF, CONFIG_KEY_RUNTIME  # noqa: E402
from langgraph.prebuilt.tool_node import ToolNode, ToolRuntime  # noqa: E402


def run_tool_calls_here(node: ToolNode, input: Any, config: Any) -> Any:
    """``node.invoke(input, config)`` with its calls run one after another in the
    caller's thread, as ToolNode runs them in its pool: each with its ``ToolRuntime``,
    through ``wrap_tool_call``, the outputs combined as ``invoke`` combines them."""
    runtime = (config.get(CONF) or {}).get(CONFIG_KEY_RUNTIME)
    if runtime is None:  # outside a graph's task: ToolNode says what is missing
        return node.invoke(input, config)
    calls, input_type = node._parse_input(input)
    outputs = []
    for call, cfg in zip(calls, get_config_list(config, len(calls)), strict=True):
        tool_runtime = ToolRuntime(
            state=node._extract_state(input, cfg),
            tool_call_id=call["id"],
            config=cfg,
            context=runtime.context,
            store=runtime.store,
            stream_writer=runtime.stream_writer,
            tools=list(node.tools_by_name.values()),
            execution_info=runtime.execution_info,
            server_info=runtime.server_info,
        )
        outputs.append(node._run_one(call, input_type, tool_runtime))
    return node._combine_tool_outputs(outputs, input_type)
