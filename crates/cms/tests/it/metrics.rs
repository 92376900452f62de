//! Prometheus metrics (issue 49) on the real server: off by default; on an address of
//! their own without a key (`metrics.listen`) and on the main address with a bearer token
//! (`metrics.token_env`); after a mixed workload the scrape counts requests by route
//! template (never a path), `promtool check metrics` passes it, and a real Prometheus
//! server scrapes it and answers a PromQL query for the request rate by route.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{BIN, Server, demo_site, user_with_key};

/// How long Prometheus may take to start, scrape twice and answer.
const PROMETHEUS_WITHIN: Duration = Duration::from_secs(30);

const TOKEN: &str = "metrics-token-for-tests";

fn text(server: &Server, url: &str, token: Option<&str>) -> (u16, String) {
    let mut req = server.agent.get(url);
    if let Some(token) = token {
        req = req.header("Authorization", format!("Bearer {token}"));
    }
    let mut response = req.call().unwrap();
    (response.status().as_u16(), response.body_mut().read_to_string().unwrap())
}

/// The value of the sample whose line starts with `series` (name and labels).
fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn metrics_are_off_by_default_and_count_requests_by_route_for_their_readers() {
    let site = demo_site();
    let (status, body) = {
        let server = Server::start(site.path());
        server.get("/metrics", None)
    };
    assert_eq!(status, 404, "off by default: {body}");
    assert!(body["error"].as_str().unwrap().contains("metrics.token_env"), "{body}");

    let config = site.path().join("cms.yaml");
    let mut yaml = std::fs::read_to_string(&config).unwrap();
    yaml.push_str("metrics:\n  listen: 127.0.0.1:0\n  token_env: CMS_TEST_METRICS_TOKEN\n");
    std::fs::write(&config, yaml).unwrap();
    let key = user_with_key(site.path(), "ed@example.com", "editor");
    // Without the variable the server refuses to start, naming it.
    let refused = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--site"])
        .arg(site.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("CMS_TEST_METRICS_TOKEN"));

    let mut command = Command::new(BIN);
    command.args(["serve", "--listen", "127.0.0.1:0", "--site"]).arg(site.path());
    command.env("CMS_TEST_METRICS_TOKEN", TOKEN);
    let server = Server::spawn(command);
    let own = server
        .banner
        .iter()
        .find_map(|line| line.strip_prefix("metrics on "))
        .expect("the banner names the metrics' address")
        .to_owned();

    // A mixed workload: lists, items, a miss, a write, the editor, the probes.
    for _ in 0..3 {
        assert_eq!(server.get("/cms/collections/blog-posts/items", None).0, 200);
    }
    assert_eq!(server.get("/cms/collections/blog-posts/items/hello-world", None).0, 200);
    assert_eq!(server.get("/cms/collections/blog-posts/items/no-such-post", None).0, 404);
    let created = server
        .agent
        .post(format!("{}/cms/collections/posts/items", server.base))
        .header("Authorization", format!("Bearer {key}"))
        .send_json(json!({"slug": "counted", "date_prefix": false, "fm": {"title": "Counted", "status": "published"}}))
        .unwrap();
    assert_eq!(created.status().as_u16(), 200);
    assert_eq!(text(&server, &format!("{}/admin/signin", server.base), None).0, 200);
    assert_eq!(server.get("/readyz", None).0, 200);
    // An image variant, rendered by the pool.
    let variant = server.agent.get(format!("{}/media/uploads/logo.png?w=160", server.base)).call().unwrap();
    assert_eq!(variant.status().as_u16(), 200);

    // The main address wants the token; the own address wants nothing.
    let main = format!("{}/metrics", server.base);
    assert_eq!(text(&server, &main, None).0, 401);
    assert_eq!(text(&server, &main, Some("wrong")).0, 401);
    assert_eq!(text(&server, &main, Some(TOKEN)).0, 200);
    let (status, scrape) = text(&server, &own, None);
    assert_eq!(status, 200, "{scrape}");
    let requests = |route: &str, method: &str, status: &str| {
        sample(
            &scrape,
            &format!("cms_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}}"),
        )
    };
    assert_eq!(requests("/cms/collections/{collection}/items", "GET", "2xx"), Some(3.0), "{scrape}");
    assert_eq!(requests("/cms/collections/{collection}/items/{slug}", "GET", "2xx"), Some(1.0));
    assert_eq!(requests("/cms/collections/{collection}/items/{slug}", "GET", "4xx"), Some(1.0));
    assert_eq!(requests("/cms/collections/{collection}/items", "POST", "2xx"), Some(1.0));
    assert_eq!(requests("/admin/signin", "GET", "2xx"), Some(1.0), "{scrape}");
    assert!(!scrape.contains("no-such-post") && !scrape.contains("hello-world"), "no path in a label");
    assert_eq!(sample(&scrape, "cms_index_items{collection=\"blog-posts\",status=\"live\"}"), Some(4.0));
    assert_eq!(sample(&scrape, "cms_ready"), Some(1.0));
    assert_eq!(sample(&scrape, "cms_http_requests_in_flight"), Some(0.0), "every request counted out");
    assert!(scrape.contains("cms_http_request_duration_seconds_bucket{"), "{scrape}");
    // The adapters' own: kept answers, the image pool, webhooks, agent sessions, sign-ins.
    let lookups = |cache: &str, outcome: &str| {
        sample(&scrape, &format!("cms_answer_cache_lookups_total{{cache=\"{cache}\",outcome=\"{outcome}\"}}"))
    };
    // One count per request: the same list three times is a miss, then two hits.
    assert_eq!(lookups("lists", "miss"), Some(1.0), "{scrape}");
    assert_eq!(lookups("lists", "hit"), Some(2.0), "{scrape}");
    assert_eq!(lookups("items", "hit").unwrap() + lookups("items", "miss").unwrap(), 1.0, "{scrape}");
    assert!(sample(&scrape, "cms_answer_cache_bytes{cache=\"lists\"}").unwrap() > 0.0, "{scrape}");
    assert_eq!(sample(&scrape, "cms_image_renders_total{outcome=\"rendered\"}"), Some(1.0), "{scrape}");
    assert!(sample(&scrape, "cms_image_render_seconds_total").unwrap() > 0.0, "{scrape}");
    assert_eq!(sample(&scrape, "cms_image_queue"), Some(0.0));
    assert_eq!(sample(&scrape, "cms_webhook_outbox_events"), Some(0.0), "{scrape}");
    assert_eq!(sample(&scrape, "cms_webhook_deliveries_total{outcome=\"failed\"}"), Some(0.0));
    assert_eq!(sample(&scrape, "cms_mcp_sessions"), Some(0.0));
    assert_eq!(sample(&scrape, "cms_indexing_files{state=\"found\"}"), Some(0.0), "done indexing");
    assert!(sample(&scrape, "cms_index_snapshot_age_seconds").unwrap() < 60.0, "{scrape}");
    assert_eq!(sample(&scrape, "cms_signin_refused_total"), Some(0.0));
    assert_eq!(sample(&scrape, "cms_signin_locked{subject=\"account\"}"), Some(0.0));

    promtool_passes(&scrape);
    prometheus_scrapes(&own);
}

