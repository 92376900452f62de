//! The one way the async ports reach the disk: the blocking file I/O of a port call runs
//! on tokio's blocking pool, never on an async worker.

use std::future::Future;

use cms_core::{CoreError, CoreResult};
use tokio::task::JoinHandle;

/// Runs `f` on the blocking pool and waits for it. A panic in `f`, or a runtime that shuts
/// down meanwhile, is an internal error.
pub(crate) fn run<T, F>(f: F) -> impl Future<Output = CoreResult<T>> + Send
where
    F: FnOnce() -> CoreResult<T> + Send + 'static,
    T: Send + 'static,
{
    spawn(f).wait()
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
