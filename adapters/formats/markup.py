"""How a format describes its markup (:class:`Block`), and the markup several formats write.

Each format's own markers are defined once, with its reader (``readers/``) or its
dialect; markup that more than one format writes is defined here, and every table that
lists markers (the auto reader's, what ``neutralise`` breaks, what auto-detection looks
for) is made from those definitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["TOOL_CALL"]


@dataclass(frozen=True)
class Block:
    """A stretch of markup in a prompt dialect's output.

    Attributes:
        open: the marker that starts it (``"<tool_call>"``, ``"✿FUNCTION✿"``, ``"Action:"``).
        close: markers that end it; the end of output ends it too.
        kind: ``"call"`` (text read by the format's reader), ``"reasoning"``
            (streamed as reasoning) or ``"drop"`` (discarded, e.g. an invented observation).
        consume_close: ``False`` when the end marker also starts what follows
            (Qwen's next ``✿FUNCTION✿``, ReAct's ``Action:`` after a thought).
    """

    open: str
    close: tuple[str, ...]
    kind: Literal["call", "reasoning", "drop"]
    consume_close: bool = True


#: The ``<think>`` block Qwen3, QwQ, DeepSeek-R1 and most reasoning models write.
THINK = Block("<think>", ("</think>",), "reasoning")

#: The ``<tool_call>`` tag Hermes, Qwen2.5/3 and Qwen3-Coder, GLM and MiniMax-M3 write
#: calls in (JSON, ``<function=…>`` or ``<arg_key>`` pairs inside).
TOOL_CALL = Block("<tool_call>", ("</tool_call>",), "call")

#: ChatML's turn markers: a prompt rendered by any chat template may be read by them.
CHATML = ("<|im_start|>", "<|im_end|>")
#: The end-of-sequence token of Llama-2-style tokenizers (Mistral, GigaChat, …).
EOS = "</s>"
#: The call closer LFM2 and Kimi-K2 both write.
TOOL_CALL_END = "<|tool_call_end|>"
