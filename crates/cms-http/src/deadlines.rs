//! Time limits on what a client sends (`server.header_timeout_secs`,
//! `server.body_timeout_secs`, `server.keep_alive_secs`), so that slow clients cannot
//! keep connections, and the memory of half-received bodies, for as long as they like.
//!
//! What actix-http enforces by itself (`HttpServer::client_request_timeout`, keep-alive):
//! the **first** request's head on a connection must arrive within the head time-out
//! (else `408` and close), and an idle kept-alive connection is closed after the
//! keep-alive time. Two gaps remain, closed here:
//!
//! - **The body.** Nothing times a body once the head is in. [`Deadlines`] gives the whole
//!   body `body_timeout` from the moment the head was parsed: past it, the body stream
//!   ends in an error, the handler gives up (its buffers are freed with the request), and
//!   the answer is `408` with `Connection: close`.
//! - **Later heads on a kept-alive connection.** actix arms its head timer for the first
//!   request only, and stops the keep-alive timer at the first byte of the next one, so
//!   that head could trickle in forever. [`ClientDeadlines::watch_connections`] keeps, for
//!   each connection, when its next head is due: `keep_alive + header_timeout` after the
//!   previous answer was sent (the idle part is actix's keep-alive; the head must follow
//!   within the head time-out). A sweep on each worker, every [`SWEEP_EVERY`], shuts the
//!   socket of a connection past that moment; actix then sees it closed and drops it.
//!
//! Slow readers of answers are not timed here; `server.max_connections` bounds how many
//! connections any kind of slow client can hold per worker.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::{Future, Ready, ready};
use std::io;
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use actix_web::body::{BodySize, EitherBody, MessageBody};
use actix_web::dev::{
    Extensions, Payload, Service, ServiceRequest, ServiceResponse, Transform, forward_ready,
};
use actix_web::error::PayloadError;
use actix_web::http::{ConnectionType, StatusCode};
use actix_web::web::Bytes;
use actix_web::{HttpMessage, ResponseError};
use cms_core::config::ServerConfig;
use futures_util::future::LocalBoxFuture;
use futures_util::stream::Stream;

use crate::error::{ApiError, Shape};

/// How often each worker looks for connections whose next head is overdue.
pub const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// The time limits of `server:` in `cms.yaml`.
#[derive(Debug, Clone, Copy)]
pub struct ClientDeadlines {
    /// A request's head (`server.header_timeout_secs`).
    pub header: Duration,
    /// A request's whole body, from its head on (`server.body_timeout_secs`).
    pub body: Duration,
    /// An idle kept-alive connection (`server.keep_alive_secs`).
    pub keep_alive: Duration,
}

impl ClientDeadlines {
    pub fn new(server: &ServerConfig) -> Self {
        Self {
            header: Duration::from_secs(server.header_timeout_secs),
            body: Duration::from_secs(server.body_timeout_secs),
            keep_alive: Duration::from_secs(server.keep_alive_secs),
        }
    }

    /// The middleware that times bodies and tells each connection's watch when its
    /// requests come and go; wrap it outermost (`App::wrap` last).
    pub fn middleware(self) -> Deadlines {
        Deadlines(self)
    }

    /// For `HttpServer::on_connect`: watches each TCP connection's later request heads.
    pub fn watch_connections(self) -> impl Fn(&dyn Any, &mut Extensions) + Send + Sync + 'static {
        move |io, extensions| {
            let Some(stream) = io.downcast_ref::<actix_web::rt::net::TcpStream>() else { return };
            // A second descriptor of the same socket, only ever used to shut it down.
            let socket = match stream.as_fd().try_clone_to_owned() {
                Ok(fd) => std::net::TcpStream::from(fd),
                Err(error) => {
                    tracing::warn!(%error, "cannot watch a connection's request heads");
                    return;
                }
            };
            // A new connection is like an idle kept-alive one (actix answers its first
            // head's time-out with a 408 before this is due).
            let watch = Rc::new(Watch { socket, head_due: Cell::new(Some(self.next_head_due())) });
            WATCHED.with(|watched| watched.borrow_mut().push(Rc::downgrade(&watch)));
            start_sweeping();
            extensions.insert(Watched(watch));
        }
    }

    fn next_head_due(&self) -> Instant {
        Instant::now() + self.keep_alive + self.header
    }
}

/// A connection's watch: its socket (to shut it down) and when its next head is due
/// (`None` while a request is being handled).
struct Watch {
    socket: std::net::TcpStream,
    head_due: Cell<Option<Instant>>,
}

/// The watch as kept in the connection's data.
#[derive(Clone)]
struct Watched(Rc<Watch>);

thread_local! {
    /// The connections of this worker (each worker is one thread); dead ones are dropped
    /// by the sweep.
    static WATCHED: RefCell<Vec<Weak<Watch>>> = const { RefCell::new(Vec::new()) };
    static SWEEPING: Cell<bool> = const { Cell::new(false) };
}

/// Starts this worker's sweep, once.
fn start_sweeping() {
    if SWEEPING.with(|sweeping| sweeping.replace(true)) {
        return;
    }
    actix_web::rt::spawn(async {
        let mut every = actix_web::rt::time::interval(SWEEP_EVERY);
        loop {
            every.tick().await;
            sweep(Instant::now());
        }
    });
}

