//! Resource subscriptions over the real Streamable HTTP transport, in-process
//! (`actix_web::test`): a session subscribes, the facade writes, and the session's `GET`
//! stream carries `notifications/resources/updated` and `list_changed`.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::{Next, from_fn};
use actix_web::test::{self, TestRequest};
use actix_web::{App, HttpMessage, web};
use cms_core::Cms;
use cms_core::account::{KeyFamily, Role};
use cms_core::config::McpConfig;
use cms_core::document::Frontmatter;
use cms_core::policy::Caller;
use cms_core::service::{ItemUpdate, NewItem, UpdateMode};
use cms_core::slug::ItemRef;
use cms_core::testing::MemoryWorld;
use futures_util::future::LocalBoxFuture;
use serde_json::{Value, json};

const IDLE_SECS: u64 = 60;
/// The longest a test waits for a notification (or for a follower to end).
const WAIT: Duration = Duration::from_secs(5);

fn fm(value: Value) -> Frontmatter {
    value.as_object().unwrap().clone()
}

/// The app: a request in, its response out.
type Call = Rc<dyn Fn(TestRequest) -> LocalBoxFuture<'static, ServiceResponse<BoxBody>>>;

/// A site with an editor's `mcp_` key, its endpoint, and the facade to write with.
struct Site {
    world: MemoryWorld,
    cms: Arc<Cms>,
    key: String,
    endpoint: cms_mcp::Endpoint,
}

impl Site {
    async fn new() -> Self {
        let world = MemoryWorld::new();
        let cms = Arc::new(world.cms());
        cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
        let key = cms
            .create_key_of(Caller::Operator, KeyFamily::Agent, "ed@example.com", "agent", [7; 32])
            .await
            .unwrap()
            .plaintext;
        let settings = McpConfig { session_idle_secs: IDLE_SECS, ..McpConfig::default() };
        let endpoint = cms_mcp::endpoint(Arc::clone(&cms), 1 << 20, &settings);
        let site = Self { world, cms, key, endpoint };
        site.create("posts", "hello", "published").await;
        site
    }

    /// The endpoint at `/mcp` behind a gate that, as `cms-http`'s, hands it the key's user.
    async fn app(&self) -> Call {
        let cms = Arc::clone(&self.cms);
        let gate = move |req: ServiceRequest, next: Next<BoxBody>| {
            let cms = Arc::clone(&cms);
            async move {
                let bearer = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
                let principal = cms.authenticate_agent(bearer.trim_start_matches("Bearer ")).await;
                req.extensions_mut().insert(principal.expect("the test's key"));
                next.call(req).await
            }
        };
        let scope = web::scope("/mcp").wrap(from_fn(gate)).service(self.endpoint.clone().scope());
        let app = Rc::new(test::init_service(App::new().service(scope)).await);
        Rc::new(move |req: TestRequest| {
            let app = Rc::clone(&app);
            Box::pin(async move { app.call(req.to_request()).await.expect("the app answers") })
        })
    }

    async fn create(&self, collection: &str, slug: &str, status: &str) {
        let collection = self.cms.collection(collection).unwrap();
        let new = NewItem {
            slug: Some(slug.into()),
            date_prefix: Some(false),
            fm: fm(json!({"title": slug, "status": status})),
            body: "Body.".into(),
        };
        self.cms.create_item(Caller::Operator, collection, new).await.unwrap();
    }

    async fn update(&self, collection: &str, slug: &str, title: &str) {
        let collection = self.cms.collection(collection).unwrap();
        let update = ItemUpdate { mode: UpdateMode::Patch, fm: fm(json!({"title": title})), body: None };
        let item = ItemRef::parse(slug).unwrap();
        self.cms.update_item(Caller::Operator, collection, &item, update, None).await.unwrap();
    }

    /// Waits until no session follows the event log.
    async fn until_nobody_follows(&self) {
        let waited = tokio::time::timeout(WAIT, async {
            while self.endpoint.following_count() > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        waited.await.expect("the session's follower ends within 5 s");
    }
}

/// The JSON-RPC messages of an SSE body (`data:` lines; priming events have none).
fn messages(sse: &str) -> Vec<Value> {
    sse.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event.lines().filter_map(|line| line.strip_prefix("data:")).collect();
            let data = data.join("\n");
            let data = data.trim();
            (!data.is_empty()).then(|| serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}")))
        })
        .collect()
}

/// A session of the site's key on `app`.
struct Session<'a> {
    app: Call,
    key: &'a str,
    id: String,
    next_id: u64,
}

