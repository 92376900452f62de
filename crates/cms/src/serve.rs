//! `cms serve`: the REST API with the web editor mounted at `/admin/` and the AI-agent
//! endpoint at `/mcp`. The port is bound first and the site indexed while it listens
//! (`cms_http::warmup` answers `503` meanwhile; the count is logged every second); then
//! the search indexes are built in the background and the single items' answers made
//! ahead into an `FsRenderCache`. Index snapshots are saved after start-up, every minute
//! when an index moved, and at the stop. Told to stop, the server drains first
//! ([`stop_on_signal`]); a graceful stop then finishes pending webhook deliveries.

use std::future::Future;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::http::KeepAlive;
use actix_web::{HttpServer, web};
use anyhow::Context;
use cms_core::Cms;
use cms_core::ports::ChangeFeed;
use cms_http::AppState;

use crate::site::{OpenSite, Site};

/// How often the site is rescanned when the store reports no changes (no feed, or the
/// feed ended).
const RESCAN_EVERY: Duration = Duration::from_secs(1);

/// Threads each worker may start for file I/O (actix-web's default is 512 shared by the
/// workers). Reads and fsyncs of a few KB gain nothing past a few dozen in flight, and every
/// thread keeps a stack and allocator state: at 100,000 items under load the default grew
/// the server by tens of MB (docs/performance.md).
const BLOCKING_THREADS_PER_WORKER: usize = 16;

/// How long a connection being closed may take to say goodbye (actix's default): the
/// lingering read after an answer to a body that was not read, the final flush.
const CLIENT_DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Disk a server may fill with single items' answers (an unnamed file under `.cms/`,
/// gone when it stops): the most the file can address, 4 GiB, about 1,300,000 answers
/// of 3 KB. The file grows only with the answers made (about one and a half times the
/// site's Markdown); a budget of 1 GiB held a third of a 1,000,000-item site's, and a
/// random read of the others rendered its file (160 µs of a core).
const ANSWERS_BYTES: u64 = cms_fs::MAX_ANSWERS_BUDGET;

/// How the log and the traces are set up for the server.
pub struct Serving {
    /// Requests' spans continue their `traceparent` and are exported ([`crate::traces`]).
    pub traced: bool,
    /// Where the access log's lines go; `None`: `RUST_LOG` leaves them out.
    pub access: Option<crate::logging::AccessLines>,
}

/// Serves the REST API until SIGINT/SIGTERM ([`stop_on_signal`]); in-flight requests
/// finish first, then pending webhook deliveries.
pub fn run(site: Site, listen: &str, serving: Serving) -> anyhow::Result<()> {
    let open = site.open(crate::site::Purpose::Serve)?;
    let served = serve(&site, &open, listen, serving);
    open.finish_deliveries();
    served
}

