# SPDX-License-Identifier: BSD-3-Clause
"""The tracing topics carry libstagevar's statistics code inside the
server's tree (upstream takes no dependency on an unpackaged library), as
new files of a patch. common/ stays the one source of the code: every
carried copy must be its original there, but for three things. It
carries the licence header of the project it goes into (memcached's
BSD-3-Clause with SPDX, httpd's ASF header) in place of common/'s. Its
comments are its own, written for the server it goes into (upstream
owns what it takes, and a pointer back to this project means nothing
there), so comments and the spacing around code are not compared. And
it may leave out whole top-level items its topic does not use (a
function, a declaration, an #include), so it ships only what its server
calls; every item it keeps is common/'s code, token for token and in
common/'s order. A change to common/'s code fails here until each
topic's copy is changed to match."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMMON = REPO / "common"
# Its C sources: a build leaves generated files (Makefile.in) there too,
# and the suite also runs in copies of the tree that are not checkouts.
SOURCES = {path.name for pattern in ("*.c", "*.h") for path in COMMON.glob(pattern)}
TRACING_TOPICS = sorted(REPO.glob("patches/*/stage-trace"))
NEW_FILE = re.compile(r"^diff --git a/(\S+) b/\S+\nnew file mode \d+\n"
                      r"(?:index \S+\n)?--- /dev/null\n\+\+\+ b/\S+\n"
                      r"@@ -0,0 \+1(?:,(\d+))? @@[^\n]*\n", re.M)
LICENCE = re.compile(r"SPDX-License-Identifier|Licensed to the Apache Software Foundation"
                     r"|Copyright")
LEADING_COMMENT = re.compile(r"\A\s*(/\*.*?\*/|//[^\n]*)[ \t]*\n", re.S)


def new_files(patch: str) -> dict[str, str]:
    """Every file a git format-patch adds, with its whole text."""
    files = {}
    for match in NEW_FILE.finditer(patch):
        count = int(match[2] or 1)
        lines = patch[match.end():].split("\n")[:count]
        assert all(line.startswith("+") for line in lines), match[1]
        files[match[1]] = "".join(line[1:] + "\n" for line in lines)
    return files


def carried(topic: Path) -> dict[str, str]:
    """The topic's new files that are copies of a common/ file: a file of
    that name in a directory named after the library."""
    files: dict[str, str] = {}
    for patch in sorted(topic.glob("*.patch")):
        files |= new_files(patch.read_text())
    return {path: text for path, text in files.items()
            if "stagevar" in Path(path).parent.parts and Path(path).name in SOURCES}


def without_licence(text: str) -> str:
    """The text after its leading licence comments (each one naming a
    licence or a copyright), whatever project's they are."""
    while (m := LEADING_COMMENT.match(text)) and LICENCE.search(m[1]):
        text = text[m.end():]
    return text.lstrip("\n")


def code_only(line: str, in_comment: bool, literals: bool = False) -> tuple[str, bool]:
    """The line's code with comments removed (a space where a block
    comment ends) and, unless literals, string and character literals
    blanked (their braces and semicolons do not count); and whether a
    block comment is still open at its end."""
    out, i = [], 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            in_comment, i = False, end + 2
            out.append(" ")
        elif line.startswith("/*", i):
            in_comment, i = True, i + 2
        elif line.startswith("//", i):
            break
        elif line[i] in "\"'":
            m = re.match(r"""(["'])(?:\\.|(?!\1).)*\1""", line[i:])
            n = len(m[0]) if m else 1
            if literals:
                out.append(line[i:i + n])
            i += n
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_comment


def items(text: str) -> list[str]:
    """Top-level items of C source: each declaration, definition or
    preprocessor line, with the comment lines right above it; a comment
    followed by a blank line is an item of its own. Blank lines at the
    top level separate items and are not part of any."""
    result: list[str] = []
    current: list[str] = []
    depth, in_comment, continued, open_decl = 0, False, False, False
    for line in text.splitlines():
        if not line.strip() and depth == 0 and not in_comment and not open_decl:
            if current:
                result.append("\n".join(current))
            current = []
            continue
        current.append(line)
        code, in_comment = code_only(line, in_comment)
        if depth == 0 and (continued or code.lstrip().startswith("#")):
            continued = line.endswith("\\")
            if not continued:
                result.append("\n".join(current))
                current = []
            continue
        for ch in code:
            depth += {"{": 1, "}": -1}.get(ch, 0)
        stripped = code.strip()
        if depth == 0 and stripped and not in_comment:
            # An item ends with a ';' or with the '}' of a function body;
            # '} name;' (a typedef) and '};' end with their ';'.
            open_decl = not (stripped.endswith(";") or stripped == "}")
            if not open_decl:
                result.append("\n".join(current))
                current = []
    if current:
        result.append("\n".join(current))
    return result


