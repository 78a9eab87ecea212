"""Every rule the grammar states is a KrammarError naming the line and column that break it."""

from __future__ import annotations

import pytest

from kafka_protocol_source.spec.krammar import KrammarError, load_krammar, lower_document, parse_krammar

PAIR = "ARequest => key 0, max version 1\n  X: int8\n\nAResponse =>\n  Y: int8\n"

CASES = {
    # spacing
    "tab": ("A =>\n\tX: int8\n", 2, 1, "tabs are not allowed"),
    "trailing space": ("A =>\n  X: int8 \n", 2, 10, "trailing spaces"),
    "space-only line": ("A =>\n  X: int8\n  \n", 3, 1, "trailing spaces"),
    "carriage return": ("A =>\r\n  X: int8\n", 1, 5, "carriage return"),
    "two spaces after colon": ("A =>\n  X:  int8\n", 2, 6, "only one space"),
    "two spaces in a header": ("A  =>\n  X: int8\n", 1, 3, "only one space"),
    "two spaces in a type": ("A =>\n  X: length-field-minus =>  L - 1\n", 2, 28, "only one space"),
    "no space after colon": ("A =>\n  X:int8\n", 2, 5, "one space must follow the colon"),
    "no colon": ("A =>\n  X int8\n", 2, 4, "needs a colon"),
    "colon on a definition": ("A: =>\n  X: int8\n", 1, 2, "no colon"),
    "version comment without spaces": ("A =>\n  X: int8 //v1+\n", 2, 11, "' // v1+'"),
    # nesting
    "field indented too far": ("A =>\n    X: int8\n", 2, 3, "indented 4 spaces where 2"),
    "odd indentation": ("A =>\n   X: int8\n", 2, 4, "two spaces per struct level"),
    "indented definition": ("  A =>\n  X: int8\n", 1, 1, "indented line where a definition"),
    "struct with no fields": ("A =>\n  X: [=>]\n  Y: int8\n", 2, 7, "no fields follow"),
    "comment describing nothing": ("A =>\n  X: int8\n  // dangling\n", 3, 3, "directly above the field"),
    "comment before a shallower field": (
        "A =>\n  X: =>\n    Y: int8\n    // about W\n  W: int8\n",
        4,
        5,
        "directly above the field",
    ),
    "comment at the wrong depth": ("A =>\n  X: int8\n// stray\n", 3, 1, "indented like the field"),
    # blank lines between definitions
    "no blank line": ("A =>\n  X: int8\nB =>\n  Y: int8\n", 3, 1, "separated by one blank line"),
    "two blank lines": ("A =>\n  X: int8\n\n\nB =>\n  Y: int8\n", 4, 1, "only one blank line"),
    "blank line at the end": ("A =>\n  X: int8\n\n", 3, 1, "blank line at the end"),
    "blank line at the start": ("\nA =>\n  X: int8\n", 1, 1, "blank line where a definition should start"),
    "floating comment": ("A =>\n  X: int8\n\n// about B\n\nB =>\n  Y: int8\n", 4, 1, "directly above the definition"),
    # responses
    "response without its request": (
        "B => not top level\n  X: int8\n\nAResponse =>\n  Y: int8\n",
        4,
        1,
        "AResponse must directly follow ARequest",
    ),
    "response of another request": (PAIR.replace("AResponse", "BResponse"), 4, 1, "BResponse must directly follow"),
    "request without a response": (
        "ARequest => key 0, max version 1\n  X: int8\n\nB => not top level\n  Y: int8\n",
        4,
        1,
        "ARequest must be followed directly by AResponse",
    ),
    "request last in the file": ("ARequest => key 0, max version 1\n  X: int8\n", 1, 1, "followed by AResponse"),
    "request without modifiers": (
        "ARequest =>\n  X: int8\n\nAResponse =>\n  Y: int8\n",
        4,
        1,
        "has no 'key N, max version M'",
    ),
    "blank line inside a struct": ("A =>\n  X: int8\n\n  Y: int8\n", 3, 1, "a blank line ends a definition"),
    "response with modifiers": (PAIR.replace("AResponse =>", "AResponse => key 0"), 4, 14, "no modifiers"),
    # modifiers
    "key not first": ("ARequest => max version 1, key 0\n  X: int8\n", 1, 13, "a request starts with 'key N"),
    "version comment on a definition": ("A => // v1+\n  X: int8\n", 1, 6, "unknown first modifier '// v1+'"),
    "key beyond int16": ("ARequest => key 40000, max version 1\n  X: int8\n", 1, 13, "does not fit in an int16"),
    "max version beyond int16": ("ARequest => key 1, max version 40000\n  X: int8\n", 1, 20, "int16"),
    "min above max": ("ARequest => key 1, max version 1, min version 5\n  X: int8\n", 1, 35, "is above max version"),
    "non-ASCII digits": ("ARequest => key \u0661, max version 3\n  X: int8\n", 1, 13, "unknown modifier 'key"),
    "no max version": ("ARequest => key 0, admin\n  X: int8\n", 1, 20, "'max version M'"),
    "modifiers out of order": (
        "ARequest => key 0, max version 1, admin, flexible v1+\n  X: int8\n",
        1,
        42,
        "out of order",
    ),
    "unknown modifier": ("ARequest => key 0, max version 1, bogus\n  X: int8\n", 1, 35, "unknown modifier 'bogus'"),
    "request not named Request": ("A => key 0, max version 1\n  X: int8\n", 1, 1, "ends in Request"),
    "both encodings": (
        "A => not top level, with version field, no encoding\n  Version: int16\n",
        1,
        41,
        "out of order",
    ),
    "versions on a shared struct": (
        "A => not top level, max version 1\n  X: int8\n",
        1,
        21,
        "only a 'data' or 'header'",
    ),
    "version field missing": ("A => not top level, with version field\n  X: int8\n", 2, 3, "'Version: int16'"),
    "bad flexible range": ("ARequest => key 0, max version 1, flexible 3+\n  X: int8\n", 1, 35, "like v3+"),
    # types
    "unknown type": ("A =>\n  X: int33\n", 2, 6, "unknown type 'int33'"),
    "unknown element type": ("A =>\n  X: nullable[Thing]\n", 2, 15, "unknown type 'Thing'"),
    "type used before its definition": ("A =>\n  X: B\n\nB =>\n  Y: int8\n", 2, 6, "defined before they are used"),
    "circular struct": ("A => not top level\n  X: int8\n  Y: [A]\n", 3, 7, "circular struct: A contains itself"),
    "circular through an anonymous struct": ("A =>\n  X: =>\n    Y: A\n", 3, 8, "circular"),
    "a message as a field type": (PAIR + "\nB =>\n  X: ARequest\n", 8, 6, "is a message"),
    "nullable int": ("A =>\n  X: nullable-int32\n", 2, 6, "int32 cannot be null"),
    "nullable varint-string": ("A =>\n  X: nullable-varint-string\n", 2, 6, "always nullable"),
    "range without nullable": ("A =>\n  X: string-v1+\n", 2, 6, "needs the nullable- prefix"),
    "bad default in an unused struct": ("A =>\n  X: [int8](1)\n", 2, 7, "can only be null"),
    "owner named twice": ("S => not top level, for ARequest ARequest\n  X: int8\n\n" + PAIR, 1, 21, "twice"),
    "hint on a named array": ("A =>\n  X: [int8]Bytes\n", 2, 12, "only follow [=>]"),
    "nullable elements": ("A =>\n  X: [nullable-string]\n", 2, 7, "elements cannot be nullable"),
    "length from a later field": ("A =>\n  X: length-field-minus => L - 1\n  L: int32\n", 2, 6, "earlier integer"),
    "length from a string": ("A =>\n  L: string\n  X: length-field-minus => L - 1\n", 3, 6, "earlier integer"),
    "length from fewer versions": (
        "A =>\n  L: int32 // v2+\n  X: length-field-minus => L - 1\n",
        3,
        6,
        "exists in versions 2+ only",
    ),
    "nested too deep": (
        "A =>\n" + "".join("  " * (i + 1) + f"F{i}: =>\n" for i in range(40)) + "  " * 41 + "X: int8\n",
        33,
        70,
        "at most 32 levels",
    ),
    "length-field-minus spelled wrong": (
        "A =>\n  L: int32\n  X: length-field-minus => L-1\n",
        3,
        6,
        "'length-field-minus => Field - N'",
    ),
    # version comments
    "version without v": ("A =>\n  X: int8 // 3+\n", 2, 14, "not of the form v1+"),
    "version range backwards": ("A =>\n  X: int8 // v5-v3\n", 2, 14, "low <= high"),
    "version beyond int16": ("A =>\n  X: int8 // v5-v40000\n", 2, 14, "<= 32767"),
    "version not first": ("A =>\n  X: int8 // tag 0, v3+\n", 2, 21, "comes first"),
    "unknown attribute": ("A =>\n  X: int8 // v3+, sometimes\n", 2, 19, "unknown attribute 'sometimes'"),
    "repeated attribute": ("A =>\n  X: int8 // tag 0, tag 1\n", 2, 21, "repeats"),
    # names
    "field defined twice": ("A =>\n  X: int8\n  X: int16\n", 3, 3, "field X is already defined on line 2"),
    "definition defined twice": ("A =>\n  X: int8\n\nA =>\n  Y: int8\n", 4, 1, "already defined on line 1"),
}


