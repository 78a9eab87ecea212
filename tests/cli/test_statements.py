"""The shell's statements: ended by ';' outside strings, quoted names and comments; the last one by the input's end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_protocol_source.cli.statements import Statement, StatementSplitter


def split(text: str) -> list[Statement]:
    splitter = StatementSplitter()
    statements = [s for line in text.splitlines(keepends=True) for s in splitter.feed(line)]
    last = splitter.finish()
    return statements + ([last] if last is not None else [])


def texts(text: str) -> list[str]:
    return [s.text for s in split(text)]


def test_a_statement_runs_over_lines_to_its_semicolon():
    readme_block = (
        "SELECT api_name, count(*) AS n\nFROM exchanges\n  GROUP BY api_name;\nSELECT 1; SELECT 2;\nSELECT 3\n"
    )
    assert split(readme_block) == [
        Statement("SELECT api_name, count(*) AS n\nFROM exchanges\n  GROUP BY api_name", 1, 3),
        Statement("SELECT 1", 4, 4),
        Statement("SELECT 2", 4, 4),
        Statement("SELECT 3", 5, 5),
    ]


def test_a_semicolon_in_a_string_a_name_or_a_comment_ends_nothing():
    text = (
        "SELECT 'a;b', \"c;d\", `e;f` AS `g;h`, 'it\\'s;' -- no end; here\n"
        "/* nor; /* nested; */ here; */ FROM exchanges;\n"
        "SELECT 'a string\n"
        "over two lines;' AS s;"
    )
    assert texts(text) == [
        "SELECT 'a;b', \"c;d\", `e;f` AS `g;h`, 'it\\'s;' -- no end; here\n"
        "/* nor; /* nested; */ here; */ FROM exchanges",
        "SELECT 'a string\nover two lines;' AS s",
    ]


def test_comments_and_blanks_alone_are_no_statement():
    assert texts("-- only a comment\n\n  ;\n/* and\nthis */\n") == []
    splitter = StatementSplitter()
    assert (splitter.feed("-- a comment"), splitter.pending) == ([], False)
    assert (splitter.feed("SELECT 1"), splitter.pending) == ([], True)
    assert splitter.feed(";") == [Statement("-- a comment\nSELECT 1", 2, 3)]  # (its code's first line)
    assert not splitter.pending and splitter.finish() is None


def test_a_raw_string_escapes_nothing():
    """r'C:\\temp\\' ends at its second quote: taken as an escape, the backslash before it kept the
    string open and swallowed the statements after it (found by review, /tmp/rev17)."""
    assert texts("SELECT r'C:\\temp\\' AS dir;\nSELECT R\"a\\\" AS b; SELECT 'it\\'s;' AS c;") == [
        "SELECT r'C:\\temp\\' AS dir",
        'SELECT R"a\\" AS b',
        "SELECT 'it\\'s;' AS c",
    ]


def test_a_statement_counts_from_its_own_first_line():
    """Not from a comment after the statement before it (it said lines 1-3 for lines 2-3)."""
    assert split("SELECT 1; -- one\nSELECT\n2;") == [Statement("SELECT 1", 1, 1), Statement("-- one\nSELECT\n2", 2, 3)]


def test_lines_without_their_line_break_keep_a_comment_on_its_own_line():
    splitter = StatementSplitter()  # input() gives lines without "\n"
    assert splitter.feed("SELECT 1 -- one") == []
    assert splitter.feed("AS x;") == [Statement("SELECT 1 -- one\nAS x", 1, 2)]


def test_an_open_string_or_comment_keeps_the_statement_open():
    splitter = StatementSplitter()
    splitter.feed("/* open")
    assert splitter.pending
    splitter.feed("*/")
    assert not splitter.pending


_WORDS = st.sampled_from(["1", "x", "'a;b'", "`c;d`", "/* e; */", "(", ")", ",", "'f\\'g'"])


@given(
    st.lists(st.lists(_WORDS, max_size=6).map(lambda words: " ".join(["SELECT", *words])), min_size=1, max_size=5),
    st.lists(st.sampled_from([" ", "\n", "\n\n"]), min_size=30, max_size=30),
)
def test_statements_joined_with_semicolons_and_line_breaks_come_back(statements, breaks):
    text = "".join(s.replace(" ", breaks[i % len(breaks)]) + ";" + breaks[-i - 1] for i, s in enumerate(statements))
    assert [" ".join(t.split()) for t in texts(text)] == statements
