"""One entry of the transparency log (CONTRACT 15), as a reviewer reads it from the audit log:
its fields, its exact bytes and leaf hash, and whether the current signed checkpoint includes
it (the service checks its own inclusion proof, as a client would)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Path, Request, Response

from marketplace.admin_console.kinds import AUDIT_LINKS
from marketplace.db import DbSession
from marketplace.plugins.kind import PLUGINS
from marketplace.scenarios.kind import SCENARIOS
from marketplace.transparency import proofs
from marketplace.web.deps import SignedInAccount
from marketplace.web.http import PageRefused, page, site_router
from marketplace.web.sites import CONSOLE
from marketplace_rules.canonical import b64encode
from marketplace_rules.merkle import leaf_hash, verify_inclusion

router = site_router(CONSOLE)

VERSION_LINKS = {
    PLUGINS.name: AUDIT_LINKS[PLUGINS.version_resource],
    SCENARIOS.name: AUDIT_LINKS[SCENARIOS.version_resource],
}


@router.get("/console/log/{index}")
async def log_entry_page(
    request: Request,
    _reviewer: SignedInAccount,
    db: DbSession,
    index: Annotated[int, Path(ge=0, le=2**40)],
) -> Response:
    tree = await proofs.current_tree(db)
    rows = await proofs.entries(db, index, index + 1)
    if index >= tree.size or not rows:
        raise PageRefused(404, f"The transparency log has no entry {index}.")
    leaf = rows[0][1]
    fields: dict[str, Any] = json.loads(leaf)
    proof = await proofs.inclusion_proof(db, index, tree.size)
    included = verify_inclusion(leaf_hash(leaf), index, tree.size, proof, tree.root())
    version_link = None
    if fields.get("action") in ("approve", "takedown") and fields.get("kind") in VERSION_LINKS:
        subject = await proofs.subject_of(db, index)
        version_link = VERSION_LINKS[fields["kind"]].format(subject)
    return page(
        request,
        "log_entry.html",
        title=f"Log entry {index}",
        nav="audit",
        index=index,
        fields=fields,
        leaf=leaf.decode("utf-8"),
        leaf_hash=leaf_hash(leaf).hex(),
        tree_size=tree.size,
        root_hash=b64encode(tree.root()),
        included=included,
        proof_length=len(proof),
        version_link=version_link,
    )
