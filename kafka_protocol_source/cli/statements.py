"""Lines of SQL into statements, for ``kafka-wire shell``: a statement ends at a ``;``.

As in spark-sql, psql and sqlite3, a statement may run over several lines and ends at a ``;``
that is not inside a string, a quoted name or a comment; several statements may share a line. At
the end of the input the statement still open is complete without its ``;``. What is only
comments and blanks is no statement. This module only splits text; it knows nothing of Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

_QUOTES = "'\"`"


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


@dataclass(frozen=True)
class Statement:
    text: str  # without its ';'
    first_line: int  # 1-based, of the input
    last_line: int


class StatementSplitter:
    """Fed one line at a time; gives back the statements each line completes."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._quote: str | None = None  # the quote of the string or name the text is in
        self._raw = False  # the string is raw: r'...'
        self._comment_depth = 0  # /* ... */ nest in Spark SQL
        self._has_code = False  # something besides comments and blanks since the last ';'
        self._line = 0
        self._first_line = 0

    @property
    def pending(self) -> bool:
        """Whether a statement has begun and not ended (the shell then prompts for more)."""
        return self._has_code or self._quote is not None or self._comment_depth > 0

    def feed(self, line: str) -> list[Statement]:
        """``line`` with or without its line break (``input()`` drops it; a comment must not
        run on into the next line)."""
        self._line += 1
        if not line.endswith("\n"):
            line += "\n"
        done: list[Statement] = []
        start = i = 0
        while i < len(line):
            if self._quote is None and not self._comment_depth:
                if line.startswith("--", i):
                    break  # the rest of the line is a comment
                if line[i] == ";":
                    self._pieces.append(line[start:i])
                    statement = self._take()
                    if statement is not None:
                        done.append(statement)
                    i = start = i + 1
                    continue
            i = self._past(line, i)
        rest = line[start:]
        if rest.strip() or self._pieces:
            self._pieces.append(rest)
        return done

    def _past(self, line: str, i: int) -> int:
        """Where the character at ``i`` ends (an escape or a comment mark is two), noting the
        string, quoted name or comment it opens or closes."""
        c = line[i]
        if self._quote is not None:
            if c == "\\" and self._quote != "`" and not self._raw:
                return i + 2  # the escaped character, a quote included
            if c == self._quote:
                self._quote = None
            return i + 1
        if self._comment_depth and line.startswith("*/", i):
            self._comment_depth -= 1
            return i + 2
        if line.startswith("/*", i):
            self._comment_depth += 1
            return i + 2
        if not self._comment_depth:
            if c in _QUOTES:
                self._quote = c
                # r'...': a raw string, where a backslash escapes nothing (r'C:\temp\')
                self._raw = c != "`" and i > 0 and line[i - 1] in "rR" and (i < 2 or not _word(line[i - 2]))
            if not c.isspace():
                self._begin()
        return i + 1

    def finish(self) -> Statement | None:
        """The statement the input ended in, without its ';' (None if there is none)."""
        return self._take()

    def _begin(self) -> None:
        if not self._has_code:  # the statement's first line is that of its first code, not of a comment before it
            self._has_code = True
            self._first_line = self._line

    def _take(self) -> Statement | None:
        text = "".join(self._pieces).strip()
        had_code = self._has_code
        self._pieces, self._has_code, self._quote, self._comment_depth = [], False, None, 0
        return Statement(text, self._first_line, self._line) if had_code else None