impl<'a> Session<'a> {
    /// A request to `/mcp` with the key (and the session, once there is one).
    fn to_mcp(&self, request: TestRequest) -> TestRequest {
        let request = request
            .uri("/mcp")
            .insert_header(("Host", "localhost"))
            .insert_header(("Authorization", format!("Bearer {}", self.key)))
            .insert_header(("MCP-Protocol-Version", "2025-06-18"));
        if self.id.is_empty() { request } else { request.insert_header(("Mcp-Session-Id", self.id.clone())) }
    }

    fn post(&self, body: Value) -> TestRequest {
        self.to_mcp(TestRequest::post())
            .insert_header(("Accept", "application/json, text/event-stream"))
            .insert_header(("Content-Type", "application/json"))
            .set_payload(body.to_string())
    }

    /// `initialize`, then `notifications/initialized`; answers the session and the
    /// server's capabilities.
    async fn open(app: &Call, key: &'a str) -> (Self, Value) {
        let mut session = Self { app: Rc::clone(app), key, id: String::new(), next_id: 1 };
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "it", "version": "0"}}});
        let response = app(session.post(initialize)).await;
        if response.status() != StatusCode::OK {
            let status = response.status();
            panic!("{status}: {:?}", test::read_body(response).await);
        }
        session.id = response.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_owned();
        let body = test::read_body(response).await;
        let answer = messages(std::str::from_utf8(&body).unwrap()).remove(0);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = app(session.post(initialized)).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
        (session, answer["result"]["capabilities"].clone())
    }

    /// One request; its answer (`result` or `error`).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let response = (self.app)(self.post(body)).await;
        let body = test::read_body(response).await;
        let text = String::from_utf8_lossy(&body);
        let answer = messages(&text).into_iter().find(|m| m["id"] == self.next_id);
        answer.unwrap_or_else(|| panic!("no answer to {method} in {text}"))
    }

    /// Opens the session's `GET` stream, where server-initiated messages go.
    async fn listen(&self) -> Stream {
        let request = self.to_mcp(TestRequest::get()).insert_header(("Accept", "text/event-stream"));
        let response = (self.app)(request).await;
        assert_eq!(response.status(), StatusCode::OK);
        Stream { body: Box::pin(response.into_body()), read: String::new(), messages: Vec::new() }
    }

    async fn delete(&self) {
        let response = (self.app)(self.to_mcp(TestRequest::delete())).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
    }
}

/// A session's `GET` stream, read message by message.
struct Stream {
    body: std::pin::Pin<Box<BoxBody>>,
    read: String,
    messages: Vec<Value>,
}

impl Stream {
    /// The next message, within [`WAIT`].
    async fn next(&mut self) -> Value {
        let next = tokio::time::timeout(WAIT, async {
            loop {
                if !self.messages.is_empty() {
                    return self.messages.remove(0);
                }
                let chunk = std::future::poll_fn(|cx| self.body.as_mut().poll_next(cx)).await;
                let chunk = chunk.expect("the stream stays open").unwrap();
                self.read.push_str(std::str::from_utf8(&chunk).unwrap());
                while let Some(end) = self.read.find("\n\n") {
                    let event: String = self.read.drain(..end + 2).collect();
                    self.messages.extend(messages(&event));
                }
            }
        });
        next.await.expect("a message on the session's stream within 5 s")
    }

    /// The next notification's method and `params.uri` (empty for none).
    async fn next_notice(&mut self) -> (String, String) {
        let message = self.next().await;
        let method = message["method"].as_str().unwrap_or_else(|| panic!("not a notification: {message}"));
        (method.to_owned(), message["params"]["uri"].as_str().unwrap_or_default().to_owned())
    }
}

fn updated(uri: &str) -> (String, String) {
    ("notifications/resources/updated".into(), uri.into())
}

fn list_changed() -> (String, String) {
    ("notifications/resources/list_changed".into(), String::new())
}

