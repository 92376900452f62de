"""Drives the server's /mcp endpoint with the official MCP Python SDK (the `mcp` package).

    python mcp_client.py URL MCP_KEY API_KEY full      # everything an agent does
    python mcp_client.py URL MCP_KEY API_KEY no-license # the license lacks `mcp`: 402
    python mcp_client.py URL MCP_KEY API_KEY model      # blog-posts has a content model

Run by crates/cms/tests/it/mcp.rs. Prints one line per check; any failed check raises,
so the exit status is non-zero and the last lines say what was wrong.
"""

import asyncio
import json
import logging
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

URL, MCP_KEY, API_KEY, MODE = sys.argv[1:5]

TOOLS = {
    "list_collections", "describe_collection", "list_items", "get_item", "create_item", "update_item", "delete_item",
    "list_versions", "get_version", "restore_version", "search", "list_tags", "list_resources",
    "translate_item", "source_diff", "list_outdated",
}
READ_ONLY = {
    "list_collections", "describe_collection", "list_items", "get_item", "list_versions", "get_version", "search",
    "list_tags", "list_resources", "source_diff", "list_outdated",
}
DESTRUCTIVE = {"update_item", "delete_item", "restore_version", "translate_item"}
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}},
}


class Warnings(logging.Handler):
    """What the SDK's transport logs at WARNING and above (a failed session DELETE, say)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


WARNINGS = Warnings()
logging.getLogger("mcp.client.streamable_http").addHandler(WARNINGS)


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print("ok", what.split(":")[0])


def raw_post(key):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return httpx2.post(URL, json=INITIALIZE, headers=headers)


async def connect_fails(key):
    """Whether the SDK refuses to connect with this key (or none)."""
    headers = {"Authorization": f"Bearer {key}"} if key else None
    try:
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(URL, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await asyncio.wait_for(session.initialize(), 10)
    except BaseException as error:  # the SDK raises an exception group from its task group
        return repr(error)
    return None


def text_of(result):
    return " ".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(session, name, args):
    result = await session.call_tool(name, args)
    check(not result.is_error, f"{name}: {text_of(result)}")
    return result.structured_content


async def tool_error(session, name, args):
    """The error a call gives: a tool error's text, or a JSON-RPC error's message."""
    try:
        result = await session.call_tool(name, args)
    except Exception as error:
        return str(error)
    check(result.is_error, f"{name} {args} is an error: {result}")
    return text_of(result)


async def full():
    # The gate, seen over plain HTTP and through the SDK.
    response = raw_post(None)
    check(response.status_code == 401, f"no key is 401: {response.status_code}")
    check(response.headers.get("www-authenticate") == "Bearer", "401 carries WWW-Authenticate: Bearer")
    response = raw_post(API_KEY)
    check(response.status_code == 401 and "REST API" in response.json()["error"],
          f"an api_ key is 401 saying where it belongs: {response.text}")
    check(await connect_fails(None) is not None, "the SDK cannot connect without a key")
    check(await connect_fails(API_KEY) is not None, "the SDK cannot connect with an api_ key")

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {MCP_KEY}"}) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session_checks(session)
    # Leaving the client ended the session with a DELETE, which the SDK accepts as 200 or 204.
    check(WARNINGS.messages == [], f"the SDK logged no transport warning: {WARNINGS.messages}")


async def session_checks(session):
    init = await session.initialize()
    check(init.server_info.name == "cms", f"initialize: {init.server_info}")
    check(init.protocol_version >= "2025-06-18", f"protocol 2025-06-18 or later: {init.protocol_version}")
    check(init.capabilities.tools is not None and init.capabilities.resources is not None, "capabilities")

    tools = {t.name: t for t in (await session.list_tools()).tools}
    check(set(tools) == TOOLS, f"list_tools: {sorted(tools)}")
    for name, tool in tools.items():
        check(tool.input_schema.get("type") == "object", f"{name} has an input schema")
        check((tool.output_schema or {}).get("type") == "object", f"{name} has an output schema")
        check(tool.annotations.read_only_hint == (name in READ_ONLY), f"{name} read-only hint")
        check(bool(tool.annotations.destructive_hint) == (name in DESTRUCTIVE), f"{name} destructive hint")

    resources = [r.uri for r in (await session.list_resources()).resources]
    check("cms://blog-posts" in [str(u) for u in resources], f"list_resources: {resources}")
    templates = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
    check(templates == ["cms://{collection}/{slug}", "cms://{collection}/schema"],
          f"resource templates: {templates}")
    read = await session.read_resource("cms://blog-posts/hello-world")
    item = read.contents[0]
    check(item.mime_type == "text/markdown" and item.text.startswith("---\n") and "Hello, World" in item.text,
          f"read_resource: {item}")
    listing = json.loads((await session.read_resource("cms://blog-posts")).contents[0].text)
    check("cms://blog-posts/hello-world" in listing["items"], f"a collection lists its items: {listing}")
    try:
        await session.read_resource("cms://blog-posts/no-such-item")
        check(False, "an unknown item is an error")
    except Exception as error:
        check("no item" in str(error), f"an unknown resource says why: {error}")

    # Every tool, in the order an agent would use them.
    collections = await call(session, "list_collections", {})
    check([c["slug"] for c in collections["collections"]][:1] == ["blog-posts"], f"collections: {collections}")
    described = await call(session, "describe_collection", {"collection": "blog-posts"})
    check(described["slug"] == "blog-posts" and described["schema_uri"] == "cms://blog-posts/schema"
          and described["has_model"] == bool(described["fields"]), f"describe_collection: {described}")
    listed = await call(session, "list_items", {"collection": "blog-posts", "per_page": 2, "status": "all"})
    check(len(listed["items"]) == 2 and listed["meta"]["perPage"] == 2, f"list_items: {listed}")
    item = await call(session, "get_item", {"collection": "blog-posts", "slug": "hello-world"})
    check(item["body_html"].startswith("<h1>") and item["fm"]["title"] == "Hello, World"
          and item["body"].startswith("# Hello"), f"get_item: {item}")

    created = await call(session, "create_item", {
        "collection": "blog-posts",
        "fm": {"title": "Zebra Crossing", "tags": ["Stripes"]},
        "body": "A post about zebras, written by an agent.",
    })
    slug = created["slug"]
    check(created["message"] == "File created." and slug == "zebra-crossing", f"create_item: {created}")
    found = await call(session, "search", {"q": "zebra", "collection": "blog-posts"})
    check([r["slug"] for r in found["results"]] == [slug], f"a created draft is searchable with a key: {found}")
    check("<mark>" in found["results"][0]["snippet"], f"search snippet: {found}")
    updated = await call(session, "update_item", {
        "collection": "blog-posts", "slug": slug, "fm": {"status": "published"}, "if_match": created["etag"],
    })
    check(updated["message"] == "File saved.", f"update_item: {updated}")
    stale = await tool_error(session, "update_item", {
        "collection": "blog-posts", "slug": slug, "fm": {"tags": []}, "if_match": created["etag"],
    })
    check("does not match the item's current ETag" in stale, f"a stale if_match is refused: {stale}")
    after = await call(session, "get_item", {"collection": "blog-posts", "slug": slug})
    check(after["status"] == "published" and after["body"].startswith("A post about zebras"),
          f"PATCH merges and keeps the body: {after}")
    versions = await call(session, "list_versions", {"collection": "blog-posts", "slug": slug})
    check(len(versions["versions"]) == 1, f"list_versions: {versions}")
    version = versions["versions"][0]["timestamp"]
    old = await call(session, "get_version", {"collection": "blog-posts", "slug": slug, "version": version})
    check(old["fm"]["status"] == "draft", f"get_version: {old}")
    restored = await call(session, "restore_version", {"collection": "blog-posts", "slug": slug, "version": version})
    check(restored["restored"] == version and restored["message"] == "Version restored.", f"restore: {restored}")
    tags = await call(session, "list_tags", {"collection": "blog-posts"})
    check(any(t["slug"] == "markdown" for t in tags["tags"]), f"list_tags: {tags}")
    media = await call(session, "list_resources", {"folder": 0})
    check(media["folder"]["index"] == 0 and isinstance(media["files"], list), f"list_resources: {media}")
    deleted = await call(session, "delete_item", {"collection": "blog-posts", "slug": slug})
    check(deleted == {"ok": True, "message": "File deleted."}, f"delete_item: {deleted}")
    gone = await call(session, "search", {"q": "zebra"})
    check(gone["results"] == [], f"a deleted item is not found: {gone}")

    # Errors: the REST words as tool errors, and clear JSON-RPC errors.
    missing = await tool_error(session, "get_item", {"collection": "blog-posts", "slug": "nope"})
    check(missing == 'no item "nope" in collection "blog-posts"', f"REST's words: {missing}")
    bad_page = await tool_error(session, "list_items", {"collection": "blog-posts", "page": 0})
    check("`page` must be a whole number of 1 or more" in bad_page, f"a bad page: {bad_page}")
    no_collection = await tool_error(session, "list_items", {"collection": "nope"})
    check("nope" in no_collection, f"an unknown collection: {no_collection}")
    wrong_type = await tool_error(session, "list_items", {"collection": "blog-posts", "page": "two"})
    check(wrong_type == 'argument `page` must be a whole number of 1 or more, got "two"',
          f"a wrong argument type names the argument and the type: {wrong_type}")
    no_slug = await tool_error(session, "get_item", {"collection": "blog-posts"})
    check(no_slug == "missing argument `slug` (a string)", f"a missing argument: {no_slug}")
    unknown = await tool_error(session, "no_such_tool", {})
    check("no_such_tool" in unknown or "not found" in unknown.lower(), f"an unknown tool: {unknown}")
    print("ok every tool called")


async def model():
    """describe_collection, the schema resource and a refused write, on a modelled collection."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {MCP_KEY}"}) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                described = await call(session, "describe_collection", {"collection": "blog-posts"})
                title = described["fields"][0]
                check(described["has_model"] and title["name"] == "title" and title["required"],
                      f"describe_collection: {described}")
                resources = [str(r.uri) for r in (await session.list_resources()).resources]
                check("cms://blog-posts/schema" in resources, f"the schema is listed: {resources}")
                contents = (await session.read_resource("cms://blog-posts/schema")).contents[0]
                check(contents.mime_type == "application/schema+json"
                      and json.loads(contents.text) == described["schema"], f"the schema resource: {contents}")

                # A refused write: the sentence as text, then {error, fields} as JSON text (not
                # structuredContent, which some clients check against the output schema).
                result = await session.call_tool(
                    "create_item", {"collection": "blog-posts", "slug": "fixed", "fm": {"rating": 9}})
                check(result.is_error, f"a write that breaks the model is a tool error: {result}")
                check(result.structured_content is None, f"no structured content on an error: {result}")
                fields = json.loads(result.content[1].text).get("fields")
                check(fields == [{"field": "fm.title", "message": "is required"},
                                 {"field": "fm.rating", "message": "must be a whole number from 1 to 5, got 9"}],
                      f"the failing fields as data: {result}")
                check(result.content[0].text == "2 fields break the collection's model: fm.title, fm.rating",
                      f"the sentence: {result.content}")
                fixed = await call(session, "create_item", {"collection": "blog-posts", "fm": {"title": "Fixed"}})
                check(fixed["slug"] == "fixed", f"the mended write passes: {fixed}")


async def no_license():
    response = raw_post(MCP_KEY)
    check(response.status_code == 402 and "mcp" in response.json()["error"], f"402: {response.text}")
    check(await connect_fails(MCP_KEY) is not None, "the SDK cannot connect without the license feature")


asyncio.run({"full": full, "model": model, "no-license": no_license}[MODE]())
print("all checks passed")
