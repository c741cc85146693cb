"""The tracing topics carry libstagevar's statistics code inside the
server's tree (upstream takes no dependency on an unpackaged library), as
new files of a patch. common/ stays the one source: every carried copy
must be byte-identical to its original there."""
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


def test_the_new_file_parser_reads_a_patch_exactly() -> None:
    patch = ("diff --git a/x/stagevar/a.c b/x/stagevar/a.c\nnew file mode 100644\n"
             "index 0000000..1111111\n--- /dev/null\n+++ b/x/stagevar/a.c\n"
             "@@ -0,0 +1,2 @@\n+int a;\n+\n-- \n2.39.5\n")
    assert new_files(patch) == {"x/stagevar/a.c": "int a;\n\n"}


@pytest.mark.parametrize("topic", TRACING_TOPICS, ids=lambda t: t.parent.name)
def test_every_carried_copy_is_common_s_file(topic: Path) -> None:
    copies = carried(topic)
    assert copies, f"{topic} carries none of common/'s files"
    for path, text in copies.items():
        assert text == (COMMON / Path(path).name).read_text(), \
            f"{path} in {topic.relative_to(REPO)} differs from common/{Path(path).name}"
