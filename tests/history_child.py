"""One process of the store-messages-once crash test: a thread of tool turns that dies
after a tool call finished and before its result was saved.

Usage: ``python history_child.py CHECKPOINTS EFFECTS TURNS [KEEP]``

Runs TURNS tool turns (tests/checkpoint/test_history_once.py's ``TurnModel`` and ``record`` tool,
``sqlite_saver(CHECKPOINTS, store_messages_once=True, keep_checkpoints=KEEP)``); on the
last turn the process
kills itself with SIGKILL inside the saver's ``put_writes`` of the tool's result, before
the write is saved: the call ran (a line in EFFECTS) and its outcome is stored only with
its claim. The kill comes from the process itself at that exact point, so no timing is
involved.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "checkpoint"))  # test_history_once
from test_history_once import CONFIG, build, user

from fncall_graph.adapters.checkpoint import sqlite_saver


def main(checkpoints: str, effects: str, turns: int, keep: int | None = None) -> None:
    os.environ["FNCALL_HISTORY_EFFECTS"] = effects
    with sqlite_saver(checkpoints, store_messages_once=True, keep_checkpoints=keep) as saver:
        graph = build("fncall", saver)
        for turn in range(1, turns):
            graph.invoke(user(turn), CONFIG)
        put_writes = saver.put_writes

        def die_before_saving_the_result(config: Any, writes: Any, *args: Any) -> Any:
            if any(
                isinstance(v, ToolMessage)
                or (isinstance(v, list) and v and isinstance(v[0], ToolMessage))
                for _, v in writes
            ):
                os.kill(os.getpid(), signal.SIGKILL)
            return put_writes(config, writes, *args)

        saver.put_writes = die_before_saving_the_result  # type: ignore[method-assign]
        graph.invoke(user(turns), CONFIG)
    raise SystemExit("the process was to die before the last tool result was saved")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *(int(k) for k in sys.argv[4:5]))
