"""What a chat model can do at the tool boundary, asked once where a graph or a command starts.

- :func:`supports_native_tools`: it takes tools through ``bind_tools``;
- :func:`declared_dialect`: it names the dialect it speaks (a recording, the bundled model);
- :func:`accepts_grammar`: its server applies a GBNF ``grammar`` (llama.cpp);
- :func:`initial_dialect`: the dialect a new thread starts in, from the above.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from ..formats.base import Dialect
from ..formats.registry import get_dialect

__all__ = []


def supports_native_tools(model: BaseChatModel) -> bool:
    """Whether ``model`` overrides ``bind_tools`` (the base class only raises)."""
    return type(model).bind_tools is not BaseChatModel.bind_tools


def declared_dialect(model: BaseChatModel) -> str | None:
    """The dialect a model names for itself: a recording's own, or the bundled model's."""
    name = getattr(model, "dialect", None)
    return name if isinstance(name, str) and name else None


def accepts_grammar(model: BaseChatModel) -> bool:
    """Whether ``model`` declares that its server applies a GBNF ``grammar`` (``local`` does)."""
    return getattr(model, "accepts_grammar", False) is True


def initial_dialect(
    model: BaseChatModel, dialect: str | Dialect = "auto", fallback: str | Dialect = "react"
) -> Dialect:
    """The dialect a new thread starts in: ``dialect``, or for ``"auto"`` the one the model
    declares, else native when it binds tools, else ``fallback``."""
    if not (isinstance(dialect, str) and dialect == "auto"):
        return get_dialect(dialect)
    declared = declared_dialect(model)
    if declared is not None:
        return get_dialect(declared)
    return get_dialect("native") if supports_native_tools(model) else get_dialect(fallback)
