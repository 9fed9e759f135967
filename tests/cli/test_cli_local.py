"""``fncall-graph chat`` on the bundled model, driven at a terminal as a person does.

What the small model writes is not asserted: only the shape of the session (an answer
starts, Ctrl-C ends the turn, the next question is answered by the same server).
"""

from __future__ import annotations

import sys
from pathlib import Path

import patience
import pexpect
import pytest

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "fncall-graph")
TIMEOUT = 300


def test_ctrl_c_mid_answer_interrupts_only_the_turn(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    child = patience.Spawn(
        CLI,
        ["chat", "--model", "local", "--db", str(tmp_path / "threads.sqlite")],
        encoding="utf-8",
        timeout=TIMEOUT,
        env={"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)},
    )
    child.setwinsize(40, 200)
    try:
        child.expect("you> ")
        child.sendline("Write a long story about a cat who travels around the world.")
        child.expect("assistant>")  # the answer is streaming now
        child.sendintr()  # Ctrl-C: the terminal signals the whole foreground process group
        child.expect_exact("(turn interrupted)")
        # the cancel is no error: LangChain's warning about the raising callback is not shown
        assert "Error in" not in child.before and "_TurnCancelled" not in child.before
        child.expect("you> ")
        child.sendline("Say hello.")
        index = child.expect(["assistant>", "cannot reach the model server", "error"])
        assert index == 0, child.before + child.after
        # the same server answers; how long the small model goes on is its own affair,
        # so this answer is interrupted too (or, if it has ended, the prompt comes back)
        child.sendintr()
        child.expect("you> ")
        assert "cannot reach" not in child.before and "Error in" not in child.before
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
