//! `xtask hello --listen ADDR`: the ceiling of the load benchmark. The smallest actix-web
//! JSON server, with the worker count `cms serve` uses, so that the benchmark can say how
//! close the CMS comes to what actix-web and this machine allow.

use std::io::Write;
use std::num::NonZeroUsize;

use actix_web::{App, HttpResponse, HttpServer, web};
use anyhow::{Context, bail};

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let listen = match args {
        [flag, address] if flag == "--listen" => address.clone(),
        _ => bail!("usage: xtask hello --listen ADDR"),
    };
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(|| App::new().route("/", web::get().to(hello)))
            .workers(cms_worker_count())
            .bind(&listen)
            .with_context(|| format!("cannot listen on {listen}"))?;
        // The same first line as `cms serve`, so one start-up routine serves both.
        let mut out = std::io::stdout().lock();
        for address in server.addrs() {
            writeln!(out, "listening on http://{address}")?;
        }
        out.flush()?;
        drop(out);
        server.run().await.context("server failed")
    })
}

/// `cms serve` leaves the worker count at actix-web's default, one per available CPU
/// (2 on the benchmark machine); set here explicitly so that the match is visible.
fn cms_worker_count() -> usize {
    std::thread::available_parallelism().map_or(2, NonZeroUsize::get)
}

async fn hello() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "hello": "world" }))
}
