"""DeepSeek V3.2 / V4 / V4.1 DSML calls, and GigaChat 3.5's GCML, which copies them
(``｜`` is the fullwidth bar, U+FF5C).

::

    <｜DSML｜function_calls>                                                 V3.2
    <｜DSML｜invoke name="get_weather">
    <｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>
    <｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>
    </｜DSML｜invoke>
    </｜DSML｜function_calls>

V4 wraps the invokes in ``<｜DSML｜tool_calls>``; V4.1 writes every tag name with a
leading space (``<｜DSML｜ calls>``, ``<｜DSML｜ invoke name=…>``, ``<｜DSML｜ parameter …>``);
GigaChat 3.5 writes ``<｜GCML｜tool_calls>`` and ``<｜GCML｜invoke …>``.
``string="true"`` marks a value that is text as written; ``string="false"`` one written as
JSON. An invoke may hold a JSON object instead of parameters, or close itself (``/>``)
when it has none.

Engines: vLLM ``deepseekv32_tool_parser.py`` (index version 56cfb01b) and llama.cpp's
DeepSeek V3.2/V4 format (``common/chat.cpp``); not re-read for this caption.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..calls import ParseEvent, invalid
from ..markup import EOS, Block
from .base import FormatReader, named_call, text_args
from .deepseek import END_OF_SENTENCE

__all__ = []


@dataclass(frozen=True)
class InvokeFormat:
    """One ``<TOKENinvoke name=…>`` format: its token and the tags that wrap the invokes."""

    name: str
    token: str  # "｜DSML｜"
    wrappers: tuple[str, ...]  # the tag names of the block around the invokes
    examples: tuple[str, ...]
    #: how a parameter without ``string=`` is read: as text (GCML) or as JSON where it parses
    unmarked_is_text: bool = False
    drop_tokens: tuple[str, ...] = ()


def _example(token: str, wrapper: str, space: str, calls: list[tuple[str, str, str]]) -> str:
    t = f"<{token}{space}"
    return (
        f"<{token}{wrapper}>\n"
        + "".join(
            f'{t}invoke name="{n}">\n'
            f'{t}parameter name="{k}" string="true">{v}</{token}{space}parameter>\n'
            f"</{token}{space}invoke>\n"
            for n, k, v in calls
        )
        + f"</{token}{wrapper}>"
    )


#: DeepSeek's DSML token, and GigaChat 3.5's GCML copy of it
DSML, GCML = "｜DSML｜", "｜GCML｜"
_ONE = [("get_weather", "city", "杭州")]
_TWO = [("get_weather", "city", "Paris"), ("get_time", "zone", "CET")]

INVOKE_FORMATS: tuple[InvokeFormat, ...] = (
    InvokeFormat(
        "dsml",
        DSML,
        ("function_calls", "tool_calls", " calls"),  # V3.2, V4, V4.1
        examples=(
            _example(DSML, "function_calls", "", _ONE),
            _example(DSML, "tool_calls", "", _TWO),
            _example(DSML, " calls", " ", _TWO),
        ),
        drop_tokens=(END_OF_SENTENCE,),
    ),
    InvokeFormat(
        "gcml",
        GCML,
        ("tool_calls",),
        examples=(_example(GCML, "tool_calls", "", _ONE), _example(GCML, "tool_calls", "", _TWO)),
        unmarked_is_text=True,
        drop_tokens=(EOS,),
    ),
)


class InvokeReader(FormatReader):
    """All of :data:`INVOKE_FORMATS`, one block per wrapper tag."""

    def __init__(self, fmt: InvokeFormat) -> None:
        self.fmt = fmt
        blocks = tuple(
            Block(f"<{fmt.token}{w}>", (f"</{fmt.token}{w}>",), "call") for w in fmt.wrappers
        )
        super().__init__(
            fmt.name,
            blocks,
            drop_tokens=(*(b.close[0] for b in blocks), *fmt.drop_tokens),
            examples=fmt.examples,
        )
        t = re.escape(fmt.token)
        self._invoke = re.compile(
            rf'<{t} ?invoke\s+name="([^"]*)"\s*(?:/>|>(.*?)</{t} ?invoke>)', re.DOTALL
        )
        self._invoke_open = re.compile(rf"<{t} ?invoke\b")
        self._param = re.compile(
            rf'<{t} ?parameter\s+name="([^"]*)"(?:\s+string="(true|false)")?\s*>'
            rf"(.*?)</{t} ?parameter>",
            re.DOTALL,
        )
        self._param_open = re.compile(rf"<{t} ?parameter\b")

    def block_may_close(self, block: Block, text: str, marker: str) -> bool:
        return True  # values are text between tags, not JSON strings: a closer closes

    def read_block(self, block: Block, text: str, *, closed: bool) -> Iterable[ParseEvent]:
        return self._read(text, closed=closed, where=block.open)

    def _read(self, text: str, *, closed: bool, where: str) -> Iterator[ParseEvent]:
        invokes = list(self._invoke.finditer(text))
        opened = len(self._invoke_open.findall(text))
        if not opened:
            yield invalid(where + text, f"no invoke inside {where}")
            return
        text_by_default = "true" if self.fmt.unmarked_is_text else ""
        for match in invokes:
            name, body = match.group(1), match.group(2) or ""
            raw = match.group()
            if body.strip().startswith("{"):
                yield named_call(name, body.strip(), raw)
                continue
            params = self._param.findall(body)
            if len(params) < len(self._param_open.findall(body)):
                yield invalid(raw, f"a parameter of {name!r} is not closed", name=name or None)
                continue
            args, texts = text_args(
                (k, v) for k, string, v in params if (string or text_by_default) != "true"
            )
            args.update({k: v for k, string, v in params if (string or text_by_default) == "true"})
            args = {k: args[k] for k, _, _ in params}  # in the order written
            yield named_call(name, args, raw, texts=texts)
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
