"""The build tools on their own: fetch-upstream's source order and
checksum rule, apply-series, and the patch-queue round trip. Each test
builds a tiny fake release in a temp dir, so nothing touches the network."""
from __future__ import annotations

import hashlib
import subprocess
import tarfile
from pathlib import Path

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
    for attempt in ("cache", "apt: no debian-source pinned", "url: none pinned"):
        assert attempt in proc.stderr


def test_bad_arguments(tmp_path: Path) -> None:
    proc = run(TOOLS / "fetch-upstream", "--frobnicate")
    assert proc.returncode != 0 and "'--frobnicate'" in proc.stderr
    proc = fetch(tmp_path / "missing.pins", tmp_path / "cache")
    assert proc.returncode != 0 and "missing.pins" in proc.stderr


def patch_file(tmp: Path) -> Path:
    patch = tmp / "0001-greet.patch"
    patch.write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Dev <dev@example.org>\nDate: Sun, 22 Nov 2026 10:00:00 +0000\n"
        "Subject: [PATCH] greet: say hello to stagevar\n\nBecause.\n---\n"
        " hello.c | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
        "diff --git a/hello.c b/hello.c\n--- a/hello.c\n+++ b/hello.c\n"
        "@@ -1 +1 @@\n-const char *greeting = \"hello\";\n"
        "+const char *greeting = \"hello stagevar\";\n")
    (tmp / "series").write_text(f"# comment\n{patch.name}\n")
    return tmp / "series"


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


def test_series_naming_a_missing_patch(tmp_path: Path) -> None:
    make_release(tmp_path)
    (tmp_path / "series").write_text("0009-ghost.patch\n")
    proc = run(TOOLS / "apply-series", tmp_path / "series", tmp_path / "fake-1.0")
    assert proc.returncode != 0 and "0009-ghost.patch" in proc.stderr


def export_from_new_tree(tarball: Path, patches: Path, tree: Path) -> dict[str, bytes]:
    proc = run(TOOLS / "patch-queue", "tree", tarball, patches / "series", tree)
    assert proc.returncode == 0, proc.stderr
    assert (tree / "configure").exists(), "files upstream's .gitignore hides must be committed"
    proc = run(TOOLS / "patch-queue", "export", tree, patches)
    assert proc.returncode == 0, proc.stderr
    return {p.name: p.read_bytes() for p in patches.iterdir()}


def test_patch_queue_round_trip(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    patches = tmp_path / "patches"
    patches.mkdir()
    patch_file(patches)
    first = export_from_new_tree(tarball, patches, tmp_path / "tree1")
    name = "0001-greet-say-hello-to-stagevar.patch"
    assert sorted(first) == [name, "series"], "export replaces the old patch files"
    assert first["series"].decode().splitlines()[1:] == [name]
    exported = first[name].decode()
    assert "Subject: [PATCH] greet: say hello to stagevar" in exported
    assert '+const char *greeting = "hello stagevar";' in exported
    assert exported.startswith("From 0000000000000000000000000000000000000000 ")

    # `make tree && make export` on an exported series changes nothing.
    assert export_from_new_tree(tarball, patches, tmp_path / "tree2") == first


def test_patch_queue_refuses_dirty_tree_and_existing_tree(tmp_path: Path) -> None:
    tarball = make_release(tmp_path)
    patches = tmp_path / "patches"
    patches.mkdir()
    patch_file(patches)
    tree = tmp_path / "tree"
    assert run(TOOLS / "patch-queue", "tree", tarball, patches / "series", tree).returncode == 0
    again = run(TOOLS / "patch-queue", "tree", tarball, patches / "series", tree)
    assert again.returncode != 0 and "already exists" in again.stderr
    (tree / "hello.c").write_text("uncommitted\n")
    proc = run(TOOLS / "patch-queue", "export", tree, patches)
    assert proc.returncode != 0 and "uncommitted" in proc.stderr
    assert (patches / "0001-greet.patch").exists(), "a refused export must not delete patches"


@pytest.mark.parametrize("args", [["tree"], ["export", "x"], ["bogus"]])
def test_patch_queue_usage_errors(args: list[str]) -> None:
    proc = run(TOOLS / "patch-queue", *args)
    assert proc.returncode != 0 and "usage" in proc.stderr
