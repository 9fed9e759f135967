"""The options ``create_fncall_graph`` and the agent middleware take, one rule each.

Each option has one rule here (:func:`check_option`), which the graph's
:class:`GraphOptions` and the middleware that take the same option
(``DialectMiddleware``'s ``fallback``, ``call_format`` and ``max_calls_per_reply``,
``AtMostOnceMiddleware``'s ``idempotent_tools`` and ``lease``,
``BoundApprovalMiddleware``'s ``interrupt_on`` and ``interrupt_mode``) all call: a bad
value is refused with the same words wherever it is given, naming the argument.

Example:
    >>> check_option("max_iterations", 0)
    Traceback (most recent call last):
    ...
    ValueError: max_iterations must be at least 1, got 0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from fncall_graph.adapters import Dialect, get_dialect
from fncall_graph.adapters.models.call_format import check_call_format

if TYPE_CHECKING:
    from fncall_graph.adapters.checkpoint.claims import Multitask

    from .approvals import InterruptMode

__all__ = []


def _at_least_one(name: str, value: Any, *, none_ok: bool = False) -> Any:
    if value is None and none_ok:
        return None
    try:
        small = value < 1
    except TypeError:  # no number at all
        small = True
    if small:
        raise ValueError(f"{name} must be at least 1{' or None' if none_ok else ''}, got {value}")
    return value


def _at_least_one_or_none(name: str, value: Any) -> Any:
    return _at_least_one(name, value, none_ok=True)


def _positive_seconds(name: str, value: Any) -> Any:
    if value is None:
        return None
    try:
        positive = value > 0
    except TypeError:
        positive = False
    if not positive:
        raise ValueError(f"{name} must be positive seconds or None, got {value!r}")
    return value


def _one_of(*choices: Any) -> Callable[[str, Any], Any]:
    said = [repr(c) for c in choices]
    listed = f"{', '.join(said[:-1])} or {said[-1]}"

    def rule(name: str, value: Any) -> Any:
        if value not in choices:
            raise ValueError(f"{name} must be {listed}, got {value!r}")
        return value

    return rule


def _prompt_fallback(name: str, value: Any) -> Dialect:
    dialect = get_dialect(value)
    if dialect.native:
        raise ValueError(
            f"{name} must be a prompt dialect (hermes, qwen or react), got {dialect.name!r}"
        )
    return dialect


def _tool_names(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):  # read as a list, it would be its letters
        raise TypeError(f"{name} must be a list of tool names, got the string {value!r}")
    return tuple(value)


def _review_configs(name: str, value: Any) -> Any:
    # each config's keys and decisions are normalize_interrupt_on's to check
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name} must be a dict of tool name -> True, False or "
            f"{{'allowed_decisions': [...]}}; got {type(value).__name__}"
        )
    return value


def _call_format(name: str, value: Any) -> str | None:
    return None if value is None else check_call_format(value, name)


#: each option's rule: ``(name, value) -> the value to use``, raising when it is refused
_RULES: dict[str, Callable[[str, Any], Any]] = {
    "fallback": _prompt_fallback,
    "call_format": _call_format,
    "interrupt_on": _review_configs,
    "interrupt_mode": _one_of("batched", "per_call"),
    "durability": _one_of("sync", "async", "exit"),
    "max_iterations": _at_least_one,
    "max_repeats": _at_least_one_or_none,
    "max_calls_per_reply": _at_least_one_or_none,
    "max_concurrency": _at_least_one,
    "tool_timeout": _positive_seconds,
    "max_result_chars": _at_least_one_or_none,
    "max_stored_result_chars": _at_least_one_or_none,
    "idempotent_tools": _tool_names,
    "lease": _positive_seconds,
    "multitask": _one_of("enqueue", "reject"),
    "constrained": _one_of(None, True, False, "first_call"),
}


def check_option(name: str, value: Any) -> Any:
    """``value`` for the option ``name``, checked by that option's one rule, as it is
    used: ``fallback`` as its :class:`~fncall_graph.adapters.Dialect`, ``call_format``
    as the format's own name, ``idempotent_tools`` as a tuple; any other as it is.

    The rules: ``max_iterations`` and ``max_concurrency`` at least 1;
    ``max_repeats``, ``max_calls_per_reply``, ``max_result_chars`` and
    ``max_stored_result_chars`` at least 1 or ``None``; ``tool_timeout`` and ``lease``
    positive seconds or ``None``; ``multitask``, ``durability``, ``constrained`` and
    ``interrupt_mode`` one of their values; ``fallback`` a prompt dialect;
    ``call_format`` a known format or model family; ``idempotent_tools`` a list of
    names (not a string); ``interrupt_on`` a mapping of tool names (each config is
    :func:`~fncall_graph.guarantees.normalize_interrupt_on`'s to check).

    Args:
        name: the option, as the argument is called.
        value: the value given.

    Raises:
        ValueError: a value the rule refuses, naming the argument and what it takes.
        TypeError: a value of the wrong kind (``idempotent_tools`` as a string,
            ``interrupt_on`` that is no mapping).
        KeyError: an option that has no rule here.

    Example:
        >>> check_option("lease", 0)
        Traceback (most recent call last):
        ...
        ValueError: lease must be positive seconds or None, got 0
        >>> check_option("fallback", "hermes").name
        'hermes'
    """
    return _RULES[name](name, value)


@dataclass(frozen=True, kw_only=True)
class GraphOptions:
    """``create_fncall_graph``'s checked options (its docstring says what each means),
    each field checked by :func:`check_option` once, when built, and kept as used
    (``fallback`` a :class:`~fncall_graph.adapters.Dialect`).

    Besides each field's own rule: ``interrupt_on`` may also be ``None`` or
    ``"annotations"``, and it needs a checkpointer (``checkpointer=False`` refuses it).

    Raises:
        ValueError, TypeError: as :func:`check_option` says, naming the argument.

    Example:
        >>> from fncall_graph import create_fncall_graph
        >>> from fncall_graph.replay import ReplayChatModel
        >>> create_fncall_graph(ReplayChatModel(["hi"]), [], multitask="later")
        Traceback (most recent call last):
        ...
        ValueError: multitask must be 'enqueue' or 'reject', got 'later'
    """

    max_iterations: int
    max_repeats: int | None
    max_calls_per_reply: int | None
    max_concurrency: int
    max_result_chars: int | None
    max_stored_result_chars: int | None
    multitask: Multitask
    lease: float | None
    tool_timeout: float | None
    constrained: bool | Literal["first_call"] | None
    durability: Literal["sync", "async", "exit"]
    interrupt_mode: InterruptMode
    interrupt_on: Mapping[str, Any] | Literal["annotations"] | None
    idempotent_tools: Sequence[str]
    fallback: Dialect | str
    call_format: str | None
    checkpointer: Any

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name == "checkpointer" or (
                field.name == "interrupt_on" and value in (None, "annotations")
            ):
                continue
            if field.name == "interrupt_on" and isinstance(value, str):
                raise ValueError(
                    f"interrupt_on must be a mapping of tool names or 'annotations', got {value!r}"
                )
            # frozen: each value is set once, as its rule gives it back
            object.__setattr__(self, field.name, check_option(field.name, value))
        if self.interrupt_on and self.checkpointer is False:
            raise ValueError(
                "interrupt_on needs a checkpointer: the paused thread must be saved to be "
                "resumed with Command(resume=...); checkpointer=False refuses even a parent "
                "graph's. Pass checkpointer=None inside a graph that has one, or a saver."
            )

    @property
    def saves(self) -> bool:
        """Whether the graph saves threads to a checkpointer of its own."""
        return self.checkpointer is not None and self.checkpointer is not False