def code_of(item: str) -> str:
    """The item's code: its comments removed, every run of whitespace
    one space. String and character literals are kept as written."""
    out, in_comment = [], False
    for line in item.splitlines():
        code, in_comment = code_only(line, in_comment, literals=True)
        out.append(code)
    return " ".join(" ".join(out).split())


def missing_from(copy: str, original: str) -> str | None:
    """None if the code of the copy's items is the original's, some
    items left out, in the original's order; else the first item whose
    code is not. Items that are only comments count for nothing."""
    theirs = [code_of(item) for item in items(without_licence(original))]
    at = 0
    for item in items(without_licence(copy)):
        code = code_of(item)
        if not code:
            continue
        try:
            at = theirs.index(code, at) + 1
        except ValueError:
            return item
    return None


def test_the_new_file_parser_reads_a_patch_exactly() -> None:
    patch = ("diff --git a/x/stagevar/a.c b/x/stagevar/a.c\nnew file mode 100644\n"
             "index 0000000..1111111\n--- /dev/null\n+++ b/x/stagevar/a.c\n"
             "@@ -0,0 +1,2 @@\n+int a;\n+\n-- \n2.39.5\n")
    assert new_files(patch) == {"x/stagevar/a.c": "int a;\n\n"}


ORIGINAL = """/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the file does.
 */

#include <stdio.h>
#include "x.h"

/* "{" in a comment */
typedef struct {
    int a;
} pair;

/* Two lines of
 * comment. */
int used(int x);
int unused(void);

static int helper(int x)
{
    return x + '}';
}

int used(int x)
{
    int y = helper(x);

    return y;
}

int unused(void)
{
    return 0;
}
"""


def test_items_split_top_level_code_only() -> None:
    assert items(without_licence(ORIGINAL)) == [
        "/*\n * What the file does.\n */", "#include <stdio.h>", '#include "x.h"',
        '/* "{" in a comment */\ntypedef struct {\n    int a;\n} pair;',
        "/* Two lines of\n * comment. */\nint used(int x);", "int unused(void);",
        "static int helper(int x)\n{\n    return x + '}';\n}",
        "int used(int x)\n{\n    int y = helper(x);\n\n    return y;\n}",
        "int unused(void)\n{\n    return 0;\n}"]


def test_a_copy_may_change_its_licence_and_leave_out_whole_items() -> None:
    asf = "/* Licensed to the Apache Software Foundation (ASF) under one\n * ... */\n\n"
    copy = ORIGINAL.replace("/* SPDX-License-Identifier: BSD-3-Clause */\n", asf)
    copy = copy.replace("#include <stdio.h>\n", "").replace("int unused(void);\n", "")
    copy = copy[:copy.index("int unused(void)\n{")]
    assert missing_from(copy, ORIGINAL) is None


def test_a_copy_may_write_its_own_comments() -> None:
    copy = ORIGINAL.replace(" * What the file does.\n", " * What it does here.\n")
    copy = copy.replace('/* "{" in a comment */\n', "/* A pair, as this server\n * uses it. */\n")
    copy = copy.replace("/* Two lines of\n * comment. */\n", "")
    copy = copy.replace("    return y;", "    return y; /* the sum */")
    assert missing_from(copy, ORIGINAL) is None


@pytest.mark.parametrize("change", [
    ("    int y = helper(x);\n", "    int y = helper(x) + 1;\n"),  # inside a function
    ("    int a;\n", "    int a;\n    int b;\n"),                  # a kept item grown
    ("return x + '}';", "return x + '{';"),                       # a literal
    ("    int a;\n", "    /* int a; */\n"),                       # code made a comment
])
def test_a_copy_may_not_change_the_code_it_keeps(change: tuple[str, str]) -> None:
    assert ORIGINAL.replace(*change) != ORIGINAL
    assert missing_from(ORIGINAL.replace(*change), ORIGINAL) is not None


def test_a_copy_keeps_common_s_order() -> None:
    helper = "static int helper(int x)\n{\n    return x + '}';\n}\n\n"
    moved = ORIGINAL.replace(helper, "") + "\n" + helper
    assert missing_from(moved, ORIGINAL) is not None


@pytest.mark.parametrize("topic", TRACING_TOPICS, ids=lambda t: t.parent.name)
def test_every_carried_copy_is_common_s_file(topic: Path) -> None:
    copies = carried(topic)
    assert copies, f"{topic} carries none of common/'s files"
    for path, text in copies.items():
        assert LICENCE.search(text.split("*/")[0]), f"{path}: no licence header"
        item = missing_from(text, (COMMON / Path(path).name).read_text())
        assert item is None, (f"{path} in {topic.relative_to(REPO)} is not "
                              f"common/{Path(path).name}: it has\n{item}")
