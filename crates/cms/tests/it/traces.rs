//! Traces over OTLP (issue 49): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, a request's span
//! tree (the request, the facade calls, the store operations beneath) reaches a real OTLP
//! receiver (`otlp_receiver.py`, decoding with the `opentelemetry-proto` definitions), in
//! the trace of the request's W3C `traceparent`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::{BIN, Server, demo_site, user_with_key};

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const PARENT_ID: &str = "b7ad6b7169203331";

/// The receiver and its spans as they arrive.
struct Receiver {
    child: Child,
    port: u16,
    spans: mpsc::Receiver<Value>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn receiver() -> Option<Receiver> {
    let Some(python) = crate::python_venv_tool("python").filter(|python| {
        Command::new(python)
            .args(["-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2"])
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        cms_s3::testing::skip_check("opentelemetry-proto", cms_s3::testing::INSTALL_PYTHON_PACKAGES);
        return None;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/otlp_receiver.py");
    let mut child = Command::new(python).arg(script).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port = first.strip_prefix("listening ").unwrap().parse().unwrap();
    let (sender, spans) = mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if sender.send(serde_json::from_str(&line).unwrap()).is_err() {
                return;
            }
        }
    });
    Some(Receiver { child, port, spans })
}

#[test]
fn a_requests_span_tree_reaches_an_otlp_receiver_in_the_callers_trace() {
    let Some(receiver) = receiver() else { return };
    let site = demo_site();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--site"])
        .arg(site.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{}", receiver.port))
        .env("OTEL_SERVICE_NAME", "cms-under-test")
        // Batches every 100 ms, not every 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let server = Server::spawn(command);

    let created = server
        .agent
        .post(format!("{}/cms/collections/posts/items", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .header("traceparent", format!("00-{TRACE_ID}-{PARENT_ID}-01"))
        .send_json(json!({"slug": "traced", "date_prefix": false, "fm": {"title": "Traced"}, "body": "Hi."}))
        .unwrap();
    assert_eq!(created.status().as_u16(), 200);

    // The request's span ends last: wait for it, keeping the trace's spans.
    let mut trace: HashMap<String, Value> = HashMap::new();
    let request = loop {
        let span =
            receiver.spans.recv_timeout(Duration::from_secs(10)).expect("the request's span within 10 s");
        assert!(span.get("refused").is_none(), "the exporter sent {span}");
        if span["trace_id"] != TRACE_ID {
            continue;
        }
        trace.insert(span["span_id"].as_str().unwrap().to_owned(), span.clone());
        if span["parent_span_id"] == PARENT_ID {
            break span;
        }
    };
    assert_eq!(request["name"], "POST /cms/collections/{collection}/items", "{request}");
    assert_eq!(request["kind"], 2, "SERVER: {request}");
    assert_eq!(request["attributes"]["http.route"], "/cms/collections/{collection}/items");
    assert_eq!(request["attributes"]["http.response.status_code"], 200);
    assert_eq!(request["attributes"]["http.request.method"], "POST");
    assert_eq!(request["service"], "cms-under-test");
    let request_id = request["span_id"].as_str().unwrap();

    // Beneath it: the facade's call, and the store's writes beneath that.
    let under_request = |span: &Value| {
        let mut parent = span["parent_span_id"].as_str().unwrap_or_default().to_owned();
        while let Some(up) = trace.get(&parent) {
            if parent == request_id {
                return true;
            }
            parent = up["parent_span_id"].as_str().unwrap_or_default().to_owned();
        }
        parent == request_id
    };
    let names: Vec<&str> = trace.values().map(|s| s["name"].as_str().unwrap()).collect();
    let facade = trace.values().find(|s| s["name"] == "create_item").unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(facade["parent_span_id"], request_id, "the facade call is the request's child");
    let stores: Vec<&Value> = trace.values().filter(|s| s["name"] == "store").collect();
    assert!(stores.iter().all(|s| under_request(s)), "{stores:?}");
    let operations: Vec<&str> =
        stores.iter().map(|s| s["attributes"]["operation"].as_str().unwrap()).collect();
    assert!(operations.iter().any(|op| op.contains("FsContentStore")), "{operations:?}");
    // No secret goes out: not the key.
    let exported = trace.values().map(Value::to_string).collect::<String>();
    assert!(!exported.contains(&key), "{exported}");

    // Nor what a client typed: a failed sign-in's email is in the log, not in the trace.
    let mut tab = crate::admin::Tab::new(&server);
    let csrf = tab.get("/admin/signin").input("csrf");
    let fields =
        [("csrf", csrf.as_str()), ("email", "typed@example.com"), ("password", "wrong"), ("next", "/admin/")];
    let traceparent = format!("00-{SIGNIN_TRACE_ID}-{PARENT_ID}-01");
    assert_eq!(tab.post("/admin/signin", &fields, &[("traceparent", &traceparent)]).status, 401);
    let mut signin = Vec::new();
    loop {
        let span =
            receiver.spans.recv_timeout(Duration::from_secs(10)).expect("the sign-in's span within 10 s");
        if span["trace_id"] == SIGNIN_TRACE_ID {
            signin.push(span.to_string());
            if span["parent_span_id"] == PARENT_ID {
                break;
            }
        }
    }
    let exported = signin.concat();
    assert!(exported.contains("POST /admin/signin"), "{exported}");
    assert!(!exported.contains("typed@example.com") && !exported.contains("wrong"), "{exported}");
}

const SIGNIN_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