fn serve(site: &Site, open: &OpenSite, listen: &str, serving: Serving) -> anyhow::Result<()> {
    let mut state = AppState::new(
        open.cms.clone(),
        open.config.cors.allowed_origins.clone(),
        open.config.limits.json_bytes,
        open.config.limits.upload_bytes,
    );
    // Single items' answers kept on this node's disk, and in its memory while it is small.
    let state_dir = open.root.join(cms_fs::STATE_DIR);
    let held = match open.config.server.answers_memory_mb {
        0 => cms_fs::HeldInMemory::NONE,
        mb => cms_fs::HeldInMemory::below(mb << 20),
    };
    match cms_fs::FsRenderCache::create_in(&state_dir, ANSWERS_BYTES, held) {
        Ok(answers) => {
            let answers = Arc::new(answers);
            state.metrics.observe(answers.clone());
            state = state.with_answers(answers);
            let progress = state.ahead.clone();
            state = state.with_report("answers", Arc::new(move || progress.report()));
        }
        Err(error) => tracing::warn!(
            %error,
            folder = %state_dir.display(),
            "cannot keep single items' answers on disk; keeping the most recent in memory"
        ),
    }
    if let Some(name) = &open.config.metrics.token_env {
        let token = std::env::var(name).ok().filter(|token| !token.trim().is_empty()).with_context(|| {
            format!(
                "metrics.token_env in cms.yaml names {name}, which is not set or empty: set it to the token \
                 scrapers will send, or remove metrics.token_env"
            )
        })?;
        state = state.with_metrics_token(token.trim().to_owned());
    }
    if serving.traced {
        state = state.with_traces(crate::traces::RequestTraces::shared());
    }
    if let Some(access) = serving.access
        && open.config.server.access_log
    {
        let sample = open.config.server.access_log_sample;
        let log = cms_http::access_log::AccessLog::new(access.format, sample, access.sink)
            .context("cannot start the access log's writer thread")?;
        state = state.with_access_log(log);
    }
    let access_log = state.access_log.clone();
    // The site in git: each write a commit, pushed to the remote (docs/git.md).
    let git = match &open.config.git {
        Some(config) => {
            let git = cms_git::GitSite::open(&open.root, &state_dir, config, open.cms.clone())
                .context("cannot keep the site in git (git: in cms.yaml)")?;
            git.follow(&open.cms);
            let git = Arc::new(git);
            if let Some(name) = &config.pull_token_env {
                let secret = std::env::var(name).ok().filter(|secret| !secret.trim().is_empty()).with_context(|| {
                    format!(
                        "git.pull_token_env in cms.yaml names {name}, which is not set or empty: set it to the secret \
                         your forge's push webhook sends, or remove git.pull_token_env"
                    )
                })?;
                let asking = git.clone();
                state =
                    state.with_pull_trigger(secret.trim().to_owned(), Arc::new(move || asking.ask_pull()));
            }
            let reported = git.clone();
            state = state.with_report(
                "git",
                Arc::new(move || serde_json::to_value(reported.status()).unwrap_or_default()),
            );
            Some(git)
        }
        None => None,
    };
    if open.config.metrics.listen.is_some() {
        state = state.counting_requests();
    }
    let snapshot_age = Arc::new(SnapshotAge::default());
    state.metrics.observe(snapshot_age.clone());
    for readings in &open.readings {
        state.metrics.observe(readings.clone());
    }
    let state = web::Data::new(state);
    let metrics_state = state.clone();
    // The web editor at /admin/, on the same facade.
    let mut admin = cms_admin::AdminState::new(
        open.cms.clone(),
        open.sessions.clone(),
        &open.config.signin,
        open.config.limits.upload_bytes,
        open.config.limits.json_bytes,
    );
    if let Some(git) = &git {
        // The home page says how the site's git stands: commits waiting, failures.
        let status_of = git.clone();
        admin = admin
            .with_site_notices(Arc::new(move |detailed| vec![git_notice(&status_of.status(), detailed)]));
        // A git pull's conflict shows on the item's edit page, until someone marks it resolved.
        let resolving = git.clone();
        admin = admin.with_notice_dismissal(Arc::new(move |collection, filename| {
            resolving.resolve_conflict(collection, filename).map_err(|error| error.to_string())
        }));
        let git = git.clone();
        admin = admin.with_notices(Arc::new(move |collection, filename| {
            let conflict = git.conflict_of(collection, filename)?;
            Some(cms_admin::ItemNotice {
                heading: "A git pull met a conflict on this item".into(),
                text: format!(
                    "At {} both this site and the remote had changed it, and git could not merge the two: the \
                     remote's version is the current one. This site's version is the newest in its history, and \
                     on the git branch {}.",
                    conflict.at, conflict.branch
                ),
                compare_newest: true,
                dismiss: Some("Mark as resolved".into()),
            })
        }));
    }
    let admin = web::Data::new(admin);
    let storage = open.storage.clone();
    let git_banner = git.clone();
    let cms = open.cms.clone();
    // The AI-agent endpoint's transport: made once, so that its sessions are shared by
    // every worker.
    let agent = cms_mcp::endpoint(cms.clone(), open.config.limits.json_bytes, &open.config.mcp);
    state.metrics.observe(agent.sessions().clone());
    state.metrics.observe(admin.clone().into_inner());
    // The file adapters run their blocking I/O on tokio's blocking pool: every facade call
    // below happens on this runtime (the workers of `HttpServer` have their own).
    let served = actix_web::rt::System::new().block_on(async move {
        let first_key = site.first_start_key(open).await?;
        crate::site::warn_about_license(&open.root, &cms).await;
        // Subscribed before the index is built, so that an edit made during the build is
        // reported too (a report of a file indexed as it is costs one stat).
        let feed = subscribe(&cms);
        // From here on the routes answer 503 (and /status "indexing") until the indexes
        // are built: the port is bound at once, whatever the size of the site.
        let starting = cms.upkeep().start();
        let ahead = state.clone();

        // Slow clients: heads, bodies and idle connections are timed, and each worker
        // serves a bounded number of connections (cms_http::deadlines says what actix
        // enforces by itself and what is added).
        let deadlines = cms_http::deadlines::ClientDeadlines::new(&open.config.server);
        let server = HttpServer::new(move || {
            cms_http::app_with(state.clone(), cms_http::agent::mount(agent.clone().scope()))
                .configure(|cfg| cms_admin::mount(cfg, admin.clone()))
                .wrap(deadlines.middleware())
        })
        // Nagle's algorithm off (actix-web keeps the system's default, on): with it on, the
        // last segment of a body larger than one write waits for the client's delayed ACK
        // on a kept-alive connection (up to 40 ms; a 50 KB sitemap took 26 ms, not 0.7).
        .tcp_nodelay(true)
        .client_request_timeout(deadlines.header)
        .keep_alive(KeepAlive::Timeout(deadlines.keep_alive))
        .client_disconnect_timeout(CLIENT_DISCONNECT_TIMEOUT)
        .on_connect(deadlines.watch_connections())
        .max_connections(open.config.server.max_connections)
        .worker_max_blocking_threads(BLOCKING_THREADS_PER_WORKER)
        // SIGINT and SIGTERM are this server's own ([`stop_on_signal`]): it drains first.
        .disable_signals()
        .shutdown_timeout(open.config.server.stop_timeout_secs)
        .bind(listen)
        .with_context(|| format!("cannot listen on {listen}"))?;
        // The loopback names on these ports, and a specific address, are this server's.
        let bound = server.addrs();
        cms.hosts().bind(&bound);
        for address in server.addrs() {
            // Standard output, so that scripts and tests can read the bound address.
            say(format_args!("listening on http://{address}"));
        }
        if let Some(address) = server.addrs().first() {
            say(format_args!("web editor: http://{address}/admin/"));
            // A second server started on this folder names where this one listens.
            if let Some(lock) = &open.serve_lock
                && let Err(error) = lock.record_listening(&format!("http://{address}"))
            {
                tracing::warn!(%error, "cannot write where this server listens into the site folder's lock file");
            }
        }
        say(format_args!("{storage}"));
        if let Some(git) = &git_banner {
            let status = git.status();
            say(format_args!("git: committing to branch {} ({})", status.branch, status.summary()));
        }
        let mut handles = Vec::new();
        if let Some(address) = &open.config.metrics.listen {
            // An address of their own, without a key (keep it off the public network).
            let metrics =
                HttpServer::new(move || cms_http::handlers::metrics::metrics_app(metrics_state.clone()))
                    .workers(1)
                    .disable_signals()
                    .bind(address)
                    .with_context(|| format!("cannot listen on {address} (metrics.listen in cms.yaml)"))?;
            for address in metrics.addrs() {
                say(format_args!("metrics on http://{address}/metrics"));
            }
            let metrics = metrics.run();
            handles.push(metrics.handle());
            actix_web::rt::spawn(metrics);
        }
        let server = server.run();
        handles.insert(0, server.handle());
        let mut running = actix_web::rt::spawn(server);
        let drain = Duration::from_secs(open.config.server.drain_secs);
        stop_on_signal(cms.clone(), handles, drain);
        if let Some(address) = bound.first() {
            crate::systemd::keep_watchdog(*address, cms.clone());
        }
        tokio::select! {
            (items, took) = async {
                hold_indexing_for_tests().await;
                build_index(&cms, starting).await
            } => say(format_args!("indexed {items} items in {:.2} s", took.as_secs_f64())),
            // Stopped (Ctrl-C) before the site was indexed.
            served = &mut running => return served_result(served),
        }
        follow(cms.clone(), feed);
        check_snapshot_starts(cms.clone());
        crate::schedule::keep_schedule(cms.clone(), open.schedule_mark.clone());
        keep_event_log(cms.clone(), open.poll_interval);
        keep_snapshots(cms.clone(), snapshot_age.clone());
        prepare_in_background(ahead);
        if let Some((key, password)) = &first_key {
            say(format_args!(
                "created the demo owner {} with this API key (shown once):",
                crate::site::DEMO_OWNER
            ));
            say(format_args!("{key}"));
            say(format_args!("and this password for the web editor (shown once):"));
            say(format_args!("{password}"));
        }
        say(format_args!("ready (Ctrl-C stops the server)"));
        if !cms.is_draining() {
            crate::systemd::ready("serving");
        }
        let served = served_result(running.await);
        crate::schedule::stop(&cms);
        // The last events get their ids before the webhooks' last deliveries.
        cms.upkeep().publish_events().await;
        save_snapshots(&cms).await;
        served
    });
    // No write comes any more: what is queued is committed, and pushed once.
    if let Some(git) = git {
        git.finish();
        let status = git.status();
        if status.queued > 0 || status.commit_error.is_some() || status.push_error.is_some() {
            tracing::warn!(queued = status.queued, "git at the stop: {}", status.summary());
        }
    }
    // The workers are gone: what the access log holds is written out.
    if let Some(access_log) = access_log {
        let dropped = access_log.finish();
        if dropped > 0 {
            tracing::warn!(dropped, "access log lines were dropped: standard error did not keep up");
        }
    }
    served
}

