"""marketplace_rules is shared by the client and the service: the standard library (and
semver for versions, defusedxml for icons, pyahocorasick for the model-text rules' gates)
is all it may import."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import marketplace_rules


def test_rules_import_only_the_standard_library_and_their_few_libraries() -> None:
    names = [
        f"marketplace_rules.{info.name}"
        for info in pkgutil.iter_modules(marketplace_rules.__path__)
    ]
    code = (
        "import importlib, json, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(done.stdout)

    outside = {
        name
        for name in loaded
        if name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] not in {"semver", "defusedxml", "ahocorasick", "_distutils_hack"}
        and not name.startswith(("marketplace_rules", "__"))
        and name != "marketplace"
    }
    assert outside == set()
    assert "marketplace_rules.manifest" in loaded