@pytest.mark.parametrize("case", CASES)
def test_each_rule_names_its_line_and_column(case):
    text, line, column, reason = CASES[case]
    with pytest.raises(KrammarError) as caught:
        lower_document(parse_krammar(text, "defs.krammar"))
    error = caught.value
    assert reason in error.reason, error
    assert (error.line, error.column) == (line, column), error
    assert str(error).startswith(f"defs.krammar:{line}:{column}: ")


LOWERING = {
    "clashing tags": ("A =>\n  X: int8 // tag 0\n  Y: int8 // tag 0\n", 3, 3, "tag 0 is already used by X"),
    "struct shared with other messages": (
        "S => not top level, for BRequest\n  X: int8\n\n"
        + PAIR.replace("X: int8", "X: S")
        + "\nBRequest => key 1, max version 0\n  S: S\n\nBResponse =>\n  E: int16\n",
        5,
        6,
        "shared only with other messages",
    ),
    "owner that is no message": (
        "S => not top level, for ARequest Nobody\n  X: int8\n\n" + PAIR,
        1,
        34,
        "not a message",
    ),
    "clashing tags, not the latest": (
        "A =>\n  X: int8 // v0-v3, tag 0\n  Y: int8 // v5+, tag 0\n  Z: int8 // v2-v2, tag 0\n",
        4,
        3,
        "tag 0 is already used by X",
    ),
    "used before defined, through for": (
        "S => not top level, for BRequest\n  X: int8\n\nARequest => key 0, max version 0\n  S: S\n\nAResponse =>\n"
        "  E: int16\n\nS => not top level, for ARequest\n  Z: string\n\nBRequest => key 1, max version 0\n  S: S\n\n"
        "BResponse =>\n  E: int16\n",
        5,
        6,
        "defined on line 10, after its use",
    ),
    "default out of range": (
        "ARequest => key 0, max version 0\n  X: int8(300)\n\nAResponse =>\n  E: int16\n",
        2,
        6,
        "bad default '300' for int8",
    ),
    "default that is no number": (
        "ARequest => key 0, max version 0\n  X: int32(abc)\n\nAResponse =>\n  E: int16\n",
        2,
        6,
        "bad default 'abc'",
    ),
    "null default on a string that is not nullable": (
        "ARequest => key 0, max version 0\n  X: string(null)\n\nAResponse =>\n  E: int16\n",
        2,
        6,
        "not nullable",
    ),
    "bool default that is no bool": (
        "ARequest => key 0, max version 0\n  X: bool(yes)\n\nAResponse =>\n  E: int16\n",
        2,
        6,
        "bad default 'yes' for bool",
    ),
    "array default that is not null": (
        "ARequest => key 0, max version 0\n  X: nullable[int8](1)\n\nAResponse =>\n  E: int16\n",
        2,
        15,
        "can only be null",
    ),
}


