"""Stream parsing vs one-shot parsing, for every prompt dialect.

For replies of about 2k, 20k and 200k characters (one call per 1,000 characters, prose
between calls), prints the median time of feeding the reply to a dialect's stream parser
in random chunks, divided by the median time of the same scanner fed the whole reply as
one chunk (what ``parse`` reads markup with), so the ratio is the cost of chunking; it
should stay flat as replies grow (no work proportional to what came before). Garbage
collection is held off while timing, as ``timeit`` does, so a collection triggered by
other objects in the process is not charged to whichever parse happens to be running.

It then prints what reading an unknown format costs (``normalize(message, None)`` and a
native reply's stream): a 20k-character Hermes reply streamed through auto-detection,
which looks for every known format's markers at once, divided by the Hermes-only reader
(goal: at most 1.1×); and a 20k-character reply with no markup at all streamed through
auto-detection, divided by a plain ``str`` scan of the same chunks (one ``str.find`` per
chunk for each character a marker can start with; goal: within 1.2×).

Run: ``.venv/bin/python bench/parse_stream.py`` (``--quick`` for fewer repeats).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import AIMessage

from fncall_graph.adapters import get_dialect
from fncall_graph.adapters.formats.base import PromptDialect
from fncall_graph.adapters.formats.readers import AUTO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from dialect_variants import PROMPT_VARIANTS

DIALECTS = PROMPT_VARIANTS
SIZES = (2_000, 20_000, 200_000)
#: chunk lengths drawn uniformly from these ranges: a token or two per chunk, and
#: the bigger pieces a server sends when it batches tokens into one event
CHUNKINGS = {"chunks of 1-8 chars": (1, 8), "chunks of 1-64 chars": (1, 64)}

WORDS = [
    "the",
    "database",
    "has",
    "three",
    "tables",
    "students",
    "log",
    "and",
    "sqlite_sequence",
    "数据库",
    "有",
    "三",
    "张",
    "表",
    "韩梅梅",
    "的",
    "年龄",
    "是",
    "6",
    "岁",
    "weather",
    "in",
    "北京",
    "is",
    "sunny",
    "广州",
    "is",
    "rainy",
    "so",
    "we",
    "check",
    "again",
]


def reply(dialect: PromptDialect, size: int, rng: random.Random) -> str:
    """A reply of about ``size`` characters: turns of prose and one call each."""
    turns, total, i = [], 0, 0
    per_turn = 1_000
    while total < size:
        call = {
            "name": rng.choice(["sqlite-read_query", "sqlite-write_query", "get_weather"]),
            "args": {
                "query": f"SELECT COUNT(*) FROM t{i} WHERE name = '韩梅梅'",
                "limit": rng.randint(1, 100),
                "tags": ["a", "b", {"nested": True}],
            },
            "id": f"call_{i}",
            "type": "tool_call",
        }
        bare = dialect.write_assistant(AIMessage(content="", tool_calls=[call]))
        prose = []
        while sum(len(w) + 1 for w in prose) < per_turn - len(bare):
            prose.append(rng.choice(WORDS))
        text = dialect.write_assistant(AIMessage(content=" ".join(prose), tool_calls=[call]))
        turns.append(text)
        total += len(text) + 1
        i += 1
    return "\n".join(turns)


def split(text: str, rng: random.Random, lo: int, hi: int) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(lo, hi)
        out.append(text[i : i + n])
        i += n
    return out


def median_time(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time of ``fn``, garbage collection held off (as timeit).

    Wall time (``perf_counter``) is the measure; CPU time (``process_time``) is printed
    beside it because on a busy machine a run of a few milliseconds or more is often
    descheduled, which inflates wall time but not CPU time.
    """
    wall, cpu = [], []
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    finally:
        gc.enable()
    return statistics.median(wall), statistics.median(cpu)


