"""What the registry keeps as accepted, and what counts as more than accepted
(`marketplace_client.capabilities`)."""

from __future__ import annotations

from typing import Any

import pytest

from marketplace_client.capabilities import (
    Accepted,
    Capabilities,
    Item,
    accepted_after,
    beyond,
    parse_capabilities,
)

from .capabilities_fakes import KEY, capabilities, prompt, tool


def shown(**fields: Any) -> Capabilities:
    return parse_capabilities(capabilities(**fields), KEY, fields.get("version", "1.0.0"))


def item(entry: dict[str, Any]) -> Item:
    return Item(entry["name"], entry["description"], entry["fingerprint"])


A, B, B2 = tool("a"), tool("b"), tool("b", tag="v2")
P, P2 = prompt("p"), prompt("p", tag="v2")


def test_a_complete_inspection_replaces_what_was_accepted() -> None:
    before = accepted_after(None, shown(tools=[A, B], declared=["fs.write"]))
    after = accepted_after(before, shown(version="2.0.0", tools=[B2], declared=["network:x"]))
    assert (after.version, after.tools, after.permissions) == (
        "2.0.0",
        {"b": B2["fingerprint"]},
        ("network:x",),
    )


@pytest.mark.parametrize("status", ["queued", "running", "failed"])
def test_a_partial_inspection_adds_to_what_was_accepted(status: str) -> None:
    before = accepted_after(None, shown(tools=[A], prompts=[P], declared=["fs.write"]))
    after = accepted_after(before, shown(version="2.0.0", status=status, declared=["net:y"]))
    assert (after.status, after.tools, after.prompts, after.permissions) == (
        status,
        {"a": A["fingerprint"]},
        {"p": P["fingerprint"]},
        ("fs.write", "net:y"),
    )
    assert after.tool_descriptions == {"a": "Does a thing"}


def test_the_record_survives_the_registry_round_trip() -> None:
    record = accepted_after(None, shown(tools=[A], prompts=[P], undeclared=["secrets.read"]))
    assert Accepted.from_entry({"accepted": record.to_json()}) == record


@pytest.mark.parametrize(
    "entry",
    [{}, {"accepted": None}, {"accepted": ["a"]}, {"accepted": "yes"}, None],
    ids=["absent", "null", "list", "text", "no-entry"],
)
def test_no_record_or_one_that_is_not_an_object_is_nothing_recorded(
    entry: dict[str, Any] | None,
) -> None:
    assert Accepted.from_entry(entry) is None
    found = beyond(Accepted.from_entry(entry), shown(tools=[A], declared=["fs.write"]))
    assert found.nothing_recorded
    assert found.summary() == "adds tool a; asks for permission fs.write"


def test_malformed_parts_of_a_record_count_as_not_accepted() -> None:
    record = Accepted.from_entry(
        {"accepted": {"tools": {"a": 1, "b": B["fingerprint"]}, "permissions": "fs.write"}}
    )
    assert record is not None
    found = beyond(record, shown(tools=[A, B], declared=["fs.write"]))
    assert [t.name for t in found.tools_added] == ["a"]
    assert found.permissions == ("fs.write",)


def test_what_counts_as_more_than_accepted() -> None:
    record = accepted_after(None, shown(tools=[A, B], prompts=[P], declared=["network:*", "fs"]))
    same = beyond(record, shown(tools=[A], declared=["network:api.example.com", "fs.write"]))
    assert not same  # a tool removed, covered permissions: nothing to ask
    prompt_added = beyond(record, shown(tools=[A, B], prompts=[P, prompt("q")]))
    assert not prompt_added  # CONTRACT 13 asks about tools added, not prompts
    changed = beyond(record, shown(tools=[A, B2], prompts=[P2], declared=["secrets.read"]))
    assert changed.summary() == (
        "changes tool b; changes prompt p; asks for permission secrets.read"
    )
    assert [(c.name, c.before, c.after) for c in changed.tools_changed] == [
        ("b", "Does a thing", "Does a thing")
    ]


def test_a_long_list_of_names_is_counted() -> None:
    tools = [tool(f"t{i}") for i in range(8)]
    found = beyond(None, shown(tools=tools))
    assert found.summary() == "adds tools t0, t1, t2, t3, t4 and 3 more"
    assert [t.name for t in found.tools_added] == [item(t).name for t in tools]


def test_descriptions_kept_in_the_registry_are_capped() -> None:
    record = accepted_after(None, shown(tools=[tool("long", "x" * 5000)]))
    assert record.tool_descriptions == {"long": "x" * 1000}
