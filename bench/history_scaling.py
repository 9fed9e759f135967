"""Checkpoint bytes and time of one turn as a thread grows, against LangChain and LangGraph.

One user turn that makes K parallel tool calls and then answers, after H earlier
messages of about 220 characters, on a SQLite checkpointer on disk, with the same
replayed model for every graph, side by side in one run:

- ``create_agent``           LangChain v1's agent (``langchain.agents``);
- ``create_react_agent``     LangGraph's prebuilt agent;
- ``fncall native``          ``create_fncall_graph(dialect="native")``;
- ``fncall hermes``          ``create_fncall_graph(dialect="hermes")`` (the model writes
                             ``<tool_call>`` text; the graph renders and parses it).

Bytes are what the turn added to the saver's tables (checkpoint and metadata blobs, and
pending writes), read from SQLite itself; time is the median wall time of the turn over
``--repeats`` fresh threads. Prints two tables (KB per turn, ms per turn) with each
fncall column also as a ratio to ``create_agent``.

Then one long thread of N tool turns (the user asks, the model calls one tool, the tool
answers, the model answers: four messages a turn) on the product's own SQLite saver
(``sqlite_saver``), for ``create_agent``, ``create_fncall_graph(dialect="native")`` and
``dialect="hermes"``, each with the saver as it is by default, with
``store_messages_once=True`` ("once"), and with ``store_messages_once=True,
keep_checkpoints=10`` ("once, keep 10"): the database's size on disk (its write-ahead
log folded in) at N/2 and N turns, the sum of the thread's messages' serialized sizes,
the file ÷ the messages and ÷ ``create_agent``'s file on the default saver at the same
N, and the median time of a turn over the first and the last 20 turns; then where the
file's bytes are, table by table (checkpoints, writes, stored messages, tool-call
claims; each with its indexes, read from SQLite's ``dbstat``). By default N = 200 (a
few minutes); ``--long`` runs N = 1,000 for every column and N = 5,000 for the "keep"
columns (about two hours on two busy cores), and carries the other columns to 5,000
turns from their 1,000-turn threads (bytes as a quadratic through the N/2 and N figures
for the default saver, whose every checkpoint holds the whole history, as a line with
the option; time per turn as a line), marked "extrapolated" in the table. ``--kind``
measures only the columns named (``--kind "fncall, once, keep 10" --kind ...``),
``--turns N`` one thread of N turns per column (without ``--long``). The progress lines
(every 100 turns) carry the file ÷ the messages every 500 turns. Nothing is asserted.

    python bench/history_scaling.py [--repeats 3] [--quick] [--part turn|thread|all] [--long]
        [--kind KIND ...] [--turns N]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from fncall_graph import create_fncall_graph
from fncall_graph.adapters.checkpoint import sqlite_saver
from fncall_graph.replay import ReplayChatModel

FILLER = "这是一条较早的消息,内容用来让历史变长。" * 6 + "The thread goes on and on, as threads do."


@tool
def lookup(key: int) -> str:
    """Look a key up."""
    return f"value of {key}: " + "x" * 40


def history(h: int) -> list[Any]:
    return [
        HumanMessage(f"{i} {FILLER}") if i % 2 == 0 else AIMessage(f"{i} {FILLER}")
        for i in range(h)
    ]


def native_outputs(k: int) -> list[Any]:
    calls = [{"name": "lookup", "args": {"key": i}, "id": f"call_{i}"} for i in range(k)]
    return ["noted", {"content": "", "tool_calls": calls}, "all looked up"]


def hermes_outputs(k: int) -> list[str]:
    calls = "\n".join(
        "<tool_call>\n" + json.dumps({"name": "lookup", "arguments": {"key": i}}) + "\n</tool_call>"
        for i in range(k)
    )
    return ["noted", calls, "all looked up"]


def build(kind: str, model: Any, saver: SqliteSaver) -> Any:
    if kind == "create_agent":
        from langchain.agents import create_agent

        return create_agent(model, [lookup], checkpointer=saver)
    if kind == "create_react_agent":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from langgraph.prebuilt import create_react_agent

            return create_react_agent(model, [lookup], checkpointer=saver)
    dialect = kind.split()[-1]
    return create_fncall_graph(model, [lookup], dialect=dialect, checkpointer=saver)


def stored_bytes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        checkpoints = conn.execute(
            "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
        ).fetchone()[0]
        writes = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
    return int(checkpoints + writes)


def one_turn(kind: str, h: int, k: int, folder: Path) -> tuple[int, float]:
    """(bytes, seconds) of the K-call turn on a thread that already holds H messages."""
    outputs = hermes_outputs(k) if kind.endswith("hermes") else native_outputs(k)
    db = folder / f"{uuid.uuid4().hex}.sqlite"
    with SqliteSaver.from_conn_string(str(db)) as saver:
        graph = build(kind, ReplayChatModel(outputs), saver)
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": 100}
        graph.invoke({"messages": history(h)}, config)  # the earlier history, one answer
        before = stored_bytes(db)
        started = time.perf_counter()
        graph.invoke({"messages": [("user", "look up every key")]}, config)
        seconds = time.perf_counter() - started
        return stored_bytes(db) - before, seconds


KINDS = ("create_agent", "create_react_agent", "fncall native", "fncall hermes")


class TurnModel(BaseChatModel):
    """The long thread's model: after a user message it calls ``lookup`` once, after the
    tool's result it answers (a replay that keeps no inputs, so a long thread costs no
    memory in the model)."""

    calls: int = 0
    markup: bool = False  # write the call as Hermes text (for a prompt dialect)

    @property
    def _llm_type(self) -> str:
        return "turn-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[getattr(t, "name", str(t)) for t in tools])

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls += 1
        last = messages[-1]
        if isinstance(last, ToolMessage) or "<tool_response>" in str(last.content):
            reply = AIMessage(f"The value is {str(last.content)[:24]}; anything else?")
        elif self.markup:
            body = json.dumps({"name": "lookup", "arguments": {"key": self.calls}})
            reply = AIMessage(f"<tool_call>\n{body}\n</tool_call>")
        else:
            call = {"name": "lookup", "args": {"key": self.calls}, "id": f"call_{self.calls}"}
            reply = AIMessage("", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


KEEP = 10  # the checkpoints a thread keeps in the "keep" columns
THREAD_KINDS = tuple(
    f"{graph}{saver}"
    for graph in ("create_agent", "fncall", "fncall hermes")
    for saver in ("", ", once", f", once, keep {KEEP}")
)
TABLES = ("checkpoints", "writes", "fncall_messages", "fncall_tool_calls")


def disk_bytes(db: Path) -> int:
    """The database file's size once its write-ahead log is folded in (and emptied)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


