"""The Changes and Files sections, rendered from `ChangesView` (the diff module's seam)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from marketplace.admin_console import versions
from marketplace.admin_console.changes import (
    ChangedFile,
    ChangesView,
    DiffLine,
    FileRow,
    ManifestChange,
    TextDiff,
)
from marketplace.models import ReviewStatus
from tests.admin_console.helpers import logged_in, text_of
from tests.factories import Factory
from tests.helpers import ok
from tests.packages.tarballs import package
from tests.plugins.helpers import publish, review_plugin
from tests.plugins.test_upload import tool_manifest, upload

UNIFIED = """--- a/index.js
+++ b/index.js
@@ -1,2 +1,2 @@
 export default function main() {
-  return 1;
+  return "<img src=x onerror=alert(1)>";
"""

VIEW = ChangesView(
    base_version="1.0.0",
    files_added=(FileRow("lib/net.js", 2048),),
    files_removed=(FileRow("old.js", 10),),
    files_changed=(ChangedFile("index.js", 40, 52),),
    manifest_changes=(
        ManifestChange("permissions", ["fs:read"], ["fs:read", "net:fetch"]),
        ManifestChange("homepage", None, "https://example.com", added=True),
    ),
    new_permissions=("net:fetch",),
    text_diffs=(TextDiff("index.js", UNIFIED), TextDiff("logo.png", "", note="Binary file")),
    files=(FileRow("index.js", 52), FileRow("lib/net.js", 2048), FileRow("manifest.json", 300)),
)


def test_unified_diff_lines_are_classified_for_colouring() -> None:
    kinds = [line.kind for line in TextDiff("index.js", UNIFIED).lines]
    assert kinds == ["header", "header", "hunk", "context", "remove", "add"]
    assert TextDiff("a", "@@ -1 +1 @@\n+x").lines[1] == DiffLine("add", "+x")
    # Inside a hunk, a removed "-- note" line is a removal, not a header.
    assert TextDiff("a", "@@ -1 +1 @@\n--- note\n+++ more").lines[1:] == [
        DiffLine("remove", "--- note"),
        DiffLine("add", "+++ more"),
    ]


async def test_a_version_whose_package_cannot_be_read_says_so_in_both_sections(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    # The factory's version row names a blob nobody stored (invariant 3 broken on purpose).
    admin = await factory.admin()
    version = await factory.version(await factory.plugin(), review_status=ReviewStatus.PENDING)
    await logged_in(client, admin)
    page = text_of((await client.get(f"/console/plugins/versions/{version.id}")).text)
    assert "Changes are not available for this version" in page
    assert "The file listing is not available for this version" in page


@pytest.fixture
def wired(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake(*_args: Any) -> ChangesView:
        return VIEW

    monkeypatch.setattr(versions, "load_changes", fake)


@pytest.mark.usefixtures("wired")
async def test_changes_show_files_permissions_manifest_and_diffs(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    version = await factory.version(await factory.plugin(), review_status=ReviewStatus.PENDING)
    await logged_in(client, admin)
    page = (await client.get(f"/console/plugins/versions/{version.id}")).text
    changes = page[page.index('id="changes"') : page.index('id="files"')]
    text = text_of(changes)
    assert "Compared with the last approved version, 1.0.0" in text
    assert "New permissions net:fetch" in text
    assert "added lib/net.js 2.0 KiB" in text
    assert "removed old.js 10 B" in text
    assert "changed index.js 40 B → 52 B" in text
    assert 'class="diff-line diff-remove">-  return 1;' in changes
    assert 'class="diff-line diff-add">+  return &#34;&lt;img src=x onerror=alert(1)&gt;&#34;;' in (
        changes
    )
    assert "<img src=x" not in changes
    assert "logo.png Binary file" in text
    files = text_of(page[page.index('id="files"') : page.index('id="manifest"')])
    assert "index.js 52 B lib/net.js 2.0 KiB manifest.json 300 B" in files


async def test_the_version_page_shows_the_real_diff_against_the_approved_version(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    dev, admin = await factory.developer(), await factory.admin()
    plugin = await publish(client, dev, type="tool", category="utility")
    key = plugin["pluginKey"]
    first = package(
        tool_manifest(key, "1.0.0", permissions=["fs:read"]),
        {"index.js": b"export default function main() {\n  return 1;\n}\n", "old.js": b"x"},
    )
    ok(await upload(client, dev, plugin, first, "1.0.0"), 201)
    ok(await review_plugin(client, admin, plugin["id"], approved=True, approvePendingVersion=True))
    second = package(
        tool_manifest(key, "1.1.0", permissions=["fs:read", "net:fetch"]),
        {
            "index.js": b"export default function main() {\n  return 2;\n}\n",
            "lib/net.js": b"export const fetchIt = () => fetch('https://example.com');\n",
        },
    )
    head = ok(await upload(client, dev, plugin, second, "1.1.0"), 201)
    await logged_in(client, admin)
    page = (await client.get(f"/console/plugins/versions/{head['id']}")).text
    changes = page[page.index('id="changes"') : page.index('id="files"')]
    text = text_of(changes)
    assert "Compared with the last approved version, 1.0.0" in text
    assert "New permissions net:fetch" in text
    assert "added lib/net.js" in text
    assert "removed old.js" in text
    assert "changed index.js" in text
    assert 'class="diff-line diff-remove">-  return 1;' in changes
    assert 'class="diff-line diff-add">+  return 2;' in changes
    files = text_of(page[page.index('id="files"') : page.index('id="manifest"')])
    assert "index.js" in files and "lib/net.js" in files and "old.js" not in files
    # The reviewer's finding and the API's diff say the same as the page.
    assert "permission-added" in text_of(page)
    diff = ok(
        await client.get(f"/api/v1/admin/plugins/versions/{head['id']}/diff", headers=admin.headers)
    )
    assert diff["newPermissions"] == ["net:fetch"]
    assert [f["path"] for f in diff["files"]["added"]] == ["lib/net.js"]