/// How often events past `events.keep_hours` are forgotten.
const FORGET_EVENTS_EVERY: Duration = Duration::from_secs(600);

/// What the editor's home page says of the site's git: how it stands (commits waiting,
/// failing pushes, pulls or commits, conflicts), and what to do when it is wrong. git's own
/// words (remote addresses, its messages) only for those who run the site (`detailed`).
fn git_notice(status: &cms_git::GitStatus, detailed: bool) -> cms_admin::SiteNotice {
    let mut text = if detailed { status.summary() } else { status.brief() };
    if !text.ends_with('.') {
        text.push('.');
    }
    if status.queued > 0 {
        let s = if status.queued == 1 { "" } else { "s" };
        text.push_str(&format!(" {} saved change{s} waiting to be committed.", status.queued));
    }
    if status.conflicts > 0 {
        let s = if status.conflicts == 1 { "" } else { "s" };
        text.push_str(&format!(
            " {} pull{s} met a conflict: `cms git status` lists the items, and their edit pages show both versions.",
            status.conflicts
        ));
    }
    let problem = status.commit_error.is_some()
        || status.push_error.is_some()
        || status.pull_error.is_some()
        || status.conflicts > 0;
    if problem {
        text.push_str(if detailed {
            " Writes go on; `cms git status` and /readyz tell more."
        } else {
            " Writes go on; the site's administrators see why here."
        });
    }
    cms_admin::SiteNotice { heading: format!("Git: branch {}", status.branch), text, problem }
}

