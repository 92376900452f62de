//! The MCP server: one tool per REST operation an agent needs, each a single facade call
//! made as the key's user (so role rules, versions and webhooks are the REST API's), and
//! the items as resources.

use std::sync::Arc;

use cms_core::answers::{Done, ItemEntry, PageMeta, TagEntry, VersionListing, VersionText};
use cms_core::collection::Collection;
use cms_core::model::FieldError;
use cms_core::query::{ListInput, ListQuery};
use cms_core::resource::Subpath;
use cms_core::service::{
    ItemUpdate, ItemView, NewItem, Precondition, Principal, SearchInput, SearchQuery, TagsParams, UpdateMode,
    VersionId, Viewer, WriteOutcome,
};
use cms_core::slug::ItemRef;
use cms_core::{Cms, CoreError, CoreResult};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{IntoCallToolResult, ToolCallContext};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ResultType, ServerCapabilities, ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Json, RoleServer, ServerHandler, tool, tool_handler, tool_router};

use crate::arguments;
use crate::resources::{self, Target};
use crate::shapes::*;
use crate::subscriptions::{Census, Watch, Watched};

/// One MCP session's handler. Cheap: the facade is shared; who calls is read from each
/// request (the gate's [`Principal`]), never kept. The session's resource subscriptions
/// live with it (`subscriptions.rs`): they end when the session's handler is dropped.
#[derive(Clone)]
pub struct CmsServer {
    cms: Arc<Cms>,
    tool_router: ToolRouter<Self>,
    watch: Arc<Watch>,
}

/// The key's user, as the gate in front of `/mcp` found it for this very request.
fn principal(ctx: &RequestContext<RoleServer>) -> Result<Principal, String> {
    rmcp_actix_web::transport::on_request_extensions(&ctx.extensions)
        .and_then(|extensions| extensions.get::<Principal>())
        .cloned()
        .ok_or_else(|| "this request carries no mcp_ key".to_owned())
}

/// The REST API's words for a failure: the one table in core (an internal cause is
/// logged, not sent).
fn fail(error: CoreError) -> String {
    error.public_message()
}

/// A tool's failure, answered as a tool error (`isError: true`): the REST route's words,
/// and, for a write that breaks the collection's model, each failing field as REST lists
/// it, so that the agent can mend them one by one.
#[derive(Debug)]
pub struct Failure {
    message: String,
    fields: Vec<FieldError>,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self { message, fields: Vec::new() }
    }
}

impl From<CoreError> for Failure {
    fn from(error: CoreError) -> Self {
        let fields = error.field_errors().to_vec();
        Self { message: fail(error), fields }
    }
}

impl IntoCallToolResult for Failure {
    /// The sentence as the first text; with failing fields, a second text holding
    /// `{error, fields}` as JSON, REST's 400 body. Not as `structuredContent`: some clients
    /// (the TypeScript SDK, the Inspector) check that against the tool's `outputSchema`,
    /// which describes its result, even on an error, and would hide the error behind their
    /// own.
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let mut content = vec![ContentBlock::text(self.message.clone())];
        if !self.fields.is_empty() {
            let data = serde_json::json!({ "error": self.message, "fields": self.fields });
            content.push(ContentBlock::text(data.to_string()));
        }
        Ok(CallToolResult::error(content).into())
    }
}

/// The item file a read answered with, to read its source: the same file even when its
/// slug names several.
fn source_of(view: &ItemView) -> CoreResult<ItemRef> {
    ItemRef::parse(&view.meta.filename)
}

/// The collection a tool's `collection` and `lang` name: on a site with languages, that
/// language's (the default language's without `lang`); a site without languages ignores
/// `lang`, as REST does.
fn collection_in<'a>(cms: &'a Cms, collection: &str, lang: Option<&str>) -> CoreResult<&'a Collection> {
    let collection = cms.collection(collection)?;
    match (cms.languages(), lang) {
        (Some(languages), Some(code)) => Ok(cms.in_language(collection, languages.parse(code)?)),
        _ => Ok(collection),
    }
}

/// A language of the site by its code (a tool about translations needs one).
fn language_at(cms: &Cms, code: &str) -> CoreResult<usize> {
    match cms.languages() {
        Some(languages) => languages.parse(code),
        None => Err(CoreError::not_found("this site has no languages, so it has no translations")),
    }
}

