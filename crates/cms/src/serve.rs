use std::io::Write;

use actix_web::{HttpServer, web};
use anyhow::Context;
use cms_http::AppState;

use crate::site::{OpenSite, Site};

/// Serves the REST API until SIGINT/SIGTERM; in-flight requests finish first, then pending
/// webhook deliveries.
pub fn run(site: Site, listen: &str) -> anyhow::Result<()> {
    let open = site.open(crate::site::Purpose::Serve)?;
    let served = serve(&site, &open, listen);
    open.finish_deliveries();
    served
}

fn serve(site: &Site, open: &OpenSite, listen: &str) -> anyhow::Result<()> {
    let first_key = site.first_start_key(open)?;
    let state = web::Data::new(AppState::new(
        open.cms.clone(),
        open.config.cors.allowed_origins.clone(),
        open.config.limits.json_bytes,
        open.config.limits.upload_bytes,
    ));
    let root = open.root.display().to_string();
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || cms_http::app(state.clone()))
            .bind(listen)
            .with_context(|| format!("cannot listen on {listen}"))?;
        for address in server.addrs() {
            // Standard output, so that scripts and tests can read the bound address.
            say(format_args!("listening on http://{address}"));
        }
        say(format_args!("site folder: {root}"));
        if let Some(key) = &first_key {
            say(format_args!(
                "created the demo owner {} with this API key (shown once):",
                crate::site::DEMO_OWNER
            ));
            say(format_args!("{key}"));
        }
        say(format_args!("ready (Ctrl-C stops the server)"));
        server.run().await.context("server failed")
    })
}

/// Writes a line to standard output; a closed pipe must not stop the server.
fn say(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}
