"""Turns lost when several processes send turns to the same threads at once.

``--processes`` OS processes (default 4) each run ``--threads`` threads (default 20) at
once with ``ainvoke``, ``--turns`` turns each (default 5) one after another, all
processes on the same thread ids, through an async saver (``async_postgres_saver`` on a
throwaway PostgreSQL server on loopback, ``async_sqlite_saver`` on a file) and the
default ``multitask="enqueue"``: every turn must wait for the thread's run in progress
and start from the thread as that run left it. The replay model answers at once, so the
runs of one thread queue back to back and the hold changes hands as fast as it can.

After each round the threads are read back: a turn is *lost* when its run returned
normally but its user message is not in the thread's final history, *doubled* when the
message is there more than once; a *fork* is a checkpoint with two children (two runs
started from the same head). Errors the runs raised are counted by type. A round's
figures are printed as it ends, the totals at the end; nothing is asserted.

    python bench/thread_runs_race.py [--rounds 20] [--savers async_postgres,async_sqlite]
        [--processes 4] [--threads 20] [--turns 5]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _saver(where: str) -> Any:
    from fncall_graph.adapters.checkpoint import async_postgres_saver, async_sqlite_saver

    return (
        async_postgres_saver(where) if where.startswith("postgres") else async_sqlite_saver(where)
    )


def _graph(saver: Any, lease: float = 60.0) -> Any:
    from fncall_graph import create_fncall_graph
    from fncall_graph.replay import ReplayChatModel

    model = ReplayChatModel([f"answer {i}" for i in range(1000)], per_conversation=True)
    return create_fncall_graph(model, [], dialect="native", checkpointer=saver, lease=lease)


async def _child(
    where: str, prefix: str, name: str, threads: int, turns: int, lease: float
) -> None:
    """One process: every thread at once, its turns one after another; prints what
    returned normally and the errors."""
    async with _saver(where) as saver:
        graph = _graph(saver, lease)
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        done: list[str] = []
        errors: collections.Counter[str] = collections.Counter()

        async def thread(j: int) -> None:
            cfg = {"configurable": {"thread_id": f"{prefix}-{j}"}}
            for k in range(turns):
                said = f"{name} t{j} turn {k}"
                try:
                    await graph.ainvoke({"messages": [("user", said)]}, cfg)
                except Exception as exc:
                    errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
                else:
                    done.append(said)

        await asyncio.gather(*(thread(j) for j in range(threads)))
    print(json.dumps({"done": done, "errors": errors}), flush=True)


async def _read_back(where: str, prefix: str, threads: int) -> tuple[collections.Counter, int]:
    """Each user message's count in the threads' final histories; the forks."""
    from langchain_core.messages import HumanMessage

    said: collections.Counter[str] = collections.Counter()
    forks = 0
    async with _saver(where) as saver:
        graph = _graph(saver)
        for j in range(threads):
            cfg = {"configurable": {"thread_id": f"{prefix}-{j}"}}
            state = await graph.aget_state(cfg)
            said.update(
                m.content for m in state.values.get("messages", []) if isinstance(m, HumanMessage)
            )
            children: collections.Counter[str] = collections.Counter()
            async for snap in graph.aget_state_history(cfg):
                parent = snap.parent_config
                if parent is not None:
                    children[parent["configurable"]["checkpoint_id"]] += 1
            forks += sum(1 for n in children.values() if n > 1)
    return said, forks


def _round(where: str, prefix: str, args: argparse.Namespace) -> dict[str, Any]:
    sizes = ["--threads", str(args.threads), "--turns", str(args.turns), "--lease", str(args.lease)]
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", where, prefix, f"p{i}", *sizes],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(args.processes)
    ]
    try:
        for child in children:
            line = child.stdout.readline()
            assert line == "ready\n", f"a child did not start: {line!r}"
        started = time.monotonic()
        for child in children:
            child.stdin.write("\n")
            child.stdin.flush()
        reports = [json.loads(child.stdout.read() or "{}") for child in children]
        seconds = time.monotonic() - started
        codes = [child.wait() for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    done = [s for r in reports for s in r.get("done", [])]
    errors: collections.Counter[str] = collections.Counter()
    for r in reports:
        errors.update(r.get("errors", {}))
    said, forks = asyncio.run(_read_back(where, prefix, args.threads))
    return {
        "sent": args.processes * args.threads * args.turns,
        "returned": len(done),
        "lost": sum(1 for s in done if said[s] == 0),
        "doubled": sum(1 for s in done if said[s] > 1),
        "forks": forks,
        "errors": errors,
        "exit codes": codes,
        "seconds": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--savers", default="async_postgres,async_sqlite")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--lease", type=float, default=60.0)
    parser.add_argument("--child", nargs=3, metavar=("WHERE", "PREFIX", "NAME"))
    args = parser.parse_args()
    if args.child:
        asyncio.run(_child(*args.child, args.threads, args.turns, args.lease))
        return

    from contextlib import ExitStack

    from pg_server import running_postgres

    totals: dict[str, collections.Counter[str]] = {}
    with ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        for saver in args.savers.split(","):
            if saver == "async_postgres":
                where = stack.enter_context(running_postgres())
            elif saver == "async_sqlite":
                where = str(Path(folder) / "threads.db")
            else:
                parser.error(f"unknown saver {saver!r}: async_postgres or async_sqlite")
            total = totals[saver] = collections.Counter()
            for r in range(args.rounds):
                got = _round(where, f"round{r}", args)
                print(f"{saver} round {r + 1}/{args.rounds}: {json.dumps(got)}", flush=True)
                for key in ("sent", "returned", "lost", "doubled", "forks"):
                    total[key] += got[key]
                total["rounds with a loss"] += got["lost"] > 0
                total["errors"] += sum(got["errors"].values())
    print()
    print(
        f"{args.processes} processes x {args.threads} threads x {args.turns} turns, "
        f"{args.rounds} rounds"
    )
    print(
        f"{'saver':16} {'sent':>6} {'returned':>9} {'lost':>5} {'doubled':>8} {'forks':>6} "
        f"{'errors':>7} {'rounds with a loss':>19}"
    )
    for saver, t in totals.items():
        print(
            f"{saver:16} {t['sent']:6} {t['returned']:9} {t['lost']:5} {t['doubled']:8} "
            f"{t['forks']:6} {t['errors']:7} {t['rounds with a loss']:19}"
        )


if __name__ == "__main__":
    main()