/// Keeps the event log: on a bucket site, reads the other servers' events every `poll`
/// (`storage.poll_ms`, as often as it reads their writes, so that a change made through
/// another server reaches this one's streams within it); everywhere, forgets old events
/// every [`FORGET_EVENTS_EVERY`].
fn keep_event_log(cms: Arc<Cms>, poll: Option<Duration>) {
    if let Some(poll) = poll.filter(|_| cms.upkeep().shares_store()) {
        let polling = cms.clone();
        actix_web::rt::spawn(async move {
            loop {
                actix_web::rt::time::sleep(poll).await;
                if let Err(error) = polling.upkeep().catch_up_events().await {
                    tracing::warn!(%error, "cannot read the other servers' events; retrying");
                }
            }
        });
    }
    actix_web::rt::spawn(async move {
        loop {
            if let Err(error) = cms.upkeep().forget_old_events().await {
                tracing::warn!(%error, "cannot forget old events; retrying later");
            }
            actix_web::rt::time::sleep(FORGET_EVENTS_EVERY).await;
        }
    });
}

/// Stops the server when it is told to (SIGINT, SIGTERM), without dropping a request:
/// `/readyz` answers 503 and every answer closes its connection from then on; the live
/// event streams end at once (their clients reconnect, to another server or to this one
/// once it is back, and resume); for `drain` (`server.drain_secs`) the server goes on
/// serving, so that load balancers see it leave and move its clients; then it stops taking
/// connections and gives the requests in flight `server.stop_timeout_secs` to finish.
/// A second signal stops the process at once.
fn stop_on_signal(cms: Arc<Cms>, servers: Vec<actix_web::dev::ServerHandle>, drain: Duration) {
    // Watched from here on, once: a signal between two waits is not lost.
    let mut signals = match Signals::watch() {
        Ok(signals) => signals,
        Err(error) => {
            tracing::warn!(%error, "cannot watch for SIGINT and SIGTERM; stop the server with SIGKILL");
            return;
        }
    };
    actix_web::rt::spawn(async move {
        signals.next().await;
        cms.upkeep().begin_draining();
        cms.event_log().close();
        crate::systemd::stopping("draining");
        actix_web::rt::spawn(async move {
            signals.next().await;
            // Straight to standard error: the log's writer thread may not get to it.
            eprintln!(
                "told again: stopping now, without waiting for the requests in flight \
                 (webhook deliveries not yet made stay in the outbox for the next start)"
            );
            std::process::exit(1);
        });
        if !drain.is_zero() {
            tracing::info!(seconds = drain.as_secs(), "told to stop: draining, then stopping");
            actix_web::rt::time::sleep(drain).await;
        }
        crate::systemd::status("finishing the requests in flight");
        for server in &servers {
            server.stop(true).await;
        }
    });
}

