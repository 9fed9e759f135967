"""DeepSeek V3.2 / V4 / V4.1 DSML calls (``｜`` is the fullwidth bar, U+FF5C).

::

    <｜DSML｜function_calls>                                                 V3.2
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

V4 wraps the invokes in ``<｜DSML｜tool_calls>``; V4.1 writes every tag name with a
leading space (``<｜DSML｜ calls>``, ``<｜DSML｜ invoke name=…>``, ``<｜DSML｜ parameter …>``).
``string="true"`` marks a value that is text as written; ``string="false"`` one written as
JSON. An invoke may hold a JSON object instead of parameters, or close itself (``/>``)
when it has none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import ClassVar

from ..base import Block, ParseEvent, invalid
from .base import Reader, json_value, named_call

__all__ = ["DsmlReader"]

DSML = "｜DSML｜"
_WRAPPERS = ("function_calls", "tool_calls", " calls")  # V3.2, V4, V4.1

_INVOKE = re.compile(
    rf'<{DSML} ?invoke\s+name="([^"]*)"\s*(?:/>|>(.*?)</{DSML} ?invoke>)', re.DOTALL
)
_INVOKE_OPEN = re.compile(rf"<{DSML} ?invoke\b")
_PARAM = re.compile(
    rf'<{DSML} ?parameter\s+name="([^"]*)"(?:\s+string="(true|false)")?\s*>'
    rf"(.*?)</{DSML} ?parameter>",
    re.DOTALL,
)
_PARAM_OPEN = re.compile(rf"<{DSML} ?parameter\b")


def read_dsml(text: str, *, closed: bool, where: str) -> Iterator[ParseEvent]:
    """Read the invokes inside one DSML calls block."""
    invokes = list(_INVOKE.finditer(text))
    opened = len(_INVOKE_OPEN.findall(text))
    if not opened:
        yield invalid(where + text, f"no invoke inside {where}")
        return
    for match in invokes:
        name, body = match.group(1), match.group(2) or ""
        raw = match.group()
        if body.strip().startswith("{"):
            yield named_call(name, body.strip(), raw)
            continue
        params = _PARAM.findall(body)
        if len(params) < len(_PARAM_OPEN.findall(body)):
            yield invalid(raw, f"a parameter of {name!r} is not closed", name=name or None)
            continue
        args = {k: v if string == "true" else json_value(v) for k, string, v in params}
        yield named_call(name, args, raw)
    if opened > len(invokes):
        tail = text[invokes[-1].end() :] if invokes else text
        name = re.search(r'name="([^"]*)"', tail)
        yield invalid(
            tail,
            "the reply ended inside an invoke; the call was not run"
            if not closed
            else "an invoke is not closed",
            name=name.group(1) if name else None,
        )


class DsmlReader(Reader):
    name: ClassVar[str] = "dsml"
    blocks: ClassVar[tuple[Block, ...]] = tuple(
        Block(f"<{DSML}{w}>", (f"</{DSML}{w}>",), "call") for w in _WRAPPERS
    )
    drop_tokens: ClassVar[tuple[str, ...]] = (
        *(f"</{DSML}{w}>" for w in _WRAPPERS),
        "<｜end▁of▁sentence｜>",
    )
    examples: ClassVar[tuple[str, ...]] = (
        f"<{DSML}function_calls>\n"
        f'<{DSML}invoke name="get_weather">\n'
        f'<{DSML}parameter name="city" string="true">杭州</{DSML}parameter>\n'
        f'<{DSML}parameter name="days" string="false">3</{DSML}parameter>\n'
        f"</{DSML}invoke>\n"
        f"</{DSML}function_calls>",
        f"<{DSML}tool_calls>\n"
        f'<{DSML}invoke name="get_weather">\n'
        f'<{DSML}parameter name="city" string="true">Paris</{DSML}parameter>\n'
        f"</{DSML}invoke>\n"
        f'<{DSML}invoke name="get_time">\n'
        f'<{DSML}parameter name="zone" string="true">CET</{DSML}parameter>\n'
        f"</{DSML}invoke>\n"
        f"</{DSML}tool_calls>",
        f"<{DSML} calls>\n"
        f'<{DSML} invoke name="get_weather">\n'
        f'<{DSML} parameter name="city" string="true">Paris</{DSML} parameter>\n'
        f"</{DSML} invoke>\n"
        f"</{DSML} calls>",
    )

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return read_dsml(text, closed=closed, where=block.open)