/// A `list_items` filter key as what follows `filter` in a query string: `price[gte]` is
/// `[price][gte]`, `price` is `[price]`; a key written as in a query string
/// (`filter[price][gte]`) is taken as it is.
fn filter_name(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("filter").filter(|rest| rest.starts_with('[')) {
        return rest.to_owned();
    }
    match key.split_once('[') {
        Some((field, op)) => format!("[{field}][{op}"),
        None => format!("[{key}]"),
    }
}

/// A resource request's failure as a JSON-RPC error: an unknown collection or item is
/// "resource not found", a malformed URI invalid params; the words say which.
fn resource_error(error: CoreError) -> ErrorData {
    match error {
        CoreError::NotFound(message) => ErrorData::resource_not_found(message, None),
        CoreError::Invalid(message) => ErrorData::invalid_params(message, None),
        other => ErrorData::internal_error(fail(other), None),
    }
}

/// Every list of this server is answered whole (no `nextCursor`), so no cursor is one the
/// server gave: a client that sends one is told, as the MCP spec asks (`-32602`).
fn no_cursor(request: Option<&PaginatedRequestParams>) -> Result<(), ErrorData> {
    match request.and_then(|r| r.cursor.as_deref()) {
        None => Ok(()),
        Some(cursor) => Err(ErrorData::invalid_params(
            format!("invalid cursor {cursor:?}: this server answers every list whole, without a nextCursor"),
            None,
        )),
    }
}

/// Every tool's run: who calls (the gate's key), one facade call made as them, its result
/// shaped into the tool's answer, or the failure in the REST API's words.
async fn answer<T, S>(
    cms: &Cms,
    ctx: &RequestContext<RoleServer>,
    call: impl AsyncFnOnce(&Cms, Principal) -> CoreResult<T>,
    shape: impl FnOnce(T) -> S,
) -> Result<Json<S>, Failure> {
    let user = principal(ctx)?;
    let value = call(cms, user).await?;
    Ok(Json(shape(value)))
}

/// What a create, update or restore wrote, with the REST route's message.
fn written(outcome: WriteOutcome, done: Done, restored: Option<i64>) -> Written {
    Written {
        filename: outcome.filename,
        slug: outcome.slug,
        folder: outcome.folder,
        etag: outcome.etag,
        message: done.message().into(),
        restored,
    }
}

