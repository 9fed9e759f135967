"""The savers' part in tool call claims (:mod:`.claims`): a thread deleted with its
claims, and the writes of a run that lost a claim refused (:class:`ClaimAware`)."""

from __future__ import annotations

from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig

from .claims import aforget_thread, forget_thread, lost_run

__all__ = []

T = TypeVar("T")


class ClaimAware:
    """What the product's savers add for tool call claims, which live in a table of
    their own beside the checkpoints:

    - ``delete_thread`` also deletes the thread's claims (and the results stored with
      them);
    - a graph run that lost a claim (:class:`~.claims.ToolCallTakenOver`: another run
      took its call over and the thread moved on) writes nothing more: each of its
      checkpoints and step writes is refused with that error, so its stale branch never
      becomes the thread's head (``durability="exit"`` saves at the end of a failed run).
    """

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)  # type: ignore[misc]
        forget_thread(self, thread_id)  # type: ignore[arg-type]

    async def adelete_thread(self, thread_id: str) -> None:
        await super().adelete_thread(thread_id)  # type: ignore[misc]
        await aforget_thread(self, thread_id)  # type: ignore[arg-type]

    def put(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> RunnableConfig:
        _refuse_lost(config)
        return super().put(config, *args, **kwargs)  # type: ignore[misc]

    async def aput(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> RunnableConfig:
        _refuse_lost(config)
        return await super().aput(config, *args, **kwargs)  # type: ignore[misc]

    def put_writes(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> None:
        _refuse_lost(config)
        super().put_writes(config, *args, **kwargs)  # type: ignore[misc]

    async def aput_writes(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> None:
        _refuse_lost(config)
        await super().aput_writes(config, *args, **kwargs)  # type: ignore[misc]


def _refuse_lost(config: RunnableConfig) -> None:
    lost = lost_run(config)
    if lost is not None:
        raise lost


_WITH_CLAIMS: dict[type, type] = {}


def with_claims(cls: type[T]) -> type[T]:
    """``cls`` (a LangGraph saver class), its ``delete_thread`` deleting claims too."""
    if cls not in _WITH_CLAIMS:
        _WITH_CLAIMS[cls] = type(cls.__name__, (ClaimAware, cls), {"__doc__": cls.__doc__})
    return _WITH_CLAIMS[cls]  # type: ignore[return-value]
