"""The dialect wrapper's own runs: one call made, read, and asked once more when a
demanded tool call is missing; or streamed, read chunk by chunk. The provider's run
is a child of the wrapper's, seen only by the handlers that ask to see it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForLLMRun,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.runnables.config import ensure_config, get_callback_manager_for_config
from langgraph.constants import TAG_NOSTREAM

from ..formats.base import text_of
from .model_call import SEES_WRAPPED_RUN, ModelCall
from .structured_output import ReplyWithoutCall

__all__ = []

# asked once more when a forcing tool_choice got an answer without a call
_INSIST = (
    "Answer with a call to one of the tools, written exactly in the format described "
    "above, and nothing else."
)


def run_call(call: ModelCall) -> AIMessage:
    """``call`` made and read; a forced call that did not come is asked for once more.

    Raises:
        ReplyWithoutCall: when the second reply holds no readable call either.
    """
    message = call.read(call.invoke(call.rendered))
    if call.forced and not message.tool_calls:
        message = call.read(call.invoke([*call.rendered, HumanMessage(_INSIST)]))
        _require_a_call(message)
    return message


async def arun_call(call: ModelCall) -> AIMessage:
    """As :func:`run_call`."""
    message = call.read(await call.ainvoke(call.rendered))
    if call.forced and not message.tool_calls:
        message = call.read(await call.ainvoke([*call.rendered, HumanMessage(_INSIST)]))
        _require_a_call(message)
    return message


def stream_call(call: ModelCall) -> Iterator[AIMessageChunk]:
    """``call`` streamed: the chunks of its reading, whose sum is the read reply."""
    state = call.reading()
    for piece in call.stream():
        if (chunk := state.feed(piece)) is not None:
            yield chunk
    yield state.close()


async def astream_call(call: ModelCall) -> AsyncIterator[AIMessageChunk]:
    """As :func:`stream_call`."""
    state = call.reading()
    async for piece in call.astream():
        if (chunk := state.feed(piece)) is not None:
            yield chunk
    yield state.close()


def _require_a_call(message: AIMessage) -> None:
    """A reply to a forcing ``tool_choice`` that still holds no call is an error, not ``None``."""
    if message.tool_calls:
        return
    text = text_of(message.content)
    why = "; ".join(str(c.get("error")) for c in message.invalid_tool_calls if c.get("error"))
    raise ReplyWithoutCall(
        "tool_choice demanded a tool call, and the model answered twice without a readable "
        f"one{f' ({why})' if why else ''}: {text[:200]!r}",
        reply=message,
    )


def child_callbacks(
    run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
) -> CallbackManager | AsyncCallbackManager:
    """Callbacks for the inner call: the handlers that ask to see it (``SEES_WRAPPED_RUN``),
    under this run, kept out of message streams."""
    if run_manager is None:
        # BaseChatModel.stream hands ``_stream`` no run manager: the caller's config's
        manager: CallbackManager | AsyncCallbackManager = get_callback_manager_for_config(
            ensure_config()
        )
        parent, handlers = manager.parent_run_id, manager.inheritable_handlers
        tags, metadata = manager.inheritable_tags, manager.inheritable_metadata
        cls: type[CallbackManager] | type[AsyncCallbackManager] = CallbackManager
    else:
        parent, handlers = run_manager.run_id, run_manager.inheritable_handlers
        tags, metadata = run_manager.inheritable_tags, run_manager.inheritable_metadata
        cls = (
            AsyncCallbackManager
            if isinstance(run_manager, AsyncCallbackManagerForLLMRun)
            else CallbackManager
        )
    manager = cls(handlers=[], parent_run_id=parent)
    manager.set_handlers([h for h in handlers if getattr(h, SEES_WRAPPED_RUN, False)])
    manager.add_tags(tags)
    manager.add_metadata(metadata)
    manager.add_tags([TAG_NOSTREAM], inherit=False)
    return manager