/// A count an argument carries as a JSON number (the input schema has checked its bounds),
/// as the facade's typed inputs take it; past `usize` (not on 64 bits), the largest.
fn count(value: Option<u64>) -> Option<usize> {
    value.map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

// Each tool answers `Result<Json<T>, Failure>`: structured output with `T`'s schema as its
// output schema, or the REST route's error message as a tool error (`isError`). Spelled out
// in every signature, since the macro reads the output schema from it.
#[tool_router]
impl CmsServer {
    pub fn new(cms: Arc<Cms>) -> Self {
        Self::counted(cms, Arc::default())
    }

    /// A session's handler whose follower of the event log, if it starts one, is counted
    /// in `census` (the endpoint's).
    pub(crate) fn counted(cms: Arc<Cms>, census: Arc<Census>) -> Self {
        Self { cms, tool_router: Self::tool_router(), watch: Arc::new(Watch::new(census)) }
    }

    /// List the site's collections (index, label, slug, folder), and whether each has a
    /// content model (describe_collection tells its fields).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_collections(&self, _args: Parameters<NoArgs>) -> Result<Json<Collections>, Failure> {
        Ok(Json(Collections {
            collections: (self.cms.collections().iter())
                .map(|c| CollectionOut::new(c, self.cms.items_breaking_model_count(c)))
                .collect(),
        }))
    }

    /// Describe a collection before writing to it: its fields in order, each with its type,
    /// whether it is required, its rules (options, bounds, lengths, pattern, the collection
    /// a reference names, a list's element, an object's fields) and default, whether keys
    /// it does not name are allowed, and the frontmatter's JSON Schema. A collection
    /// without a model accepts any frontmatter.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn describe_collection(
        &self,
        Parameters(args): Parameters<DescribeCollectionArgs>,
    ) -> Result<Json<CollectionDescription>, Failure> {
        let collection = self.cms.collection(&args.collection)?;
        // Every language's items on a site with languages.
        let invalid_items =
            self.cms.family_of(collection).map(|lane| self.cms.items_breaking_model_count(lane)).sum();
        let schema = self.cms.collection_schema(collection);
        Ok(Json(CollectionDescription::new(collection, invalid_items, schema)))
    }

    /// List a collection's items, newest first by default, with the REST list's filters,
    /// sort and paging. Drafts are included with status=draft or status=all.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_items(
        &self,
        Parameters(args): Parameters<ListItemsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<ItemList>, Failure> {
        let params = ListInput {
            page: count(args.page),
            per_page: count(args.per_page),
            offset: count(args.offset),
            status: args.status,
            tags: args.tags,
            author: args.author,
            order_by: args.order_by,
            direction: args.direction,
            filters: args
                .filter
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| (filter_name(&key), value))
                .collect(),
            fields: args.fields,
            expand: args.expand,
        };
        let list = async |cms: &Cms, user| {
            let collection = collection_in(cms, &args.collection, args.lang.as_deref())?;
            let query = ListQuery::from_input(&params, collection.model.as_deref())?;
            cms.list_items(collection, &query, &Viewer::Key(user)).await
        };
        answer(&self.cms, &ctx, list, |page| ItemList {
            meta: PageMeta::from(&page),
            items: page.items.iter().map(|s| ItemEntry::from(s).into_owned()).collect(),
        })
        .await
    }

    /// Read one item: metadata, the body rendered to HTML, and the frontmatter and
    /// Markdown as stored, with the etag to pass as if_match when writing.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_item(
        &self,
        Parameters(args): Parameters<ItemArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<ItemOut>, Failure> {
        let read = async |cms: &Cms, user: Principal| {
            let collection = cms.collection(&args.collection)?;
            let viewer = Viewer::Key(user.clone());
            // As REST reads: in the language asked for, else along its fallback chain.
            let choice = cms.choose_language(args.lang.as_deref(), None, None)?;
            let item = ItemRef::parse(&args.slug)?;
            let (lane, item) = cms.item_in(collection, &item, choice, &viewer).await?;
            let view = cms.read_item_in(lane, &item, &viewer, choice.map(|c| c.requested)).await?;
            let raw = cms.read_item_source(&user, lane, &source_of(&view)?).await?;
            Ok((view, raw))
        };
        answer(&self.cms, &ctx, read, |(view, raw)| ItemOut::new(view, raw)).await
    }

    /// Create an item from frontmatter and a Markdown body. The slug comes from fm.title
    /// unless given; the item is a draft unless fm.status is published.
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn create_item(
        &self,
        Parameters(args): Parameters<CreateItemArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, Failure> {
        let new = NewItem {
            slug: args.slug,
            date_prefix: args.date_prefix,
            fm: args.fm.unwrap_or_default(),
            body: args.body.unwrap_or_default(),
        };
        let create = async |cms: &Cms, user| {
            cms.create_item(&user, collection_in(cms, &args.collection, args.lang.as_deref())?, new).await
        };
        answer(&self.cms, &ctx, create, |outcome| written(outcome, Done::FileCreated, None)).await
    }

    /// Update an item as REST PATCH does: fm is merged over the stored frontmatter (a key
    /// set to null is removed) and the body is kept unless given. The previous content is
    /// kept as a version. Pass if_match to refuse the update if the item changed since.
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn update_item(
        &self,
        Parameters(args): Parameters<UpdateItemArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, Failure> {
        let update = ItemUpdate { mode: UpdateMode::Patch, fm: args.fm.unwrap_or_default(), body: args.body };
        let if_match = args.if_match.as_deref().map(Precondition::from_if_match);
        let save = async |cms: &Cms, user| {
            let collection = collection_in(cms, &args.collection, args.lang.as_deref())?;
            cms.update_item(&user, collection, &ItemRef::parse(&args.slug)?, update, if_match.as_ref()).await
        };
        answer(&self.cms, &ctx, save, |outcome| written(outcome, Done::FileSaved, None)).await
    }

    /// Delete an item. Its history is kept: restore_version brings it back.
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn delete_item(
        &self,
        Parameters(args): Parameters<DeleteItemArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<Deleted>, Failure> {
        let if_match = args.if_match.as_deref().map(Precondition::from_if_match);
        let delete = async |cms: &Cms, user| {
            let collection = collection_in(cms, &args.collection, args.lang.as_deref())?;
            cms.delete_item(&user, collection, &ItemRef::parse(&args.slug)?, if_match.as_ref()).await
        };
        answer(&self.cms, &ctx, delete, |_| Deleted { ok: true, message: Done::FileDeleted.message().into() })
            .await
    }

    /// List an item's saved versions, newest first (each write keeps the content it
    /// replaced, with the author of that write when recorded; on a site kept in git, the
    /// commits of its file, each with its `commit` and author), and its current size.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_versions(
        &self,
        Parameters(args): Parameters<ItemArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<VersionListing>, Failure> {
        let list = async |cms: &Cms, user| {
            let collection = collection_in(cms, &args.collection, args.lang.as_deref())?;
            cms.list_versions(&user, collection, &ItemRef::parse(&args.slug)?).await
        };
        answer(&self.cms, &ctx, list, VersionListing::from).await
    }

    /// On a site with languages: write an item's translation from its source (the default
    /// language's item). A new translation starts as a draft copy of the source's
    /// frontmatter and body with fm and body written over them; an existing one is updated
    /// with them. Either way it records that it is made from the source as it is now, so it
    /// is no longer outdated.
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn translate_item(
        &self,
        Parameters(args): Parameters<TranslateArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, Failure> {
        let fm = args.fm.unwrap_or_default();
        let translate = async |cms: &Cms, user| {
            let collection = cms.collection(&args.collection)?;
            let at = language_at(cms, &args.lang)?;
            cms.translate_item(&user, collection, &ItemRef::parse(&args.slug)?, at, fm, args.body).await
        };
        answer(&self.cms, &ctx, translate, |(outcome, created)| {
            written(outcome, if created { Done::FileCreated } else { Done::FileSaved }, None)
        })
        .await
    }

    /// On a site with languages: what changed in a translation's source (the default
    /// language's item) since the translation was made, as a unified diff.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn source_diff(
        &self,
        Parameters(args): Parameters<TranslationArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<SourceDiffOut>, Failure> {
        let diff = async |cms: &Cms, user| {
            let collection = cms.collection(&args.collection)?;
            let at = language_at(cms, &args.lang)?;
            cms.source_diff(&user, collection, &ItemRef::parse(&args.slug)?, at).await
        };
        answer(&self.cms, &ctx, diff, SourceDiffOut::from).await
    }

    /// On a site with languages: the translations into a language whose source changed
    /// since they were made (drafts too), newest first; source_diff says what changed.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_outdated(
        &self,
        Parameters(args): Parameters<OutdatedArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<OutdatedList>, Failure> {
        let list = async |cms: &Cms, user| {
            let collection = cms.collection(&args.collection)?;
            let at = language_at(cms, &args.lang)?;
            cms.outdated_items(collection, at, &Viewer::Key(user)).await
        };
        answer(&self.cms, &ctx, list, |items| OutdatedList {
            items: items.iter().map(|s| ItemEntry::from(s).into_owned()).collect(),
        })
        .await
    }

    /// Read one saved version of an item: its frontmatter and Markdown.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn get_version(
        &self,
        Parameters(args): Parameters<VersionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<VersionText>, Failure> {
        let read = async |cms: &Cms, user| {
            let version = VersionId::new(args.version)?;
            let collection = collection_in(cms, &args.collection, args.lang.as_deref())?;
            cms.read_version(&user, collection, &ItemRef::parse(&args.slug)?, version).await
        };
        answer(&self.cms, &ctx, read, VersionText::from).await
    }

    /// Restore a saved version of an item (also a deleted one). The content it replaces is
    /// kept as a version, so a restore can be undone.
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn restore_version(
        &self,
        Parameters(args): Parameters<RestoreVersionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, Failure> {
        let if_match = args.if_match.as_deref().map(Precondition::from_if_match);
        let restore = async |cms: &Cms, user| {
            let collection = collection_in(cms, &args.collection, args.lang.as_deref())?;
            let version = VersionId::new(args.version)?;
            cms.restore_version(&user, collection, &ItemRef::parse(&args.slug)?, version, if_match.as_ref())
                .await
        };
        answer(&self.cms, &ctx, restore, |(outcome, restored)| {
            written(outcome, Done::VersionRestored, Some(restored))
        })
        .await
    }

    /// Full-text search over title, tags and body of one collection or all of them, best
    /// first (title matches above tag matches above body matches), with snippets. Words
    /// are matched stemmed (run finds running) and as prefixes (front finds frontmatter).
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<SearchResults>, Failure> {
        let input = SearchInput {
            q: Some(args.q),
            collection: args.collection,
            page: count(args.page),
            per_page: count(args.per_page),
        };
        let search =
            async |cms: &Cms, user| cms.search(&SearchQuery::from_input(&input)?, &Viewer::Key(user)).await;
        answer(&self.cms, &ctx, search, |page| SearchResults {
            meta: PageMeta::from(&page),
            results: page.items.into_iter().map(SearchResult::from).collect(),
        })
        .await
    }

    /// List the tags of a collection's published items with their counts, most used first.
    #[tool(annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_tags(
        &self,
        Parameters(args): Parameters<ListTagsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<Tags>, Failure> {
        let list = async |cms: &Cms, _| {
            let collection = cms.collection(&args.collection)?;
            let params = TagsParams { content_path: Some(collection.path.clone()), ..TagsParams::default() };
            cms.tags(&params).await
        };
        answer(&self.cms, &ctx, list, |tags| Tags { tags: tags.into_iter().map(TagEntry::from).collect() })
            .await
    }

    /// List a resource folder (media uploads): its subfolders and files with their URLs.
    // Named apart from `ServerHandler::list_resources` (MCP resources, not media files).
    #[tool(name = "list_resources", annotations(read_only_hint = true, open_world_hint = false))]
    async fn list_media(
        &self,
        Parameters(args): Parameters<ListResourcesArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<ResourcesOut>, Failure> {
        let folder = count(args.folder).unwrap_or(0);
        let list = async |cms: &Cms, user| {
            let dir = Subpath::parse(args.subpath.as_deref().unwrap_or(""))?;
            cms.list_resources(&user, folder, &dir).await
        };
        answer(&self.cms, &ctx, list, ResourcesOut::from).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CmsServer {
    /// The router's call, after the arguments are checked against the tool's input schema
    /// (a mistake is a tool error in plain words, which the agent can act on).
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.tool_router.get(&request.name) else {
            let names: Vec<String> =
                self.tool_router.list_all().into_iter().map(|t| t.name.into_owned()).collect();
            let message = format!("unknown tool {:?}; the tools are {}", request.name, names.join(", "));
            return Err(ErrorData::invalid_params(message, None));
        };
        if let Err(message) = arguments::check(tool, request.arguments.as_ref()) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into());
        }
        self.tool_router.call(ToolCallContext::new(self, request, context)).await
    }

    /// As `#[tool_handler]` would list them, after refusing a cursor.
    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        no_cursor(request.as_ref())?;
        let cache_hints = context.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools: self.tool_router.list_all(),
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(CacheScope::Public),
        })
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("cms", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "The content of the site {:?}: Markdown items with YAML frontmatter in collections, \
                 and media in resource folders. Start with list_collections, then list_items or \
                 search; read with get_item; before writing to a collection, describe_collection \
                 tells the fields its items take; write with create_item, update_item (merges fm) \
                 and delete_item (a write that breaks the collection's model is refused, naming \
                 each failing field). Every write keeps the previous content as a version \
                 (list_versions, get_version, restore_version). Items are also resources at \
                 cms://{{collection}}/{{slug}}, and a collection's JSON Schema at \
                 cms://{{collection}}/schema; subscribe to an item or a collection \
                 (cms://{{collection}}) to be told when it changes.",
                self.cms.site().name
            ))
    }

    /// The collections and schemas; from now on the session is told when items come and
    /// go (`notifications/resources/list_changed`).
    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        no_cursor(request.as_ref())?;
        if let Ok(user) = principal(&ctx) {
            self.watch.listed();
            self.watch.follow(&self.cms, &user, ctx.peer.clone()).await;
        }
        Ok(ListResourcesResult::with_all_items(resources::collection_resources(&self.cms)))
    }

    /// Subscribes the session to an item (`cms://{collection}/{slug}`, which must be one its
    /// key may read) or a collection (`cms://{collection}`), within the bound of
    /// `subscriptions.rs`.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let user = principal(&ctx).map_err(|e| ErrorData::invalid_request(e, None))?;
        let uri = request.uri.as_str();
        let watched = match resources::parse(&self.cms, uri).map_err(resource_error)? {
            Target::Item(collection, item) => {
                let viewer = Viewer::Key(user.clone());
                let view = self.cms.read_item(collection, &item, &viewer).await.map_err(resource_error)?;
                Watched::item(collection, item, &view.meta.filename)
            }
            Target::Collection(collection) => Watched::collection(collection),
            Target::Schema(_) => {
                let message = format!(
                    "{uri} cannot be subscribed to: a collection's schema changes only with the \
                     site's configuration; subscribe to items (cms://{{collection}}/{{slug}}) and \
                     collections (cms://{{collection}})"
                );
                return Err(ErrorData::invalid_params(message, None));
            }
        };
        self.watch.subscribe(uri, watched).map_err(|e| ErrorData::invalid_request(e.to_string(), None))?;
        self.watch.follow(&self.cms, &user, ctx.peer.clone()).await;
        Ok(())
    }

    /// Ends the session's subscription to a URI, named as it was subscribed.
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let uri = request.uri.as_str();
        resources::parse(&self.cms, uri).map_err(resource_error)?;
        self.watch.unsubscribe(uri).map_err(|e| ErrorData::invalid_params(e.to_string(), None))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        no_cursor(request.as_ref())?;
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let user = principal(&ctx).map_err(|e| ErrorData::invalid_request(e, None))?;
        let viewer = Viewer::Key(user.clone());
        let uri = request.uri.as_str();
        let contents = match resources::parse(&self.cms, uri).map_err(resource_error)? {
            Target::Item(collection, item) => {
                // Drafts too: an mcp_ key is a key (as on REST with a key).
                let view = self.cms.read_item(collection, &item, &viewer).await.map_err(resource_error)?;
                let source = source_of(&view).map_err(resource_error)?;
                let raw =
                    self.cms.read_item_source(&user, collection, &source).await.map_err(resource_error)?;
                let text = raw.doc.to_file_text().map_err(resource_error)?;
                resources::markdown(uri, text)
            }
            Target::Schema(collection) => {
                let schema = self.cms.collection_schema(collection);
                ResourceContents::text(schema.to_string(), uri).with_mime_type(resources::SCHEMA)
            }
            Target::Collection(collection) => {
                let items = self.cms.indexed_items(collection).await.map_err(resource_error)?;
                let mut uris: Vec<String> = items
                    .iter()
                    .map(|i| resources::item_uri(&collection.slug, &i.meta.slug, &i.meta.filename))
                    .collect();
                uris.sort();
                let listing = serde_json::json!({ "collection": collection.slug, "items": uris });
                ResourceContents::text(listing.to_string(), uri).with_mime_type("application/json")
            }
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn wire(failure: Failure) -> Value {
        let Ok(CallToolResponse::Complete(result)) = failure.into_call_tool_result() else {
            unreachable!("a failure is a complete tool result")
        };
        serde_json::to_value(result).unwrap()
    }

    #[test]
    fn filter_keys_are_read_as_the_query_string_writes_them() {
        assert_eq!(filter_name("price"), "[price]");
        assert_eq!(filter_name("price[gte]"), "[price][gte]");
        assert_eq!(filter_name("filter[price][gte]"), "[price][gte]");
        assert_eq!(filter_name("filter[price]"), "[price]");
    }

    #[test]
    fn a_model_failure_carries_each_field_as_data_and_other_failures_only_text() {
        let fields = vec![
            FieldError { field: "fm.title".into(), message: "is required".into() },
            FieldError {
                field: "fm.rating".into(),
                message: "must be a whole number from 1 to 5, got 9".into(),
            },
        ];
        let data = json!({
            "error": "2 fields break the collection's model: fm.title, fm.rating",
            "fields": [
                {"field": "fm.title", "message": "is required"},
                {"field": "fm.rating", "message": "must be a whole number from 1 to 5, got 9"},
            ],
        });
        let result = wire(Failure::from(CoreError::fields(fields)));
        assert_eq!(result["isError"], true);
        assert_eq!(result.get("structuredContent"), None, "the result's schema is not the error's: {result}");
        assert_eq!(
            result["content"],
            json!([
                {"type": "text", "text": "2 fields break the collection's model: fm.title, fm.rating"},
                {"type": "text", "text": data.to_string()},
            ])
        );

        let result = wire(Failure::from(CoreError::not_found("no item \"nope\"")));
        assert_eq!(result["isError"], true);
        assert_eq!(result.get("structuredContent"), None, "{result}");
        assert_eq!(result["content"], json!([{"type": "text", "text": "no item \"nope\""}]));
        let result = wire(Failure::from("this request carries no mcp_ key".to_owned()));
        assert_eq!(result["content"][0]["text"], "this request carries no mcp_ key");
    }
}