def table_bytes(db: Path) -> dict[str, int]:
    """The file's bytes by table, its indexes with it (SQLite's own pages as "other")."""
    with sqlite3.connect(db) as conn:
        owner = dict(conn.execute("SELECT name, tbl_name FROM sqlite_master"))
        pages = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    found: dict[str, int] = {}
    for name, size in pages:
        table = owner.get(name, name)
        table = table if table in TABLES else "other"
        found[table] = found.get(table, 0) + int(size)
    return found


def messages_bytes(saver: Any, graph: Any, config: Any) -> int:
    """The thread's messages' own bytes, as the saver's serializer writes them."""
    messages = graph.get_state(config).values["messages"]
    return sum(len(saver.serde.dumps_typed(m)[1]) for m in messages)


def long_thread(kind: str, turns: int, folder: Path) -> dict[str, float]:
    """One thread of ``turns`` tool turns: bytes on disk at the middle and the end (and
    by table), the messages' serialized bytes, and the median ms of a turn at the start
    and the end."""
    db = folder / f"{uuid.uuid4().hex}.sqlite"
    once = ", once" in kind
    keep = KEEP if kind.endswith(f"keep {KEEP}") else None
    times: list[float] = []
    mid = 0
    with sqlite_saver(db, store_messages_once=once, keep_checkpoints=keep) as saver:
        hermes = kind.startswith("fncall hermes")
        model = TurnModel(markup=hermes)
        if kind.startswith("create_agent"):
            from langchain.agents import create_agent

            graph = create_agent(model, [lookup], checkpointer=saver)
        else:
            dialect = "hermes" if hermes else "native"
            graph = create_fncall_graph(model, [lookup], dialect=dialect, checkpointer=saver)
        config = {"configurable": {"thread_id": "long"}}
        for turn in range(1, turns + 1):
            started = time.perf_counter()
            graph.invoke({"messages": [HumanMessage(f"turn {turn}: {FILLER}")]}, config)
            times.append(time.perf_counter() - started)
            if turn == turns // 2:
                mid = disk_bytes(db)
            if turn % 100 == 0:
                recent = statistics.median(times[-20:]) * 1000
                ratio = ""
                if once and turn % 500 == 0:  # the file so far ÷ the messages so far
                    ratio = f", file {disk_bytes(db) / messages_bytes(saver, graph, config):.2f}x"
                print(
                    f"    {kind}: {turn} turns, {recent:.0f} ms/turn{ratio}",
                    file=sys.stderr,
                    flush=True,
                )
        messages = graph.get_state(config).values["messages"]
        assert len(messages) == 4 * turns, (kind, len(messages))
        serialized = messages_bytes(saver, graph, config)
    window = min(20, max(1, turns // 4))
    size = disk_bytes(db)
    tables = {t: b for t, b in table_bytes(db).items() if t in TABLES}
    tables["other"] = size - sum(tables.values())  # SQLite's own pages, free pages
    return {
        **{f"table {t}": b for t, b in tables.items()},
        "turns": turns,
        "mid": mid,
        "bytes": size,
        "messages": serialized,
        "first_ms": statistics.median(times[1 : window + 1]) * 1000,
        "last_ms": statistics.median(times[-window:]) * 1000,
        "extrapolated": 0,
    }


def extrapolate(row: dict[str, float], turns: int, *, quadratic: bool) -> dict[str, float]:
    """``row`` (measured at N, with its N/2 figure) carried to ``turns``: bytes through
    (N/2, mid) and (N, bytes) as a·n² + b·n (``quadratic``: every checkpoint holds the
    whole history) or as a line, the last turn's time as a line from the first turn's
    time, the messages in proportion."""
    n, half = row["turns"], row["turns"] / 2
    if quadratic:  # solve a·n² + b·n = y at n and n/2
        a = (row["bytes"] - 2 * row["mid"]) / (n * n - 2 * half * half)
        b = (row["bytes"] - a * n * n) / n
        at = lambda m: a * m * m + b * m  # noqa: E731
    else:
        slope = (row["bytes"] - row["mid"]) / half
        at = lambda m: row["mid"] + slope * (m - half)  # noqa: E731
    per_turn = (row["last_ms"] - row["first_ms"]) / n
    return {
        "turns": turns,
        "mid": at(turns / 2),
        "bytes": at(turns),
        "messages": row["messages"] * turns / n,
        "first_ms": row["first_ms"],
        "last_ms": row["first_ms"] + per_turn * turns,
        "extrapolated": 1,
    }


def thread_table(
    long: bool, kinds: tuple[str, ...] = THREAD_KINDS, turns: int | None = None
) -> None:
    """Measure (and with ``long`` extrapolate) the long thread; print the tables."""
    keep = tuple(k for k in kinds if k.endswith(f"keep {KEEP}"))
    measured = [(1000, kinds), (5000, keep)] if long else [(turns or 200, kinds)]
    rows: dict[tuple[int, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="fncall-bench-") as tmp:
        for turns, columns in measured:
            for kind in columns:
                r = rows[(turns, kind)] = long_thread(kind, turns, Path(tmp))
                print(
                    f"  measured {kind} at {turns} turns: file {r['bytes']} B, messages "
                    f"{r['messages']} B, {r['bytes'] / r['messages']:.2f}x",
                    file=sys.stderr,
                    flush=True,
                )
                for leftover in Path(tmp).iterdir():
                    leftover.unlink()
    if long:
        # 5,000 turns take hours here (and tens of GB without the option): the columns
        # not measured there are carried from their 1,000-turn threads
        for kind in kinds:
            if (5000, kind) not in rows:
                rows[(5000, kind)] = extrapolate(
                    rows[(1000, kind)], 5000, quadratic=", once" not in kind
                )
    print_thread_table(rows)
    print_breakdown(rows)


def print_thread_table(rows: dict[tuple[int, str], dict[str, float]]) -> None:
    print("\none thread of N tool turns on sqlite_saver (4 messages a turn)")
    print(
        f"{'N':>6}  {'graph, saver':<31}{'disk at N/2':>13}{'disk at N':>13}"
        f"{'messages':>12}{'disk ÷ msgs':>13}{'÷ agent':>9}{'N/2→N':>8}"
        f"{'ms/turn first':>15}{'last':>9}"
    )
    for (turns, kind), r in sorted(rows.items()):
        mark = "  (extrapolated)" if r["extrapolated"] else ""
        agent = rows.get((turns, "create_agent"))
        versus = f"{r['bytes'] / agent['bytes']:>8.4f}x" if agent else f"{'—':>9}"
        print(
            f"{turns:>6}  {kind:<31}{r['mid'] / 2**20:>10.1f} MB{r['bytes'] / 2**20:>10.1f} MB"
            f"{r['messages'] / 2**20:>9.1f} MB{r['bytes'] / r['messages']:>12.2f}x{versus}"
            f"{r['bytes'] / r['mid']:>7.2f}x{r['first_ms']:>12.1f} ms{r['last_ms']:>6.0f} ms"
            f"{mark}"
        )


def print_breakdown(rows: dict[tuple[int, str], dict[str, float]]) -> None:
    """Where each measured thread's file is, table by table, ÷ the messages' bytes."""
    print("\nthe file by table (with its indexes; other: SQLite's own and free pages), ÷ msgs")
    print(f"{'N':>6}  {'graph, saver':<31}" + "".join(f"{t:>19}" for t in (*TABLES, "other")))
    for (turns, kind), r in sorted(rows.items()):
        if r["extrapolated"]:
            continue
        cells = "".join(
            f"{r.get(f'table {t}', 0) / 2**20:>9.2f} MB {r.get(f'table {t}', 0) / r['messages']:>5.2f}x"
            for t in (*TABLES, "other")
        )
        print(f"{turns:>6}  {kind:<31}{cells}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="H up to 100 only")
    parser.add_argument("--part", choices=("turn", "thread", "all"), default="all")
    parser.add_argument(
        "--long",
        action="store_true",
        help="the long thread at 1,000 turns, and 5,000 for the keep columns (the others "
        "carried to 5,000)",
    )
    parser.add_argument(
        "--kind",
        action="append",
        choices=THREAD_KINDS,
        help="a long-thread column to measure (repeat for more; all when none)",
    )
    parser.add_argument(
        "--turns", type=int, help="the long thread's N without --long (200 by default)"
    )
    args = parser.parse_args(argv)
    kinds = tuple(k for k in THREAD_KINDS if k in (args.kind or THREAD_KINDS))
    if args.part == "thread":
        thread_table(args.long, kinds, args.turns)
        return 0
    sizes = [(10, 1), (10, 10), (100, 1), (100, 10)]
    if not args.quick:
        sizes += [(1000, 1), (1000, 10)]
    table: dict[tuple[int, int], dict[str, tuple[int, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="fncall-bench-") as tmp:
        for h, k in sizes:
            row = {}
            for kind in KINDS:
                runs = [one_turn(kind, h, k, Path(tmp)) for _ in range(args.repeats)]
                row[kind] = (
                    int(statistics.median(r[0] for r in runs)),
                    statistics.median(r[1] for r in runs),
                )
            table[(h, k)] = row
            print(f"  measured H={h} K={k}", file=sys.stderr, flush=True)

    def show(title: str, cell: Callable[[tuple[int, float]], float], unit: str) -> None:
        print(f"\n{title}")
        head = "".join(f"{kind:>20}" for kind in KINDS)
        print(f"{'H, K':<10}{head}{'native ÷ agent':>16}{'hermes ÷ agent':>16}")
        for (h, k), row in table.items():
            values = [cell(row[kind]) for kind in KINDS]
            cells = "".join(f"{v:>17.1f} {unit}" for v in values)
            print(
                f"{f'{h}, {k}':<10}{cells}{values[2] / values[0]:>16.2f}"
                f"{values[3] / values[0]:>16.2f}"
            )

    show("checkpoint bytes written per turn", lambda v: v[0] / 1024, "KB")
    show("time per turn (median)", lambda v: v[1] * 1000, "ms")
    if args.part == "all":
        thread_table(args.long, kinds, args.turns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