/// Shuts the connections whose next head is overdue; forgets the closed ones.
fn sweep(now: Instant) {
    WATCHED.with(|watched| {
        watched.borrow_mut().retain(|watch| {
            let Some(watch) = watch.upgrade() else { return false };
            if watch.head_due.get().is_some_and(|due| due <= now) {
                watch.head_due.set(None);
                tracing::info!("closing a connection whose request head did not arrive in time");
                // Both ways: actix reads the end of the stream and drops the connection.
                let _ = watch.socket.shutdown(Shutdown::Both);
            }
            true
        });
    });
}

/// The middleware of [`ClientDeadlines::middleware`].
pub struct Deadlines(ClientDeadlines);

impl<S, B> Transform<S, ServiceRequest> for Deadlines
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + Unpin + 'static,
{
    type Response = ServiceResponse<AnswerSent<EitherBody<B>>>;
    type Error = actix_web::Error;
    type Transform = DeadlinesService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(DeadlinesService { service: Rc::new(service), limits: self.0 }))
    }
}

pub struct DeadlinesService<S> {
    service: Rc<S>,
    limits: ClientDeadlines,
}

impl<S, B> Service<ServiceRequest> for DeadlinesService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + Unpin + 'static,
{
    type Response = ServiceResponse<AnswerSent<EitherBody<B>>>;
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    forward_ready!(service);

    fn call(&self, mut req: ServiceRequest) -> Self::Future {
        let limits = self.limits;
        // The head is in: the connection is busy with this request.
        let watch = req.conn_data::<Watched>().map(|watched| watched.0.clone());
        if let Some(watch) = &watch {
            watch.head_due.set(None);
        }
        let expired = Rc::new(Cell::new(false));
        match req.take_payload() {
            Payload::None => {}
            body => {
                let timer = Box::pin(actix_web::rt::time::sleep(limits.body));
                let deadline = BodyDeadline { body, timer, expired: expired.clone() };
                req.set_payload(Payload::Stream { payload: Box::pin(deadline) });
            }
        }
        let service = self.service.clone();
        Box::pin(async move {
            let answered = service.call(req).await?;
            let response = if expired.get() {
                tracing::info!(
                    path = answered.request().path(),
                    "request body not received within server.body_timeout_secs; answered 408"
                );
                let message = format!(
                    "the request body did not arrive within server.body_timeout_secs ({} s)",
                    limits.body.as_secs()
                );
                let mut answer =
                    ApiError::new(StatusCode::REQUEST_TIMEOUT, Shape::Editor, message).error_response();
                answer.head_mut().set_connection_type(ConnectionType::Close);
                answered.into_response(answer).map_into_right_body()
            } else {
                answered.map_into_left_body()
            };
            let next_head_due = limits.keep_alive + limits.header;
            Ok(response.map_body(|_, body| AnswerSent { body, watch, next_head_due }))
        })
    }
}

/// A request body that must end before its timer does.
struct BodyDeadline {
    body: Payload,
    timer: Pin<Box<actix_web::rt::time::Sleep>>,
    expired: Rc<Cell<bool>>,
}

impl Stream for BodyDeadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.expired.get() {
            return Poll::Ready(None);
        }
        // The timer first: a client that keeps a byte coming just in time must not win.
        if self.timer.as_mut().poll(cx).is_ready() {
            self.expired.set(true);
            let error = io::Error::new(io::ErrorKind::TimedOut, "the request body did not arrive in time");
            return Poll::Ready(Some(Err(PayloadError::Io(error))));
        }
        Pin::new(&mut self.body).poll_next(cx)
    }
}

/// An answer's body that, once sent (dropped by the connection), starts the time its
/// connection's next head has.
pub struct AnswerSent<B> {
    body: B,
    watch: Option<Rc<Watch>>,
    next_head_due: Duration,
}

impl<B: MessageBody + Unpin> MessageBody for AnswerSent<B> {
    type Error = B::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}

impl<B> Drop for AnswerSent<B> {
    fn drop(&mut self) {
        if let Some(watch) = &self.watch {
            watch.head_due.set(Some(Instant::now() + self.next_head_due));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_shuts_only_connections_whose_head_is_overdue() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let connect = || {
            let client = std::net::TcpStream::connect(address).unwrap();
            let (server, _) = listener.accept().unwrap();
            (client, server)
        };
        let now = Instant::now();
        let (mut late_client, late) = connect();
        let (mut busy_client, busy) = connect();
        let (mut waiting_client, waiting) = connect();
        let watches: Vec<Rc<Watch>> = [
            (late, Some(now - Duration::from_millis(1))),
            (busy, None),
            (waiting, Some(now + Duration::from_secs(60))),
        ]
        .into_iter()
        .map(|(socket, due)| Rc::new(Watch { socket, head_due: Cell::new(due) }))
        .collect();
        WATCHED.with(|watched| watched.borrow_mut().extend(watches.iter().map(Rc::downgrade)));
        let forgotten = {
            let (_client, socket) = connect();
            Rc::new(Watch { socket, head_due: Cell::new(Some(now)) })
        };
        WATCHED.with(|watched| watched.borrow_mut().push(Rc::downgrade(&forgotten)));
        drop(forgotten);

        sweep(now);

        use std::io::Read;
        let mut byte = [0];
        assert_eq!(late_client.read(&mut byte).unwrap(), 0, "the overdue one is closed");
        assert_eq!(watches[0].head_due.get(), None, "and not shut again");
        for client in [&mut busy_client, &mut waiting_client] {
            client.set_nonblocking(true).unwrap();
            let still_open = client.read(&mut byte).unwrap_err();
            assert_eq!(still_open.kind(), io::ErrorKind::WouldBlock);
        }
        assert_eq!(WATCHED.with(|watched| watched.borrow().len()), 3, "the dropped watch is forgotten");
    }
}