#[actix_web::test]
async fn a_subscribed_item_is_told_updated_a_new_item_changes_the_list_and_unsubscribing_stops_it() {
    let site = Site::new().await;
    let app = site.app().await;
    let (mut session, capabilities) = Session::open(&app, &site.key).await;
    assert_eq!(capabilities["resources"], json!({"subscribe": true, "listChanged": true}));
    let mut stream = session.listen().await;

    let answer = session.request("resources/subscribe", json!({"uri": "cms://posts/hello"})).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    assert_eq!(site.endpoint.following_count(), 1, "the session follows the event log");
    site.update("posts", "hello", "Hello, again").await;
    assert_eq!(stream.next_notice().await, updated("cms://posts/hello"));

    site.create("posts", "fresh", "draft").await;
    assert_eq!(stream.next_notice().await, list_changed(), "a new item changes the list");

    // Listing keeps the session following without subscriptions.
    let listed = session.request("resources/list", json!({})).await;
    assert!(listed["result"]["resources"].is_array(), "{listed}");
    let answer = session.request("resources/unsubscribe", json!({"uri": "cms://posts/hello"})).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    site.update("posts", "hello", "Nobody hears this").await;
    site.create("pages", "about", "published").await;
    assert_eq!(
        stream.next_notice().await,
        list_changed(),
        "the next notice is the new page's, not the unsubscribed item's update"
    );

    let again = session.request("resources/unsubscribe", json!({"uri": "cms://posts/hello"})).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    assert!(
        again["error"]["message"].as_str().unwrap().contains("not subscribed to cms://posts/hello"),
        "{again}"
    );

    drop(stream);
    session.delete().await;
    site.until_nobody_follows().await;
}

#[actix_web::test]
async fn a_collection_can_be_subscribed_and_bad_uris_are_refused_naming_the_cause() {
    let site = Site::new().await;
    let app = site.app().await;
    let (mut session, _) = Session::open(&app, &site.key).await;

    let refusals = [
        ("https://example.com/hello", -32602, "resource URIs start with cms://"),
        ("cms://nope/hello", -32002, "nope"),
        ("cms://posts/missing", -32002, "missing"),
        ("cms://posts/bad%20slug", -32602, "invalid slug"),
        ("cms://posts/schema", -32602, "schema changes only with the site's configuration"),
    ];
    for (uri, code, words) in refusals {
        let answer = session.request("resources/subscribe", json!({"uri": uri})).await;
        assert_eq!(answer["error"]["code"], code, "{uri}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{uri}: {message:?} should say {words:?}");
    }
    let answer = session.request("resources/unsubscribe", json!({"uri": "nope"})).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(site.endpoint.following_count(), 0, "a refused subscription follows nothing");

    let answer = session.request("resources/subscribe", json!({"uri": "cms://0"})).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    let mut stream = session.listen().await;
    site.create("posts", "second", "published").await;
    assert_eq!(stream.next_notice().await, updated("cms://0"), "the collection's listing changed");
    assert_eq!(stream.next_notice().await, list_changed());
    site.update("posts", "second", "Changed").await;
    site.create("pages", "about", "published").await;
    assert_eq!(
        stream.next_notice().await,
        list_changed(),
        "an item's update leaves its collection's listing"
    );

    // The session's stream closes; idle past mcp.session_idle_secs, it ends, and its
    // follower with it.
    drop(stream);
    site.world.clock.advance(IDLE_SECS as i64);
    site.endpoint.sessions().end_idle().await;
    site.until_nobody_follows().await;
}

#[actix_web::test]
async fn a_session_holds_at_most_the_bound_of_subscriptions() {
    let site = Site::new().await;
    let bound = cms_mcp::subscriptions::MAX_PER_SESSION;
    for n in 1..bound {
        site.create("pages", &format!("page-{n}"), "published").await;
    }
    let app = site.app().await;
    let (mut session, _) = Session::open(&app, &site.key).await;
    let mut uris: Vec<String> = (1..bound).map(|n| format!("cms://pages/page-{n}")).collect();
    uris.push("cms://posts/hello".into());
    for uri in &uris {
        let answer = session.request("resources/subscribe", json!({"uri": uri})).await;
        assert_eq!(answer["result"], json!({}), "{uri}: {answer}");
    }
    let again = session.request("resources/subscribe", json!({"uri": "cms://posts/hello"})).await;
    assert_eq!(again["result"], json!({}), "subscribing again holds no more: {again}");

    let refused = session.request("resources/subscribe", json!({"uri": "cms://pages"})).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("already holds 100 resource subscriptions"), "{message}");
    let answer = session.request("resources/unsubscribe", json!({"uri": "cms://pages/page-1"})).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    let answer = session.request("resources/subscribe", json!({"uri": "cms://pages"})).await;
    assert_eq!(answer["result"], json!({}), "room again after an unsubscription: {answer}");
    assert_eq!(site.endpoint.following_count(), 1, "one follower however many subscriptions");
}
