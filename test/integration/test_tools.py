# SPDX-License-Identifier: BSD-3-Clause
"""The build tools on their own: fetch-upstream's source order and
checksum rule, apply-series over topics, and the patch-queue round trip. Each test
builds a tiny fake release in a temp dir, so nothing touches the network."""
from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path
from typing import Iterator

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def make_release(tmp: Path) -> Path:
    """A release tarball fake-1.0.tar.gz with a configure script and a source file."""
    src = tmp / "fake-1.0"
    src.mkdir()
    (src / "configure").write_text("#!/bin/sh\n")
    (src / "hello.c").write_text('const char *greeting = "hello";\n')
    (src / ".gitignore").write_text("configure\n")   # like upstream: hides generated files
    tarball = tmp / "fake-1.0.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(src, arcname="fake-1.0")
    return tarball


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_pins(tmp: Path, tarball: Path, checksum: str | None = None) -> Path:
    pins = tmp / "upstream.pins"
    pins.write_text("name fake\nversion 1.0\ntopdir fake-1.0\n"
                    f"sha256 {checksum or sha256(tarball)} fake-1.0.tar.gz\n")
    return pins


def fetch(pins: Path, cache: Path, src: Path | None = None) -> subprocess.CompletedProcess[str]:
    args: list[str | Path] = [TOOLS / "fetch-upstream", "--pins", pins, "--cache", cache]
    return run(*args, *(["--src", src] if src else []))


