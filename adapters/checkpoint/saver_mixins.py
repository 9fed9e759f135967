"""A saver class with a behaviour added, made once per saver class, from the mixin for
its LangGraph family (SQLite or PostgreSQL, sync or async): what ``store_messages_once``
and ``keep_checkpoints`` each add to the saver they are given."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

__all__ = []

_FAMILIES = "(SqliteSaver, AsyncSqliteSaver, PostgresSaver, AsyncPostgresSaver)"


class SaverMixins:
    """Makes ``saver_cls`` with the mixin of its family, once per class.

    Args:
        option: the option's name, for the error a class of no known family gets.
        mixins: ``{qualified name of a LangGraph saver class: its mixin}``, the most
            specific first (an async saver's class before the sync one it may extend).
        made_of: ``(saver_cls, family's qualified name, mixin) -> the class``: where the
            mixin goes in the new class's bases.
    """

    def __init__(
        self,
        option: str,
        mixins: Mapping[str, type],
        made_of: Callable[[type, str, type], type],
    ) -> None:
        self.option, self.mixins, self.made_of = option, mixins, made_of
        self._made: dict[type, type] = {}
        self._lock = threading.Lock()

    def __call__(self, saver_cls: type) -> type:
        names = {c.__module__ + "." + c.__name__ for c in saver_cls.__mro__}
        with self._lock:
            made = self._made.get(saver_cls)
            if made is None:
                found = next(((q, m) for q, m in self.mixins.items() if q in names), None)
                if found is None:
                    raise TypeError(
                        f"{self.option}: {saver_cls.__name__} is not a LangGraph SQLite or "
                        f"PostgreSQL saver {_FAMILIES}"
                    )
                made = self._made[saver_cls] = self.made_of(saver_cls, *found)
            return made
