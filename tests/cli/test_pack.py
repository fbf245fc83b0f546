from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from marketplace_client.pack import (
    PackError,
    collect,
    listing,
    pack,
    select,
    sha256_file,
    total_size,
)

from .fake_api import FakeApi
from .helpers import Invoke, make_plugin, stdout_json


def members(archive: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(archive, "r:gz") as tar:
        return {member.name: member for member in tar.getmembers()}


def read_member(archive: Path, name: str) -> bytes:
    with tarfile.open(archive, "r:gz") as tar:
        handle = tar.extractfile(name)
        assert handle is not None
        return handle.read()


def test_same_folder_gives_the_same_sha256(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src", files={"lib/a.js": "a", "lib/b.js": "b"})
    first = pack(directory, tmp_path / "one.tar.gz")
    second = pack(directory, tmp_path / "two.tar.gz")
    assert first.sha256 == second.sha256 == sha256_file(tmp_path / "two.tar.gz")


def test_sha256_ignores_mtimes_and_permissions_beyond_exec(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src", files={"lib/a.js": "a"})
    before = pack(directory, tmp_path / "before.tar.gz").sha256
    for path in directory.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    (directory / "lib" / "a.js").chmod(0o600)
    after = pack(directory, tmp_path / "after.tar.gz").sha256
    assert after == before


def test_members_are_sorted_with_fixed_metadata(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src", files={"z.js": "z", "a/b.js": "b", "run.sh": "x"})
    (directory / "run.sh").chmod(0o755)
    result = pack(directory, tmp_path / "p.tar.gz")
    found = members(result.path)
    assert list(found) == ["a/b.js", "index.js", "manifest.json", "run.sh", "z.js"]
    for member in found.values():
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (
            0,
            0,
            0,
            "",
            "",
        )
        assert member.isfile()
    assert found["run.sh"].mode == 0o755
    assert found["z.js"].mode == 0o644


def test_gzip_header_has_no_mtime_and_no_file_name(tmp_path: Path) -> None:
    result = pack(make_plugin(tmp_path / "src"), tmp_path / "named-package.tar.gz")
    header = result.path.read_bytes()[:10]
    assert header[:2] == b"\x1f\x8b"
    assert header[3] & 0x08 == 0  # FNAME flag
    assert header[4:8] == b"\x00\x00\x00\x00"  # MTIME
    assert b"named-package" not in result.path.read_bytes()


def test_exclusions_are_left_out_of_the_archive(tmp_path: Path) -> None:
    directory = make_plugin(
        tmp_path / "src",
        files={
            "node_modules/dep/index.js": "dep",
            "lib/node_modules/x.js": "x",
            ".git/HEAD": "ref",
            ".DS_Store": "finder",
            "lib/.DS_Store": "finder",
            "old-1.0.0.tar.gz": b"old",
            "dist/build.tar.gz": b"old",
            "lib/keep.js": "keep",
            ".gitignore": "kept",
            "notes.tar": "kept",
        },
    )
    result = pack(directory, tmp_path / "p.tar.gz")
    assert sorted(members(result.path)) == [
        ".gitignore",
        "index.js",
        "lib/keep.js",
        "manifest.json",
        "notes.tar",
    ]


def test_listing_is_what_the_package_would_hold(tmp_path: Path) -> None:
    directory = make_plugin(
        tmp_path / "src",
        files={"node_modules/dep/index.js": "dep", "old.tar.gz": b"old", "lib/a.js": "abc"},
    )
    (directory / "alias.js").symlink_to(directory / "lib" / "a.js")
    (tmp_path / "secret.txt").write_text("secret")
    # Packing refuses these; the listing leaves them out.
    (directory / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (directory / "dangling.js").symlink_to(directory / "missing.js")
    (directory / "linked-folder").symlink_to(directory / "lib")

    found = listing(directory)

    size = {name: (directory / name).stat().st_size for name in ("manifest.json", "index.js")}
    assert found.files == {**size, "lib/a.js": 3, "alias.js": 3}
    assert found.symlinks == {}


def test_manifest_override_replaces_manifest_json(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src")
    override = b'{"id": "demo-plugin", "version": "9.9.9"}\n'
    result = pack(directory, tmp_path / "p.tar.gz", manifest_override=override)
    assert read_member(result.path, "manifest.json") == override
    assert json.loads((directory / "manifest.json").read_text())["version"] == "1.0.0"


def test_folder_without_manifest_cannot_be_packed(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(PackError, match=r"no manifest\.json"):
        collect(tmp_path / "empty")


def test_symlink_outside_the_folder_is_refused(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src")
    (tmp_path / "secret.txt").write_text("secret")
    (directory / "leak.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(PackError, match="outside the folder"):
        collect(directory)


def test_symlink_inside_the_folder_is_packed_as_a_file(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src")
    (directory / "alias.js").symlink_to(directory / "index.js")
    result = pack(directory, tmp_path / "p.tar.gz")
    assert read_member(result.path, "alias.js") == (directory / "index.js").read_bytes()


def test_pack_reports_progress_in_bytes_read(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src", files={"big.bin": b"x" * 300_000})
    entries = collect(directory)
    seen: list[int] = []
    pack(directory, tmp_path / "p.tar.gz", entries=entries, on_progress=seen.append)
    assert seen == sorted(seen)
    assert seen[-1] == total_size(entries)
    assert len(seen) > len(entries)  # large files report more than once


def test_failed_pack_leaves_no_partial_file(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src")
    entries = collect(directory)
    (directory / "index.js").unlink()
    out = tmp_path / "out"
    with pytest.raises(FileNotFoundError):
        pack(directory, out / "p.tar.gz", entries=entries)
    assert list(out.iterdir()) == []


def test_skip_upload_packs_prints_and_keeps_the_file(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path / "src")
    target = tmp_path / "dist" / "demo.tar.gz"
    result = invoke(["publish", str(directory), "--skip-upload", "-o", str(target)], auth=False)
    assert result.exit_code == 0, result.output
    assert str(target) in result.stdout
    assert sha256_file(target) in result.stdout
    assert fake.requests == []


def test_skip_upload_with_version_rewrites_the_packaged_manifest(
    tmp_path: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = make_plugin(tmp_path / "src")
    monkeypatch.chdir(tmp_path)
    result = invoke(
        ["publish", str(directory), "--skip-upload", "--version", "1.2.0", "--json"], auth=False
    )
    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    assert data["path"] == str(tmp_path / "demo-plugin-1.2.0.tar.gz")
    assert data["status"] == "packed"
    packaged = json.loads(read_member(Path(data["path"]), "manifest.json"))
    assert packaged["version"] == "1.2.0"
    assert packaged["name"] == "Demo Plugin"
    assert json.loads((directory / "manifest.json").read_text())["version"] == "1.0.0"


def test_pack_output_is_a_plain_gzip_tar(tmp_path: Path) -> None:
    result = pack(make_plugin(tmp_path / "src"), tmp_path / "p.tar.gz")
    raw = gzip.decompress(result.path.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        assert "manifest.json" in tar.getnames()


# .marketplaceignore and the sensitive defaults


def test_marketplaceignore_leaves_out_what_it_names_in_gitignore_syntax(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "build/out.js": "o",
        "src/keep.js": "k",
        "src/debug.log": "d",
        "docs/notes.md": "n",
        "docs/README.md": "r",
        ".marketplaceignore": "build/\n*.log\n/docs/*\n!/docs/README.md\n",
    }
    directory = make_plugin(tmp_path / "src", files=files)

    result = pack(directory, tmp_path / "p.tar.gz")

    assert list(members(result.path)) == [
        "docs/README.md",
        "index.js",
        "manifest.json",
        "src/keep.js",
    ]


def test_env_files_and_private_keys_are_left_out_by_default_and_named(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        ".env": "A=1",
        "config/.env.production": "B=2",
        "certs/server.pem": "-",
        "certs/server.key": "-",
        "ssh/id_rsa": "-",
        "ssh/id_ed25519.pub": "-",
        "lib/environment.js": "fine",
    }
    directory = make_plugin(tmp_path / "src", files=files)

    selection = select(directory)

    assert [entry.arcname for entry in selection.entries] == [
        "index.js",
        "lib/environment.js",
        "manifest.json",
    ]
    assert selection.secrets_left_out == [
        ".env",
        "certs/server.key",
        "certs/server.pem",
        "config/.env.production",
        "ssh/id_ed25519.pub",
        "ssh/id_rsa",
    ]


def test_marketplaceignore_can_re_include_a_default_excluded_file(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        ".env.example": "A=",
        ".env": "A=1",
        ".marketplaceignore": "!.env.example\n",
    }
    directory = make_plugin(tmp_path / "src", files=files)

    selection = select(directory)

    assert [entry.arcname for entry in selection.entries] == [
        ".env.example",
        "index.js",
        "manifest.json",
    ]
    assert selection.secrets_left_out == [".env"]


def test_listing_follows_the_same_rules_as_packing(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        ".env": "A=1",
        "dist/x.js": "x",
        ".marketplaceignore": "dist/\n",
    }
    directory = make_plugin(tmp_path / "src", files=files)

    assert set(listing(directory).files) == {"index.js", "manifest.json"}


def test_unreadable_ignore_file_is_a_pack_error(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src")
    (directory / ".marketplaceignore").write_bytes(b"\xff\xfe\x00bad")

    with pytest.raises(PackError, match=r"\.marketplaceignore: cannot be read as UTF-8 text"):
        collect(directory)


def test_skip_upload_warns_about_the_secrets_it_leaves_out(tmp_path: Path, invoke: Invoke) -> None:
    directory = make_plugin(tmp_path / "src", files={".env": "A=1", "keys/deploy.pem": "-"})

    result = invoke(["publish", str(directory), "--skip-upload", "-o", str(tmp_path / "p.tgz")])

    assert result.exit_code == 0, result.output
    assert (
        "warning: demo-plugin: not packed, as they usually hold secrets: .env, keys/deploy.pem "
        "(re-include one with a `!name` line in .marketplaceignore)"
    ) in result.stderr
    assert list(members(tmp_path / "p.tgz")) == ["index.js", "manifest.json"]


def test_validate_with_an_unreadable_ignore_file_is_a_usage_error(
    tmp_path: Path, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path / "src")
    (directory / ".marketplaceignore").write_bytes(b"\xff\xfe\x00bad")

    result = invoke(["validate", str(directory)], auth=False)

    assert result.exit_code == 2
    assert "error: USAGE: .marketplaceignore: cannot be read as UTF-8 text" in result.stderr
    assert "Traceback" not in result.output


def test_invalid_ignore_pattern_is_a_pack_error_naming_its_line(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src", files={".marketplaceignore": "dist/\n!\n"})

    with pytest.raises(PackError, match=r"^\.marketplaceignore, line 2: '!' is not a pattern$"):
        collect(directory)


def test_a_folder_the_secret_defaults_leave_out_is_named_in_the_warning(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {"certs.key/README": "r", ".envoy/routes.yaml": "x"}
    directory = make_plugin(tmp_path / "src", files=files)

    selection = select(directory)

    assert [entry.arcname for entry in selection.entries] == ["index.js", "manifest.json"]
    assert selection.secrets_left_out == [".envoy/", "certs.key/"]


def test_an_invalid_range_in_the_ignore_file_names_its_line(tmp_path: Path) -> None:
    directory = make_plugin(tmp_path / "src", files={".marketplaceignore": "dist/\n[z-a]\n"})

    with pytest.raises(PackError, match=r"\.marketplaceignore, line 2: '\[z-a\]' is not a pattern"):
        select(directory)


def test_an_unreadable_file_is_an_error_line_not_a_traceback(
    tmp_path: Path, invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = make_plugin(tmp_path / "src")
    secret = directory / "index.js"

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(secret))

    monkeypatch.setattr("marketplace_client.pack.tarfile.TarFile.addfile", refuse)

    result = invoke(["publish", str(directory), "--skip-upload"], auth=False)

    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: IO_ERROR: {secret}: Permission denied"
    assert "Traceback" not in result.output


def test_names_that_differ_only_in_case_are_refused(tmp_path: Path, invoke: Invoke) -> None:
    directory = make_plugin(tmp_path / "src", files={"README.md": "a"})
    (directory / "readme.md").write_text("b")
    if not {"README.md", "readme.md"} <= {p.name for p in directory.iterdir()}:
        pytest.skip("a case-insensitive file system cannot hold both names")

    with pytest.raises(PackError, match=r"differ only in case: README\.md and readme\.md"):
        select(directory)
    result = invoke(["publish", str(directory), "--skip-upload"], auth=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: PACK_FAILED: names that differ only in case: README.md and readme.md "
        "(the service refuses such a package)"
    )


def test_more_files_than_the_service_takes_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = make_plugin(tmp_path / "src", files={"a.js": "a", "b.js": "b"})
    monkeypatch.setattr("marketplace_client.pack.ARCHIVE_MAX_MEMBERS", 3)

    with pytest.raises(PackError, match="holds 4 files to pack, over the service's limit of 3"):
        select(directory)