def test_user_tarball_is_verified_and_cached(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    pins, cache = write_pins(tmp_path, tarball), tmp_path / "cache"
    proc = fetch(pins, cache, tarball)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == cache / "fake-1.0.tar.gz"
    assert sha256(cache / "fake-1.0.tar.gz") == sha256(tarball)
    again = fetch(pins, cache)
    assert again.returncode == 0 and "from cache" in again.stderr


def test_checksum_mismatch_is_fatal(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    pins = write_pins(tmp_path, tarball, checksum="0" * 64)
    proc = fetch(pins, tmp_path / "cache", tarball)
    assert proc.returncode != 0
    assert "checksum mismatch" in proc.stderr and sha256(tarball) in proc.stderr
    assert not (tmp_path / "cache" / "fake-1.0.tar.gz").exists()


def test_corrupted_cache_is_fatal(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    pins, cache = write_pins(tmp_path, tarball), tmp_path / "cache"
    cache.mkdir()
    (cache / "fake-1.0.tar.gz").write_bytes(b"not the release")
    proc = fetch(pins, cache)
    assert proc.returncode != 0
    assert "checksum mismatch" in proc.stderr and "cached" in proc.stderr


def test_user_directory_is_used_as_given(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    proc = fetch(write_pins(tmp_path, tarball), tmp_path / "cache", tmp_path / "fake-1.0")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "fake-1.0")
    assert "cannot be checksum-verified" in proc.stderr


def test_every_source_failing_lists_what_was_tried(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    proc = fetch(write_pins(tmp_path, tarball), tmp_path / "cache")
    assert proc.returncode != 0
    assert "could not obtain pristine fake 1.0" in proc.stderr
    for attempt in ("cache", "debian pool: no debian-pool pinned", "apt: no debian-source pinned",
                    "url: none pinned"):
        assert attempt in proc.stderr


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A Debian-like archive on loopback: (its root directory, its URI)."""
    root = tmp_path / "archive"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def apt_dir(tmp: Path, one_line: str, deb822: str) -> Path:
    apt = tmp / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list").write_text(f"deb {one_line} bookworm main\n")
    (apt / "sources.list.d" / "other.sources").write_text(
        f"Types: deb\nURIs: {deb822}\nSuites: sid\nComponents: main\n")
    return apt


def test_orig_tarball_from_the_pool_of_an_apt_source(tmp_path: Path,
                                                      archive: tuple[Path, str]) -> None:
    """The pool path under each archive the apt sources name, in turn: one
    without the tarball, then one with it."""
    root, uri = archive
    tarball = make_release(tmp_path)
    pool = root / "debian" / "pool" / "main" / "f" / "fake"
    pool.mkdir(parents=True)
    shutil.copy(tarball, pool / "fake_1.0.orig.tar.gz")
    pins = tmp_path / "upstream.pins"
    pins.write_text("name fake\nversion 1.0\ntopdir fake-1.0\n"
                    "debian-pool pool/main/f/fake/fake_1.0.orig.tar.gz\n"
                    f"sha256 {sha256(tarball)} fake_1.0.orig.tar.gz\n")
    apt = apt_dir(tmp_path, f"{uri}/elsewhere", f"{uri}/debian/")
    proc = run(TOOLS / "fetch-upstream", "--pins", pins, "--cache", tmp_path / "cache",
               "--apt-dir", apt)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()) == tmp_path / "cache" / "fake_1.0.orig.tar.gz"
    assert f"trying {uri}/elsewhere/pool" in proc.stderr
    assert f"using fake 1.0 from {uri}/debian/pool/main/f/fake/fake_1.0.orig.tar.gz" in proc.stderr


def test_a_pool_tarball_with_another_checksum_is_fatal(tmp_path: Path,
                                                       archive: tuple[Path, str]) -> None:
    root, uri = archive
    tarball = make_release(tmp_path)
    (root / "pool").mkdir()
    (root / "pool" / "fake_1.0.orig.tar.gz").write_bytes(b"not the release")
    pins = tmp_path / "upstream.pins"
    pins.write_text("name fake\nversion 1.0\ntopdir fake-1.0\ndebian-pool pool/fake_1.0.orig.tar.gz\n"
                    f"sha256 {sha256(tarball)} fake_1.0.orig.tar.gz\n")
    proc = run(TOOLS / "fetch-upstream", "--pins", pins, "--cache", tmp_path / "cache",
               "--apt-dir", apt_dir(tmp_path, uri, uri))
    assert proc.returncode != 0 and "checksum mismatch" in proc.stderr
    assert not (tmp_path / "cache" / "fake_1.0.orig.tar.gz").exists()


def test_bad_arguments(tmp_path: Path) -> None:
    proc = run(TOOLS / "fetch-upstream", "--frobnicate")
    assert proc.returncode != 0 and "'--frobnicate'" in proc.stderr
    proc = fetch(tmp_path / "missing.pins", tmp_path / "cache")
    assert proc.returncode != 0 and "missing.pins" in proc.stderr


def write_patch(path: Path, subject: str, file: str, old: str, new: str) -> Path:
    """A git format-patch file changing FILE's one line from old to new."""
    path.write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Dev <dev@example.org>\nDate: Sun, 22 Nov 2026 10:00:00 +0000\n"
        f"Subject: [PATCH] {subject}\n\nBecause.\n---\n"
        f" {file} | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
        f"diff --git a/{file} b/{file}\n--- a/{file}\n+++ b/{file}\n"
        f"@@ -1 +1 @@\n-{old}\n+{new}\n")
    return path


def patch_file(tmp: Path) -> Path:
    patch = write_patch(tmp / "0001-greet.patch", "greet: say hello to stagevar", "hello.c",
                        'const char *greeting = "hello";', 'const char *greeting = "hello stagevar";')
    (tmp / "series").write_text(f"# comment\n{patch.name}\n")
    return tmp / "series"


def topics_layout(patches: Path) -> Path:
    """patches/topics: the topic 'greet' (a directory with its series), then
    a fork-only patch that marks the release as the fork."""
    patch_file(patches / "greet")
    write_patch(patches / "0001-fork-only.patch", "release: say it is the fork", "configure",
                "#!/bin/sh", "#!/bin/sh # fork")
    (patches / "topics").write_text("# topics, then fork-only\ngreet\n0001-fork-only.patch\n")
    return patches / "topics"


def test_apply_series(tmp_path: Path) -> None:
    make_release(tmp_path)
    patches = tmp_path / "patches"
    patches.mkdir()
    series = patch_file(patches)
    proc = run(TOOLS / "apply-series", series, tmp_path / "fake-1.0")
    assert proc.returncode == 0, proc.stderr
    assert "hello stagevar" in (tmp_path / "fake-1.0" / "hello.c").read_text()
    again = run(TOOLS / "apply-series", series, tmp_path / "fake-1.0")
    assert again.returncode != 0 and "does not apply" in again.stderr


def test_apply_series_follows_topic_directories(tmp_path: Path) -> None:
    make_release(tmp_path)
    patches = tmp_path / "patches"
    (patches / "greet").mkdir(parents=True)
    proc = run(TOOLS / "apply-series", topics_layout(patches), tmp_path / "fake-1.0")
    assert proc.returncode == 0, proc.stderr
    assert "TOPIC    greet" in proc.stdout
    assert '"hello stagevar"' in (tmp_path / "fake-1.0" / "hello.c").read_text()
    assert "# fork" in (tmp_path / "fake-1.0" / "configure").read_text()


def test_apply_series_allows_no_fuzz(tmp_path: Path) -> None:
    """A patch whose context no longer matches is refused, not fuzzed in."""
    make_release(tmp_path)
    hello = tmp_path / "fake-1.0" / "hello.c"
    hello.write_text('/* moved on */\nconst char *greeting = "hello";\n')
    patch = tmp_path / "0001-context.patch"
    patch.write_text(
        "diff --git a/hello.c b/hello.c\n--- a/hello.c\n+++ b/hello.c\n"
        "@@ -1,2 +1,2 @@\n /* as it was */\n-const char *greeting = \"hello\";\n"
        "+const char *greeting = \"fuzzed\";\n")
    (tmp_path / "series").write_text(f"{patch.name}\n")
    proc = run(TOOLS / "apply-series", tmp_path / "series", tmp_path / "fake-1.0")
    assert proc.returncode != 0 and "does not apply" in proc.stderr
    assert "fuzzed" not in hello.read_text()


def test_series_naming_a_missing_patch(tmp_path: Path) -> None:
    make_release(tmp_path)
    (tmp_path / "series").write_text("0009-ghost.patch\n")
    proc = run(TOOLS / "apply-series", tmp_path / "series", tmp_path / "fake-1.0")
    assert proc.returncode != 0 and "0009-ghost.patch" in proc.stderr


def snapshot(patches: Path) -> dict[str, bytes]:
    return {str(p.relative_to(patches)): p.read_bytes() for p in sorted(patches.rglob("*")) if p.is_file()}


def export_from_new_tree(tarball: Path, patches: Path, tree: Path) -> dict[str, bytes]:
    proc = run(TOOLS / "patch-queue", "tree", tarball, patches / "topics", tree)
    assert proc.returncode == 0, proc.stderr
    assert (tree / "configure").exists(), "files upstream's .gitignore hides must be committed"
    branches = run("git", "-C", tree, "branch", "--format=%(refname:short)").stdout.split()
    assert sorted(branches) == ["fork", "fork-only", "greet"]
    assert '"hello stagevar"' in (tree / "hello.c").read_text(), "the fork branch is checked out"
    assert "# fork" in (tree / "configure").read_text()
    proc = run(TOOLS / "patch-queue", "export", tree, patches)
    assert proc.returncode == 0, proc.stderr
    return snapshot(patches)


def test_patch_queue_round_trip(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    patches = tmp_path / "patches"
    (patches / "greet").mkdir(parents=True)
    topics_layout(patches)
    first = export_from_new_tree(tarball, patches, tmp_path / "tree1")
    name = "0001-greet-say-hello-to-stagevar.patch"
    fork_only = "0001-release-say-it-is-the-fork.patch"
    assert sorted(first) == [fork_only, f"greet/{name}", "greet/series", "topics"], \
        "export replaces the old patch files"
    assert first["greet/series"].decode().splitlines()[1:] == [name]
    assert first["topics"].decode().splitlines()[-2:] == ["greet", fork_only]
    exported = first[f"greet/{name}"].decode()
    assert "Subject: [PATCH] greet: say hello to stagevar" in exported
    assert '+const char *greeting = "hello stagevar";' in exported
    assert exported.startswith("From 0000000000000000000000000000000000000000 ")

    # `make tree && make export` on an exported series changes nothing.
    assert export_from_new_tree(tarball, patches, tmp_path / "tree2") == first


def test_patch_queue_export_refuses_topics_that_do_not_compose(tmp_path: Path) -> None:
    """A topic edited so that the fork-only patch no longer applies on top
    of it: export says which."""
    tarball = make_release(tmp_path)
    patches = tmp_path / "patches"
    (patches / "greet").mkdir(parents=True)
    topics_layout(patches)
    tree = tmp_path / "tree"
    assert run(TOOLS / "patch-queue", "tree", tarball, patches / "topics", tree).returncode == 0
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    assert run(*git, "checkout", "-q", "greet").returncode == 0
    (tree / "configure").write_text("#!/bin/bash\n")
    assert run(*git, "commit", "-q", "-am", "greet: configure with bash").returncode == 0
    proc = run(TOOLS / "patch-queue", "export", tree, patches)
    assert proc.returncode != 0 and "'fork-only' does not apply" in proc.stderr


def test_patch_queue_refuses_dirty_tree_and_existing_tree(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    patches = tmp_path / "patches"
    (patches / "greet").mkdir(parents=True)
    topics_layout(patches)
    tree = tmp_path / "tree"
    assert run(TOOLS / "patch-queue", "tree", tarball, patches / "topics", tree).returncode == 0
    again = run(TOOLS / "patch-queue", "tree", tarball, patches / "topics", tree)
    assert again.returncode != 0 and "already exists" in again.stderr
    (tree / "hello.c").write_text("uncommitted\n")
    proc = run(TOOLS / "patch-queue", "export", tree, patches)
    assert proc.returncode != 0 and "uncommitted" in proc.stderr
    assert (patches / "greet" / "0001-greet.patch").exists(), "a refused export must not delete patches"


@pytest.mark.parametrize("args", [["tree"], ["export", "x"], ["fork"], ["bogus"]])
def test_patch_queue_usage_errors(args: list[str]) -> None:
    proc = run(TOOLS / "patch-queue", *args)
    assert proc.returncode != 0 and "usage" in proc.stderr
