"""The dialect registry: every dialect's name, and :func:`get_dialect`.

The names are listed here once; the factory's type hints, the command line's choices and
the sets of prompt dialects all come from this list.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Literal, get_args

from .base import Dialect

__all__ = ["DIALECT_NAMES", "PROMPT_DIALECTS", "DialectName", "PromptDialectName", "get_dialect"]

#: The dialects a model can speak: native ``tools``, or one of the prompt formats.
DialectName = Literal["native", "hermes", "nous", "qwen", "react"]
#: The prompt dialects (every dialect but ``native``): what a thread can fall back to.
PromptDialectName = Literal["hermes", "nous", "qwen", "react"]

# name -> (module in this package, class); aliases point at the same entry
_DIALECTS: dict[str, tuple[str, str]] = {
    "native": ("native", "NativeDialect"),
    "hermes": ("hermes", "HermesDialect"),
    "nous": ("hermes", "HermesDialect"),
    "qwen": ("qwen", "QwenDialect"),
    "react": ("react", "ReActDialect"),
}

DIALECT_NAMES: tuple[str, ...] = get_args(DialectName)
PROMPT_DIALECTS: frozenset[str] = frozenset(get_args(PromptDialectName))


def get_dialect(name: str | Dialect, **options: Any) -> Dialect:
    """Return the dialect called ``name``, built with ``options``.

    Args:
        name: ``"hermes"`` (alias ``"nous"``), ``"qwen"``, ``"react"`` or ``"native"``;
            a :class:`Dialect` instance is returned as it is.
        **options: dialect options, e.g. ``lang="zh"`` and ``parallel=False`` for ``"qwen"``.

    Raises:
        ValueError: for an unknown name, listing the known ones.

    Example:
        >>> d = get_dialect("qwen", lang="zh")
        >>> d.stop
        ('✿RESULT✿', '✿RETURN✿')
    """
    if isinstance(name, Dialect):
        if options:
            raise ValueError("options apply to a dialect name, not to a Dialect instance")
        return name
    key = str(name).strip().lower()
    if key not in _DIALECTS:
        known = ", ".join(sorted(_DIALECTS))
        raise ValueError(f"unknown dialect {name!r}; known dialects: {known}")
    module, cls = _DIALECTS[key]
    # imported on first use: a dialect's module (and its grammar code) loads only when spoken
    return getattr(import_module(f"{__package__}.{module}"), cls)(**options)
