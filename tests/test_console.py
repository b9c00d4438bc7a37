"""The live status line (shadowreplay.console) that the replayer, the shard launcher and the
trace importer draw their progress with."""

from __future__ import annotations

import io

from shadowreplay.console import StatusLine


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_is_redrawn_on_a_terminal_and_left_on_screen():
    out = Tty()
    s = StatusLine(out)
    assert s.enabled
    s.update("sent 1/10")
    s.update("sent 5/10")
    s.print("[s1] a log line")
    s.close("sent 10/10 [done]")
    text = out.getvalue()
    assert text.index("sent 1/10") < text.index("sent 5/10") < text.index("sent 10/10 [done]")
    assert "[s1] a log line\n" in text  # a line of its own, kept above the status
    assert "\r\x1b[2K" in text and "sent 10/10 [done]\n" in text  # redrawn in place; the last one stays


def test_nothing_is_drawn_where_no_terminal_is_unless_forced():
    out = io.StringIO()
    s = StatusLine(out)
    s.update("sent 1/10")
    s.close()
    assert not s.enabled and out.getvalue() == "" and s.last == "sent 1/10"
    s.print("a log line")  # still printed, as a plain line
    assert out.getvalue() == "a log line\n"
    forced = io.StringIO()
    f = StatusLine(forced, force=True)
    f.update("rows 7")
    f.close()
    assert f.enabled and "rows 7" in forced.getvalue()


def test_the_data_cannot_drive_the_terminal():
    out = Tty()
    s = StatusLine(out)
    s.update("client \x1b]0;owned\x07 [bold red]x[/]")  # a title-setting escape and rich markup
    s.close()
    text = out.getvalue()
    assert "owned" in text and "\x1b]0;" not in text and "\x07" not in text
    assert "[bold red]x[/]" in text  # shown as written, not as markup
    before = Tty()
    StatusLine(before).print("shard log \x1b]0;owned\x07")  # a log line before any status line
    assert before.getvalue() == "shard log ?]0;owned?\n"
