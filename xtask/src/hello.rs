//! `xtask hello --listen ADDR`: the ceiling of the load benchmark. The smallest actix-web
//! JSON server, with the worker count `cms serve` uses, so that the benchmark can say how
//! close the CMS comes to what actix-web and this machine allow.
//!
//! `GET /bytes/{n}` answers a prepared JSON body of `n` bytes (at most 1 MiB) with nothing
//! else to do: a reference for what sending an answer of a list's or an item's size costs
//! on its own.

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
        let server = HttpServer::new(|| {
            App::new().route("/", web::get().to(hello)).route("/bytes/{n}", web::get().to(bytes))
        })
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

/// Bodies by size, prepared once per size so that an answer is a reference-counted copy.
static BODIES: std::sync::Mutex<Vec<(usize, actix_web::web::Bytes)>> = std::sync::Mutex::new(Vec::new());

async fn bytes(n: web::Path<usize>) -> HttpResponse {
    let n = n.into_inner();
    if n > 1 << 20 {
        return HttpResponse::BadRequest().finish();
    }
    let mut bodies = BODIES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let body = match bodies.iter().find(|(size, _)| *size == n) {
        Some((_, body)) => body.clone(),
        None => {
            let body = actix_web::web::Bytes::from(padded_json(n));
            bodies.push((n, body.clone()));
            body
        }
    };
    drop(bodies);
    HttpResponse::Ok().content_type("application/json").body(body)
}

/// `{"data":"xxxx…"}` of exactly `n` bytes (or `n` spaces when `n` is too small for that).
fn padded_json(n: usize) -> Vec<u8> {
    const FRAME: usize = r#"{"data":""}"#.len();
    if n < FRAME {
        return vec![b' '; n];
    }
    let mut body = br#"{"data":""#.to_vec();
    body.resize(n - 2, b'x');
    body.extend_from_slice(br#""}"#);
    body
}
