"""Placements taken from public descriptions of tool-calling models, for bench/placements.py.

Each reply is built the way a public text places call markup: model cards' "Usage" and
"Sample output" sections, README snippets, chat templates' few-shot Input/Output pairs,
bug reports pasting logs and expected output, and model replies quoted in issues (a call
after a sentence, glued to Chinese or Japanese text, after a call the reply only quoted).
Each placement carries a human reader's judgement, written before it was run: MADE (the
model calls the tool: the calls listed must be read) or SHOWN (the markup is an example, a
log, a sample: nothing may run). ``{w}``/``{t}``: the weather/time call as the format
writes it; ``{b}``: both; ``{wi}``/``{ti}``: a call collapsed onto one line.

    python bench/placements.py --set public [--auto] [--stream] [--verbose]
"""

from __future__ import annotations

WEATHER = ("get_weather", {"city": "Paris"})
TIME = ("get_time", {"zone": "CET"})

#: (name, judgement, template, calls a MADE reply must read)
PUBLIC: list[tuple[str, str, str, tuple]] = [
    # ------------------------------------------------------------------- made
    (
        "'in the right format:'",
        "made",
        "I'll call get_weather in the right format:\n{w}",
        (WEATHER,),
    ),
    (
        "then 'This calls the tool for Paris'",
        "made",
        "Let me look that up.\n{w}\nThis calls the tool for Paris and returns the current conditions.",
        (WEATHER,),
    ),
    ("glued to Chinese", "made", "我来查询{w}", (WEATHER,)),
    ("glued to Japanese", "made", "天気を調べます{w}", (WEATHER,)),
    ("Chinese sentence, glued", "made", "好的，我需要先获取天气信息。{w}", (WEATHER,)),
    (
        "after a reason, same line",
        "made",
        "I need the current weather for Paris before I can answer. {w}",
        (WEATHER,),
    ),
    (
        "real call after an inline-quoted one",
        "made",
        "You asked how calls look: they are written like `{ti}`.\n\nNow the real lookup.\n{w}",
        (WEATHER,),
    ),
    (
        "real call after a fenced example",
        "made",
        "Here is how a call is written:\n```\n{t}\n```\nCalling it for you now.\n{w}",
        (WEATHER,),
    ),
    (
        "real call after a quoted sentence",
        "made",
        'You wrote "{ti}" in your message; that only shows the syntax.\n\nLet me check the weather.\n{w}',
        (WEATHER,),
    ),
    ("two calls after 'Checking both.'", "made", "Sure! Checking both.\n{b}", (WEATHER, TIME)),
    (
        "after reasoning that names the tag",
        "made",
        "<think>The user asks for Paris weather. I should emit a tool call for get_weather.</think>\n{w}",
        (WEATHER,),
    ),
    ("after 'Okay.' paragraph", "made", "Okay.\n\n{w}", (WEATHER,)),
    (
        "after a colon sentence, blank line",
        "made",
        "To answer, I first need the forecast:\n\n{w}",
        (WEATHER,),
    ),
    (
        "agent reply from a model card",
        "made",
        "The user wants to know the weather in Paris. I will use the get_weather tool.\n{w}",
        (WEATHER,),
    ),
    ("glued after '!'", "made", "Paris weather coming up!{w}", (WEATHER,)),
    ("glued after '…'", "made", "Checking now…{w}", (WEATHER,)),
    (
        "time then weather",
        "made",
        "I'll check the time first, then the weather.\n{t}\n{w}",
        (TIME, WEATHER),
    ),
    ("call then a remark", "made", "{w}\n\nI'll summarise once the result is in.", (WEATHER,)),
    # ------------------------------------------------------------------ shown
    ("'Sample output:' line", "shown", "Sample output:\n{w}", ()),
    ("'Sample output:' same line", "shown", "Sample output: {wi}", ()),
    ("model card 'Usage:'", "shown", "Usage:\n\n{w}", ()),
    (
        "'i.e.' mid-sentence",
        "shown",
        "The model signals a tool request, i.e. {wi}, and the server parses it.",
        (),
    ),
    (
        "few-shot Input/Output, same line",
        "shown",
        "Input: What's the weather in Paris?\nOutput: {wi}\n\nInput: What time is it in Berlin?\nOutput: {ti}",
        (),
    ),
    (
        "few-shot Input/Output, own lines",
        "shown",
        "Input:\nWhat's the weather in Paris?\nOutput:\n{w}",
        (),
    ),
    (
        "log line with timestamp",
        "shown",
        "2024-06-03 14:02:11,517 INFO server: raw completion={wi}",
        (),
    ),
    ("log line with level tag", "shown", "[DEBUG] model output: {wi}", ()),
    (
        "inside <details>",
        "shown",
        "<details>\n<summary>Raw model output</summary>\n\n{w}\n\n</details>",
        (),
    ),
    (
        "mid-sentence, no cue word",
        "shown",
        "When the model wants data it emits {wi} and waits for the result.",
        (),
    ),
    ("before '以上就是调用方式。'", "shown", "{w}\n以上就是调用方式。", ()),
    ("'如下：' then '以上就是调用方式。'", "shown", "调用方式如下：\n{w}\n以上就是调用方式。", ()),
    (
        "README 'responds with:' then prose",
        "shown",
        "Given this prompt, the model responds with:\n{w}\nand then waits for the tool's response.",
        (),
    ),
    ("few-shot User/Assistant", "shown", "User: What's the weather in Paris?\nAssistant: {wi}", ()),
    (
        "bug report expected/actual",
        "shown",
        "Expected output:\n{w}\nActual output: the same text, returned as content.",
        (),
    ),
    ("'The expected response is …'", "shown", "The expected response is {wi}.", ()),
    (
        "template description",
        "shown",
        "The template renders an assistant turn as follows:\n\n{w}\n\nEach call goes on its own line.",
        (),
    ),
    ("'Response:' label", "shown", "Response:\n{w}", ()),
    ("Japanese '出力例：'", "shown", "出力例：\n{w}", ()),
    ("README heading '### Example'", "shown", "### Example\n\n{w}", ()),
    ("HTML comment", "shown", "<!-- {wi} -->", ()),
    (
        "bug report, mid-sentence",
        "shown",
        "Parsing fails when the model emits {wi} followed by text.",
        (),
    ),
    ("'Output of `generate()`:'", "shown", "Output of `model.generate()`:\n{w}", ()),
]