@pytest.mark.parametrize("case", LOWERING)
def test_lowering_errors_point_into_the_file(case):
    text, line, column, reason = LOWERING[case]
    document = parse_krammar(text, "defs.krammar")
    if case.startswith("clashing tags"):  # tags are checked for every struct, messages or not
        from kafka_protocol_source.spec.krammar import lower_shared_structs

        with pytest.raises(KrammarError) as caught:
            lower_shared_structs(document)
    else:
        with pytest.raises(KrammarError) as caught:
            lower_document(document)
    assert reason in caught.value.reason, caught.value
    assert (caught.value.line, caught.value.column) == (line, column), caught.value


def test_structs_may_share_a_name_when_their_messages_differ():
    text = (
        "S => not top level, for ARequest\n  X: int8\n\nS => not top level, for AResponse\n  Y: string\n\n"
        "ARequest => key 0, max version 0\n  S: S\n\nAResponse =>\n  S: [S]\n"
    )
    messages = lower_document(parse_krammar(text))
    assert [f.name for f in messages["ARequest"].common_structs[0].fields] == ["X"]
    assert [f.name for f in messages["AResponse"].common_structs[0].fields] == ["Y"]
    with pytest.raises(KrammarError, match="already defined on line 1"):
        parse_krammar(text.replace("for AResponse", "for AResponse ARequest"))


def test_a_file_may_open_with_a_comment_of_its_own(tmp_path):
    path = tmp_path / "defs.krammar"
    path.write_text("// About this file.\n//\n// More.\n\n// ARequest's own comment.\n" + PAIR)
    document = parse_krammar(path.read_text())
    assert document.comment == ("// About this file.", "//", "// More.")
    assert document.definitions[0].comment == ("// ARequest's own comment.",)
    assert sorted(load_krammar(path)) == ["ARequest", "AResponse"]
