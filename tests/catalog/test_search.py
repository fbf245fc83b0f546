"""Browse q: case-insensitive substrings of pluginKey, names, descriptions and tags."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from marketplace.catalog.search import walk_is_cheaper
from tests.factories import Factory
from tests.helpers import err, field_names, ok

BROWSE = "/api/v1/plugins/browse"


async def found(client: httpx.AsyncClient, q: str, **params: Any) -> list[str]:
    data = ok(await client.get(BROWSE, params={"q": q, "pageSize": 100, **params}))
    assert data["total"] == len(data["items"])
    return sorted(item["pluginKey"] for item in data["items"])


@pytest.mark.parametrize(
    ("field", "value", "query"),
    [
        ("plugin_key", "weather-station", "ther-sta"),
        ("name", "Weather Station", "her st"),
        ("name_zh", "天气预报站", "预报"),
        ("description", "Forecasts for every city", "every ci"),
        ("description_zh", "为每个城市提供天气预报", "个城市"),
    ],
)
async def test_search_finds_a_substring_of_each_field(
    client: httpx.AsyncClient, factory: Factory, field: str, value: str, query: str
) -> None:
    await factory.plugin(plugin_key="other-one", name="Other", name_zh="其他", description="x")
    overrides: dict[str, Any] = {field: value}
    if field != "plugin_key":
        overrides["plugin_key"] = "target"
    target = await factory.plugin(**overrides)
    assert await found(client, query) == [target.plugin_key]


async def test_search_finds_a_tag(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="tagged", tags=["postgres", "数据仓库"])
    await factory.plugin(plugin_key="untagged")
    assert await found(client, "stgr") == ["tagged"]
    assert await found(client, "仓库") == ["tagged"]


async def test_search_ignores_case(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="shouty", name="GitHub ISSUES")
    assert await found(client, "github issues") == ["shouty"]
    assert await found(client, "hUb") == ["shouty"]
    assert await found(client, "Is") == ["shouty"]


async def test_search_two_character_chinese_word(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="db-tool", description_zh="连接数据库并查询")
    await factory.plugin(plugin_key="near-miss", description_zh="数字和据点")
    assert await found(client, "数据") == ["db-tool"]


async def test_search_single_character(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="has-char", name_zh="图表")
    await factory.plugin(plugin_key="lacks-char", name_zh="文档")
    assert await found(client, "图") == ["has-char"]


async def test_search_single_latin_letter(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(
        plugin_key="has-q", name="Queue", name_zh="队列", description="d", description_zh="d"
    )
    await factory.plugin(
        plugin_key="no-letter", name="Bin", name_zh="桶", description="d", description_zh="d"
    )
    assert await found(client, "Q") == ["has-q"]


async def test_search_does_not_match_across_two_fields(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="split-key", name="abc", name_zh="def")
    assert await found(client, "cd") == []
    assert await found(client, "bcde") == []


@pytest.mark.parametrize("query", ["100%", "a_b", "x\\y"])
async def test_search_treats_like_wildcards_literally(
    client: httpx.AsyncClient, factory: Factory, query: str
) -> None:
    await factory.plugin(plugin_key="literal", description=f"exactly {query} here")
    await factory.plugin(plugin_key="lookalike", description="exactly 1000 or aXb or xzy here")
    assert await found(client, query) == ["literal"]


@pytest.mark.parametrize("query", ['say "hi"', "c++", "AND", "a*", "-x", "NOT:me", "^("])
async def test_search_treats_fts_syntax_literally(
    client: httpx.AsyncClient, factory: Factory, query: str
) -> None:
    await factory.plugin(plugin_key="literal", description=f"<{query}>")
    await factory.plugin(plugin_key="other", description="nothing to see")
    assert await found(client, query) == ["literal"]


async def test_search_strips_surrounding_spaces(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="spaced", name="Calendar")
    assert await found(client, "  calend  ") == ["spaced"]


async def test_search_blank_query_lists_everything(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="one")
    await factory.plugin(plugin_key="two")
    assert await found(client, "   ") == ["one", "two"]


async def test_search_excludes_unlisted_plugins(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="listed-cal", name="Calendar")
    await factory.plugin(plugin_key="pending-cal", name="Calendar", review_status="pending")
    await factory.plugin(plugin_key="down-cal", name="Calendar", review_status="taken_down")
    assert await found(client, "calendar") == ["listed-cal"]
    assert await found(client, "ca") == ["listed-cal"]


async def test_search_follows_a_rename(client: httpx.AsyncClient, factory: Factory) -> None:
    plugin = await factory.plugin(plugin_key="renamed", name="Old Title", name_zh="旧名")
    await factory.update_plugin(plugin, name="New Title", name_zh="新名")
    assert await found(client, "old tit") == []
    assert await found(client, "旧") == []
    assert await found(client, "new tit") == ["renamed"]
    assert await found(client, "新") == ["renamed"]


async def test_search_forgets_a_deleted_plugin(
    client: httpx.AsyncClient, factory: Factory, sessionmaker
) -> None:
    from sqlalchemy import delete

    from marketplace.models import Plugin

    plugin = await factory.plugin(plugin_key="doomed", name="Doomed")
    async with sessionmaker() as session:
        await session.execute(delete(Plugin).where(Plugin.id == plugin.id))
        await session.commit()
    assert await found(client, "doomed") == []
    assert await found(client, "oo") == []


async def test_search_combines_with_filters(client: httpx.AsyncClient, factory: Factory) -> None:
    await factory.plugin(plugin_key="cal-ai", name="Calendar", category="ai")
    await factory.plugin(plugin_key="cal-db", name="Calendar", category="database")
    assert await found(client, "calendar", category="ai") == ["cal-ai"]
    assert await found(client, "ca", category="database") == ["cal-db"]


async def test_search_orders_results_by_the_sort(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await factory.plugin(plugin_key="cal-low", name="Calendar", download_count=1)
    await factory.plugin(plugin_key="cal-high", name="Calendar", download_count=9)
    data = ok(await client.get(BROWSE, params={"q": "calendar"}))
    assert [item["pluginKey"] for item in data["items"]] == ["cal-high", "cal-low"]


async def test_search_dense_query_pages_match_the_sparse_plan(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    # Enough matches that the sort-order walk is chosen; the pages must be the same.
    for n in range(12):
        await factory.plugin(plugin_key=f"cal-{n:02d}", name="Calendar", download_count=n)
    await factory.plugin(plugin_key="other", name="Other")
    assert walk_is_cheaper(12, 13, 3)
    first = ok(await client.get(BROWSE, params={"q": "cal", "pageSize": 3}))
    second = ok(await client.get(BROWSE, params={"q": "al", "pageSize": 3, "page": 2}))
    assert [i["pluginKey"] for i in first["items"]] == ["cal-11", "cal-10", "cal-09"]
    assert [i["pluginKey"] for i in second["items"]] == ["cal-08", "cal-07", "cal-06"]
    assert (first["total"], second["total"]) == (12, 12)


def test_walk_is_chosen_only_when_matches_are_dense() -> None:
    assert walk_is_cheaper(matches=50_000, candidates=100_000, rows_needed=20)
    assert not walk_is_cheaper(matches=10, candidates=100_000, rows_needed=20)
    assert not walk_is_cheaper(matches=0, candidates=100_000, rows_needed=20)
    assert not walk_is_cheaper(matches=2_000, candidates=100_000, rows_needed=20_000)


async def test_search_query_over_200_characters_is_400(client: httpx.AsyncClient) -> None:
    error = err(await client.get(BROWSE, params={"q": "x" * 201}), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"q"}


async def test_search_query_with_control_characters_is_400(client: httpx.AsyncClient) -> None:
    error = err(await client.get(BROWSE, params={"q": "ab\ncd"}), 400, "VALIDATION_FAILED")
    assert field_names(error) == {"q"}


# Letters with simple case on both databases, CJK, and characters that mean something to
# LIKE or FTS5. Python's lower() agrees with SQLite's and PostgreSQL's on this alphabet.
ALPHABET = 'abAB数据库-%_" '
texts = st.text(alphabet=ALPHABET, min_size=1, max_size=12)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fields=st.lists(st.tuples(texts, texts), min_size=1, max_size=4), query=texts)
async def test_search_agrees_with_substring_rule(
    client: httpx.AsyncClient, factory: Factory, fields: list[tuple[str, str]], query: str
) -> None:
    """Any name/description pair, any query: found exactly when a field contains q."""
    async with factory.sessions() as session:
        await session.execute(text("DELETE FROM plugins"))
        await session.commit()
    expected = []
    for n, (name, description) in enumerate(fields):
        key = f"prop-{n}"
        await factory.plugin(
            plugin_key=key, name=name, name_zh="中", description=description, description_zh="文"
        )
        haystacks = [key, name, "中", description, "文"]
        needle = query.strip().lower()
        if not needle or any(needle in h.lower() for h in haystacks):
            expected.append(key)
    assert await found(client, query) == sorted(expected)