/// `promtool check metrics` (Debian's `prometheus` package) on a scrape.
fn promtool_passes(scrape: &str) {
    if Command::new("promtool").arg("--version").output().is_err() {
        cms_s3::testing::skip_check(
            "promtool",
            "apt-get install prometheus (cargo xtask test does, as root)",
        );
        return;
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), scrape.as_bytes()).unwrap();
    let checked = child.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// A real Prometheus server scrapes `url` every 200 ms; a PromQL query for the request
/// rate by route returns the routes the workload used.
fn prometheus_scrapes(url: &str) {
    if Command::new("prometheus").arg("--version").output().is_err() {
        cms_s3::testing::skip_check(
            "prometheus",
            "apt-get install prometheus (cargo xtask test does, as root)",
        );
        return;
    }
    let target = url.strip_prefix("http://").unwrap().strip_suffix("/metrics").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 200ms\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: cms\n    \
             static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut prometheus = ChildGuard(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let query = "sum by (route) (increase(cms_http_requests_total[1m]))";
    let deadline = std::time::Instant::now() + PROMETHEUS_WITHIN;
    let routes = loop {
        let routes = {
            let answer = agent
                .get(format!("http://127.0.0.1:{port}/api/v1/query"))
                .query("query", query)
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok());
            let results = answer.map(|a| a["data"]["result"].as_array().cloned().unwrap_or_default());
            results
                .unwrap_or_default()
                .iter()
                .filter_map(|r| r["metric"]["route"].as_str().map(str::to_owned))
                .collect::<Vec<String>>()
        };
        if routes.iter().any(|r| r == "/cms/collections/{collection}/items")
            || std::time::Instant::now() > deadline
        {
            break routes;
        }
        // Prometheus' own pace (a scrape every 200 ms), not a guess at the server's.
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(routes.iter().any(|r| r == "/cms/collections/{collection}/items"), "PromQL answered {routes:?}");
    let _ = prometheus.0.kill();
}

struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