/// SIGINT and SIGTERM, each watched by one stream for the life of the server.
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn watch() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// The next SIGINT or SIGTERM.
    async fn next(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

/// Builds the search indexes in the background, so that the first search does not wait
/// for every item file to be read (a search before then waits for it), then makes the
/// live items' answers ahead of their first reads.
fn prepare_in_background(state: web::Data<AppState>) {
    actix_web::rt::spawn(async move {
        if let Err(error) = state.cms.prepare_search().await {
            tracing::warn!(%error, "cannot build the search index; searches will retry");
        }
        match cms_http::ahead::render_ahead(&state).await {
            Ok(items) => tracing::info!(items, "rendered items ahead of their reads"),
            Err(error) => tracing::warn!(%error, "cannot render items ahead; they render on first read"),
        }
    });
}

/// How often the index snapshots are brought up to date while serving (a snapshot that is
/// behind only costs the next start a parse of what changed since).
const SNAPSHOT_EVERY: Duration = Duration::from_secs(60);

/// Saves the index snapshots now (after start-up) and then every [`SNAPSHOT_EVERY`], on
/// this runtime; an unchanged index costs one comparison.
fn keep_snapshots(cms: Arc<Cms>, age: Arc<SnapshotAge>) {
    actix_web::rt::spawn(async move {
        loop {
            if save_snapshots(&cms).await {
                age.current_now();
            }
            actix_web::rt::time::sleep(SNAPSHOT_EVERY).await;
        }
    });
}

/// Whether the snapshots match the index now (saved, or nothing to save).
async fn save_snapshots(cms: &Cms) -> bool {
    let started = Instant::now();
    match cms.upkeep().save_snapshots().await {
        Ok(0) => true,
        Ok(saved) => {
            tracing::info!(saved, seconds = started.elapsed().as_secs_f64(), "saved index snapshots");
            true
        }
        Err(error) => {
            tracing::warn!(%error, "cannot save the index snapshots; the next start parses every item");
            false
        }
    }
}

/// When the index snapshots last matched the index, for `/metrics`
/// (`cms_index_snapshot_age_seconds`: what a restart now would parse again is at most
/// that old; it grows past [`SNAPSHOT_EVERY`] only while saving fails).
#[derive(Default)]
struct SnapshotAge {
    /// Unix seconds; 0 until the first save.
    current_at: std::sync::atomic::AtomicI64,
}

impl SnapshotAge {
    fn current_now(&self) {
        self.current_at.store(unix_now(), std::sync::atomic::Ordering::Relaxed);
    }
}

impl cms_core::readings::Observed for SnapshotAge {
    fn readings(&self) -> Vec<cms_core::readings::Reading> {
        let at = self.current_at.load(std::sync::atomic::Ordering::Relaxed);
        if at == 0 {
            return Vec::new();
        }
        let age = (unix_now() - at).max(0) as f64;
        let help = "Time since the index snapshots last matched the index (saved every minute)";
        vec![cms_core::readings::Reading::gauge("index_snapshot_age_seconds", help, age)]
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// Waits for [`Upkeep::start`](cms_core::service::Upkeep::start) (every collection's index,
/// and the license), logging how far it is every [`PROGRESS_EVERY`]; returns how many usable items the indexes hold and how
/// long it took. A collection that cannot be indexed is logged by the facade and answers
/// its error to its requests; the others are served.
async fn build_index(
    cms: &Cms,
    starting: impl Future<Output = cms_core::CoreResult<()>>,
) -> (usize, Duration) {
    let started = Instant::now();
    let progress = async {
        loop {
            actix_web::rt::time::sleep(PROGRESS_EVERY).await;
            if let Some(progress) = cms.indexing() {
                crate::systemd::status(&format!(
                    "indexing: {} of {} item files found so far",
                    progress.indexed, progress.found
                ));
                tracing::info!(
                    indexed = progress.indexed,
                    found = progress.found,
                    seconds = started.elapsed().as_secs(),
                    "indexing the site; routes answer 503 until it is done"
                );
            }
        }
    };
    tokio::select! {
        result = starting => if let Err(error) = result {
            tracing::warn!(%error, "serving without part of the site; see the errors above");
        },
        never = progress => never,
    }
    let took = started.elapsed();
    let mut items = 0;
    for collection in cms.all_collections() {
        items += cms.indexed_items(collection).await.map_or(0, |items| items.len());
    }
    tracing::info!(items, seconds = took.as_secs_f64(), "indexed the site");
    (items, took)
}

/// How often the first indexing logs its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The answer of the server's task: its own error, or the task's.
fn served_result(served: Result<std::io::Result<()>, actix_web::rt::task::JoinError>) -> anyhow::Result<()> {
    served.context("server failed")?.context("server failed")
}

/// A hook for the tests of the binary: with `CMS_TEST_HOLD_INDEXING=PATH` (a FIFO), the
/// server listens but starts indexing only once that file was read to its end, so that a
/// test can see the answers of a server that is still indexing without racing it.
async fn hold_indexing_for_tests() {
    let Some(path) = std::env::var_os("CMS_TEST_HOLD_INDEXING") else { return };
    let held = actix_web::rt::task::spawn_blocking(move || std::fs::read(&path)).await;
    if !matches!(held, Ok(Ok(_))) {
        tracing::warn!("CMS_TEST_HOLD_INDEXING: cannot read the file; indexing now");
    }
}

/// Compares each index that the start made from its snapshot alone with its folder, once
/// the server answers (edits made in place while it was stopped are found here), on this
/// runtime.
fn check_snapshot_starts(cms: Arc<Cms>) {
    actix_web::rt::spawn(async move {
        // Each failure is logged where it happens; the change feed and rescans go on.
        let _ = cms.upkeep().check_snapshot_starts().await;
    });
}

/// The store's change feed, or `None` (then the site is rescanned every second). A feed
/// that cannot start (say, the inotify watch limit is reached) is not fatal.
fn subscribe(cms: &Cms) -> Option<Box<dyn ChangeFeed>> {
    match cms.upkeep().subscribe() {
        Ok(Some(feed)) => Some(feed),
        Ok(None) => {
            tracing::info!("the store reports no changes; rescanning every {RESCAN_EVERY:?}");
            None
        }
        Err(error) => {
            tracing::warn!(%error, "cannot follow changes on disk; rescanning every {RESCAN_EVERY:?}");
            None
        }
    }
}

/// Keeps the indexes up to date with changes made behind the server's back, on this
/// runtime: the feed while it lasts, then a rescan every second.
fn follow(cms: Arc<Cms>, feed: Option<Box<dyn ChangeFeed>>) {
    actix_web::rt::spawn(async move {
        if let Some(feed) = feed {
            cms.upkeep().follow_changes(feed).await;
            tracing::warn!("falling back to rescanning every {RESCAN_EVERY:?}");
        }
        let mut failing = false;
        loop {
            actix_web::rt::time::sleep(RESCAN_EVERY).await;
            match cms.upkeep().rescan_all().await {
                Ok(()) if failing => {
                    tracing::info!("rescanning the site works again");
                    failing = false;
                }
                Ok(()) => {}
                // Logged once per run of failures, not every second.
                Err(error) if !failing => {
                    tracing::warn!(%error, "rescanning the site failed; retrying every {RESCAN_EVERY:?}");
                    failing = true;
                }
                Err(_) => {}
            }
        }
    });
}

/// Writes a line to standard output; a closed pipe must not stop the server.
fn say(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}