def stream(dialect: PromptDialect, chunks: list[str]) -> AIMessage:
    parser = dialect.stream_parser()
    for chunk in chunks:
        parser.feed(chunk)
    parser.close()
    return parser.message()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args()
    repeats = {2_000: 41, 20_000: 15, 200_000: 5}
    if args.quick:
        repeats = {2_000: 9, 20_000: 5, 200_000: 3}

    rng = random.Random(20_000)
    rows = []
    for label, (name, options) in DIALECTS.items():
        dialect = get_dialect(name, **options)
        assert isinstance(dialect, PromptDialect)
        row: dict[str, object] = {"dialect": label}
        for size in SIZES:
            text = reply(dialect, size, rng)
            whole = stream(dialect, [text])
            expected_calls = len(text) // 1_000 if size > 2_000 else None
            if expected_calls is not None:
                assert abs(len(whole.tool_calls) - expected_calls) <= 2, (label, size)
            parse_s, parse_cpu = median_time(
                lambda d=dialect, t=text: stream(d, [t]), repeats[size]
            )
            row[f"parse {size}"] = parse_s
            row[f"parse {size} cpu"] = parse_cpu
            row[f"calls {size}"] = len(whole.tool_calls)
            for chunking, (lo, hi) in CHUNKINGS.items():
                chunks = split(text, rng, lo, hi)
                streamed = stream(dialect, chunks)
                assert len(streamed.tool_calls) == len(whole.tool_calls), (label, size)
                stream_s, stream_cpu = median_time(
                    lambda d=dialect, c=chunks: stream(d, c), repeats[size]
                )
                row[f"{chunking} {size}"] = stream_s / parse_s
                row[f"{chunking} {size} cpu"] = stream_cpu / parse_cpu
        rows.append(row)

    def k(size: int) -> str:
        return f"{size // 1000}k"

    print("stream-parse time / one-shot parse time (median of repeats; lower is better)")
    print("one call per 1,000 characters; the ratio should not grow with the reply\n")
    print("wall time (perf_counter) | CPU time (process_time)\n")
    for chunking in CHUNKINGS:
        head = (
            f"{chunking:<22}"
            + "".join(f"{k(s):>8}" for s in SIZES)
            + "  |"
            + "".join(f"{k(s):>8}" for s in SIZES)
        )
        print(head)
        print("-" * len(head))
        for row in rows:
            wall = "".join(f"{row[f'{chunking} {s}']:>8.2f}" for s in SIZES)
            cpu = "".join(f"{row[f'{chunking} {s} cpu']:>8.2f}" for s in SIZES)
            print(f"{row['dialect']:<22}{wall}  |{cpu}")
        print()
    head = (
        f"{'one-shot parse (ms)':<22}"
        + "".join(f"{k(s):>8}" for s in SIZES)
        + "  |"
        + "".join(f"{k(s):>8}" for s in SIZES)
        + "   calls"
    )
    print(head)
    print("-" * len(head))
    for row in rows:
        wall = "".join(f"{row[f'parse {s}'] * 1e3:>8.2f}" for s in SIZES)
        cpu = "".join(f"{row[f'parse {s} cpu'] * 1e3:>8.2f}" for s in SIZES)
        calls = "/".join(str(row[f"calls {s}"]) for s in SIZES)
        print(f"{row['dialect']:<22}{wall}  |{cpu}   {calls}")
    auto_detection(rng, repeats[20_000])


def plain_scan(chunks: list[str], firsts: str) -> int:
    """The least any reader does: look in each chunk for a character a marker starts with."""
    found = 0
    for chunk in chunks:
        for ch in firsts:
            if chunk.find(ch) >= 0:
                found += 1
    return found


def auto_detection(rng: random.Random, repeats: int) -> None:
    hermes = get_dialect("hermes")
    assert isinstance(hermes, PromptDialect)
    text = reply(hermes, 20_000, rng)
    chunks = split(text, rng, 1, 8)
    assert len(stream(AUTO, chunks).tool_calls) == len(stream(hermes, chunks).tool_calls) > 0
    auto_s, auto_cpu = median_time(lambda: stream(AUTO, chunks), repeats)
    only_s, only_cpu = median_time(lambda: stream(hermes, chunks), repeats)

    plain = " ".join(rng.choice(WORDS) for _ in range(5_000))[:20_000]
    plain_chunks = split(plain, rng, 1, 8)
    assert stream(AUTO, plain_chunks).content == plain.strip()
    firsts = "".join(sorted({b.open[0] for b in AUTO.blocks} | {d[0] for d in AUTO.drop_tokens}))
    none_s, none_cpu = median_time(lambda: stream(AUTO, plain_chunks), repeats)
    scan_s, scan_cpu = median_time(lambda: plain_scan(plain_chunks, firsts), repeats)

    print()
    print("reading an unknown format: auto-detection over every known format (chunks of 1-8)")
    print(f"{'':<44}{'wall':>8}{'cpu':>8}   goal")
    print(
        f"{'20k Hermes reply: auto ÷ Hermes-only reader':<44}"
        f"{auto_s / only_s:>8.2f}{auto_cpu / only_cpu:>8.2f}   ≤ 1.1"
    )
    print(
        f"{'20k reply, no markup: auto ÷ plain str scan':<44}"
        f"{none_s / scan_s:>8.2f}{none_cpu / scan_cpu:>8.2f}   ≤ 1.2"
    )
    print(
        f"{'(ms: auto Hermes / Hermes-only / auto plain / scan)':<44}"
        f"  {auto_s * 1e3:.2f} / {only_s * 1e3:.2f} / {none_s * 1e3:.2f} / {scan_s * 1e3:.2f}"
    )


if __name__ == "__main__":
    main()
