//! The one way the async ports reach the disk: the blocking file I/O of a port call runs
//! on tokio's blocking pool, never on an async worker.

use std::future::Future;

use cms_core::{CoreError, CoreResult};
use tokio::task::JoinHandle;
use tracing::Instrument;

/// Runs `f` on the blocking pool and waits for it. A panic in `f`, or a runtime that shuts
/// down meanwhile, is an internal error. Traced (at `trace`, for exported traces) as a
/// `store` span named after the port method `f` was written in.
pub(crate) fn run<T, F>(f: F) -> impl Future<Output = CoreResult<T>> + Send
where
    F: FnOnce() -> CoreResult<T> + Send + 'static,
    T: Send + 'static,
{
    // The field is only made when the span is wanted (traces exported).
    let span = tracing::trace_span!("store", operation = %Operation(std::any::type_name::<F>()));
    spawn(f).wait().instrument(span)
}

/// The port method a closure was written in, from its type's name (a path the compiler
/// made, never a value from a request): `<cms_fs::content::FsContentStore as
/// cms_core::ports::ContentStore>::read::{{closure}}` shows as `content::FsContentStore::read`.
struct Operation(&'static str);

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.0.split("::{{closure}}").next().unwrap_or(self.0);
        let local = |path: &'static str| path.strip_prefix("cms_fs::").unwrap_or(path);
        match name.strip_prefix('<').and_then(|rest| rest.split_once(" as ")) {
            Some((implementor, rest)) => match rest.split_once(">::") {
                Some((_, method)) => write!(f, "{}::{method}", local(implementor)),
                None => f.write_str(local(name)),
            },
            None => f.write_str(local(name)),
        }
    }
}

/// Starts `f` on the blocking pool at once (so that several can run in parallel); await
/// [`Pending::wait`] for its result.
///
/// Outside a tokio runtime (a plain `block_on`, as a command-line tool may use, where there
/// is no async worker to hold up), `f` runs right here on the calling thread.
pub(crate) fn spawn<T, F>(f: F) -> Pending<T>
where
    F: FnOnce() -> CoreResult<T> + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => Pending::Spawned(runtime.spawn_blocking(f)),
        Err(_) => Pending::Done(f()),
    }
}

/// Blocking work started by [`spawn`].
pub(crate) enum Pending<T> {
    Spawned(JoinHandle<CoreResult<T>>),
    Done(CoreResult<T>),
}

impl<T> Pending<T> {
    pub(crate) async fn wait(self) -> CoreResult<T> {
        match self {
            Pending::Spawned(task) => {
                task.await.map_err(|e| CoreError::internal("a storage task on the blocking pool", e))?
            }
            Pending::Done(result) => result,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    #[test]
    fn a_store_span_is_named_after_its_port_method() {
        let shown = |name| Operation(name).to_string();
        assert_eq!(
            shown(
                "<cms_fs::content::FsContentStore as cms_core::ports::ContentStore>::read::{{closure}}::{{closure}}"
            ),
            "content::FsContentStore::read"
        );
        assert_eq!(
            shown("cms_fs::sessions::FsSessionStore::sweep::{{closure}}"),
            "sessions::FsSessionStore::sweep"
        );
        fn name_of<F: FnOnce()>(_: F) -> &'static str {
            std::any::type_name::<F>()
        }
        assert_eq!(
            shown(name_of(|| ())),
            "blocking::tests::a_store_span_is_named_after_its_port_method",
            "{}",
            name_of(|| ())
        );
    }

    #[tokio::test]
    async fn a_panic_on_the_blocking_pool_is_an_internal_error() {
        let failed = run(|| -> CoreResult<()> { panic!("boom") }).await;
        assert!(matches!(failed, Err(CoreError::Internal { .. })), "{failed:?}");
        assert_eq!(run(|| Ok(7)).await.unwrap(), 7);
    }

    #[test]
    fn outside_a_runtime_the_work_runs_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let mut future = pin!(run(move || Ok(std::thread::current().id() == caller)));
        let Poll::Ready(result) = future.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
            panic!("finished on the first poll")
        };
        assert!(result.unwrap());
    }
}
