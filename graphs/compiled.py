"""The compiled graph ``create_fncall_graph`` returns: LangGraph's, with each run's checks.

Each run gets a token of its own (its tool-call claims remember it; a run that lost a
claim is refused its writes), holds its thread (one run at a time per thread, waiting or
refused as ``multitask`` says), and has its input and any ``Command(resume=...)`` checked
before it starts (an answer that answers nothing raises ``StaleApproval``).
"""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from fncall_graph._compat import CONFIG_KEY_CHECKPOINTER
from fncall_graph.adapters.checkpoint.claims import (
    DEFAULT_LEASE,
    LEASE_KEY,
    MULTITASK_KEY,
    RUN_KEY,
    athread_run,
    run_ended,
    thread_run,
)
from fncall_graph.guarantees import new_turn_guard, no_check, resume_guard

from .state import check_input

__all__ = []


class FncallGraph(CompiledStateGraph):
    """The compiled graph, with every ``Command(resume=...)`` checked against what is
    pending before it runs (see :func:`~fncall_graph.guarantees.resume_guard`): an
    answer that answers nothing raises :class:`~fncall_graph.StaleApproval`.

    ``invoke``, ``batch`` and ``stream_events`` go through ``stream``/``astream``.
    """

    #: the keys a run's input may hold: ``messages``, and a ``state_schema``'s own
    input_keys: frozenset[str] = frozenset({"messages"})
    #: the graph pauses for approvals: it needs a checkpointer, its own or its parent's
    pauses: bool = False

    @classmethod
    def of(
        cls,
        graph: CompiledStateGraph,
        *,
        input_keys: frozenset[str] | None = None,
        pauses: bool = False,
    ) -> FncallGraph:
        # as Pregel.copy does, into this class
        made = cls(**_fields(graph))
        made.input_keys = input_keys or cls.input_keys
        made.pauses = pauses
        return made

    def copy(self, update: dict[str, Any] | None = None) -> FncallGraph:
        """As ``Pregel.copy`` (``with_config`` makes one), keeping this class's settings."""
        made = type(self)(**{**_fields(self), **(update or {})})
        made.input_keys, made.pauses = self.input_keys, self.pauses
        return made

    def _resumes(self, input: Any, merged: RunnableConfig) -> bool:
        check_input(input, self.input_keys)
        # a subgraph (checkpointer=None) saves to its parent's: LangGraph passes it on
        inherited = (merged.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)
        if self.pauses and self.checkpointer in (None, False) and inherited is None:
            raise ValueError(
                "interrupt_on needs a checkpointer: the paused thread must be saved to be "
                "resumed with Command(resume=...). Pass checkpointer=InMemorySaver() or "
                "a saver from fncall_graph.adapters.checkpoint (sqlite_saver, "
                "postgres_saver), or add the graph as a node of a graph that has one."
            )
        return isinstance(input, Command) and input.resume is not None

    def _new_turn(self, input: Any, merged: RunnableConfig, owns: bool) -> bool:
        """Whether this outermost run brings new input (not an answer, not ``None``) to
        a saved thread of a graph that pauses: it is refused while a review waits
        (:func:`~fncall_graph.guarantees.new_turn_guard`), inside the thread's hold."""
        saved = self.checkpointer not in (None, True, False)
        thread = (merged.get("configurable") or {}).get("thread_id") is not None
        return self.pauses and owns and saved and thread and input is not None

    def _run_starts(
        self, config: RunnableConfig | None
    ) -> tuple[RunnableConfig, RunnableConfig, bool]:
        """The run's config with a token of its own (:data:`RUN_KEY`: the claims its tool
        calls make remember it, and a run that lost a claim is refused its writes), and
        its whole config; a durable saver is told the run starts (it forgets what
        earlier runs' failed writes left for the thread); and whether the token is this
        run's own (a run inside another keeps the outer run's)."""
        config = dict(config or {})  # type: ignore[assignment]
        configurable = dict(config.get("configurable") or {})
        owns = RUN_KEY not in configurable
        configurable.setdefault(RUN_KEY, uuid.uuid4().hex)
        config["configurable"] = configurable
        merged = merge_configs(self.config, config)
        starts = getattr(self.checkpointer, "run_starts", None)
        if starts is not None:
            starts(merged)
        return config, merged, owns

    @staticmethod
    def _latest(merged: RunnableConfig) -> RunnableConfig | None:
        """The config of the thread's latest checkpoint, when the run names a checkpoint
        (the one its client read); ``None`` otherwise (nothing to compare)."""
        conf = merged.get("configurable") or {}
        if not conf.get("checkpoint_id") or conf.get("thread_id") is None:
            return None
        keep = ("thread_id", "checkpoint_ns")
        return {"configurable": {k: conf[k] for k in keep if k in conf}}

    def _head(self, merged: RunnableConfig) -> str | None:
        latest = self._latest(merged)
        found = self.checkpointer.get_tuple(latest) if latest else None  # type: ignore[union-attr]
        return found.checkpoint["id"] if found else None

    async def _ahead(self, merged: RunnableConfig) -> str | None:
        latest = self._latest(merged)
        found = await self.checkpointer.aget_tuple(latest) if latest else None  # type: ignore[union-attr]
        return found.checkpoint["id"] if found else None

    def _hold_terms(self, merged: RunnableConfig, owns: bool) -> dict[str, Any] | None:
        """How an outermost run on a saved thread holds it (one run at a time per
        thread, :mod:`~fncall_graph.adapters.checkpoint.claims`); ``None``: no hold."""
        conf = merged.get("configurable") or {}
        saver = self.checkpointer
        if not owns or saver in (None, True, False) or conf.get("thread_id") is None:
            return None
        return {
            "saver": saver,
            "config": merged,
            "token": conf[RUN_KEY],
            "multitask": conf.get(MULTITASK_KEY, "enqueue"),
            "lease": conf.get(LEASE_KEY, DEFAULT_LEASE),
        }

    def _holding(self, merged: RunnableConfig, owns: bool) -> Any:
        terms = self._hold_terms(merged, owns)
        return thread_run(**terms) if terms else nullcontext()

    def _aholding(self, merged: RunnableConfig, owns: bool) -> Any:
        terms = self._hold_terms(merged, owns)
        return athread_run(**terms) if terms else nullcontext()

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        config, merged, owns = self._run_starts(config)
        try:
            with self._holding(merged, owns):
                if not self._resumes(input, merged):
                    if self._new_turn(input, merged, owns):
                        new_turn_guard(self.get_state(merged), config)
                    yield from super().stream(input, config, **kwargs)
                    return
                try:
                    state = self.get_state(merged)
                except ValueError:  # no checkpointer: LangGraph says so itself
                    state = None
                head = self._head(merged) if state else None
                run_config, after = (
                    resume_guard(state, input.resume, config, head=head)
                    if state
                    else (config, no_check)
                )
                yield from super().stream(input, run_config, **kwargs)
                after()
        finally:
            if owns:
                run_ended(config)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        config, merged, owns = self._run_starts(config)
        try:
            async with self._aholding(merged, owns):
                if not self._resumes(input, merged):
                    if self._new_turn(input, merged, owns):
                        new_turn_guard(await self.aget_state(merged), config)
                    async for chunk in super().astream(input, config, **kwargs):
                        yield chunk
                    return
                try:
                    state = await self.aget_state(merged)
                except ValueError:
                    state = None
                head = await self._ahead(merged) if state else None
                run_config, after = (
                    resume_guard(state, input.resume, config, head=head)
                    if state
                    else (config, no_check)
                )
                async for chunk in super().astream(input, run_config, **kwargs):
                    yield chunk
                after()
        finally:
            if owns:
                run_ended(config)


def _fields(graph: Any) -> dict[str, Any]:
    """What a compiled graph is made of (its constructor's arguments), as Pregel.copy reads it."""
    own = ("__orig_class__", "input_keys", "pauses")
    return {k: v for k, v in vars(graph).items() if k not in own}
