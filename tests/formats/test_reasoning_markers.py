"""Each family's thinking markers are reasoning, never answer text and never calls; a
stray ``</think>`` does not swallow the answer or a call."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from fncall_graph.adapters import normalize

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'

# (opener, closer) of each family's thought, as the prompt may open it
THOUGHTS = {
    "think": ("<think>", "</think>"),
    "seed-oss": ("<seed:think>", "</seed:think>"),
    "mistral": ("[THINK]", "[/THINK]"),
    "kimi-k3": ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
    "gemma4": ("<|channel>thought", "<channel|>"),
    "plamo3": ("<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>"),
    "apertus": ("<|inner_prefix|>", "<|inner_suffix|>"),
    "hunyuan-labelled": ("<think:opensource>", "</think:opensource>"),
}


def _read(text: str) -> tuple[str, str, list[tuple[str, dict]]]:
    msg = normalize(AIMessage(text), None)
    calls = [(c["name"], c["args"]) for c in msg.tool_calls]
    return str(msg.content), msg.additional_kwargs.get("reasoning_content", ""), calls


@pytest.mark.parametrize("family", sorted(THOUGHTS))
def test_a_thought_the_prompt_opened_is_reasoning(family: str) -> None:
    _, closer = THOUGHTS[family]
    content, reasoning, calls = _read(f"The user wants the weather.{closer}It is sunny.")
    assert (content, reasoning, calls) == ("It is sunny.", "The user wants the weather.", [])
    content, reasoning, calls = _read(f"Look it up.{closer}\n{CALL}")
    assert (content, reasoning) == ("", "Look it up.")
    assert calls == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("family", sorted(THOUGHTS))
def test_a_call_written_while_thinking_does_not_run(family: str) -> None:
    opener, closer = THOUGHTS[family]
    content, reasoning, calls = _read(f"{opener}maybe\n{CALL}\nno.{closer}It is sunny.")
    assert calls == [] and content == "It is sunny."
    assert "maybe" in reasoning and "It is sunny." not in reasoning


def test_a_stray_think_closer_swallows_neither_the_answer_nor_a_call() -> None:
    # inside a call's arguments
    text = '<tool_call>\n{"name": "note", "arguments": {"text": "a </think> b"}}\n</tool_call>'
    assert _read(text) == ("", "", [("note", {"text": "a </think> b"})])
    # after the answer, or after a call
    assert _read("<think>r</think>Answer.</think>") == ("Answer.", "r", [])
    content, reasoning, calls = _read(f"<think>r</think>\n{CALL}\n</think>")
    assert (content, reasoning, calls) == ("", "r", [("get_weather", {"city": "Paris"})])
    content, reasoning, calls = _read(f"{CALL}\nDone.</think>")
    assert (content, reasoning, calls) == ("Done.", "", [("get_weather", {"city": "Paris"})])


def test_a_channel_message_ended_is_not_a_thought() -> None:
    # harmony ends every message with <|end|>: the final answer is no thought
    content, reasoning, _ = _read("<|channel|>final<|message|>It is sunny.<|end|>")
    assert content == "It is sunny." and not reasoning
