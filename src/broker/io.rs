//! A publisher's I/O thread: a current-thread runtime of its own that every network task of the
//! publisher runs on (the RabbitMQ connection's driver, the Pub/Sub clients' connections,
//! requests and readiness probe), so that a broker sees the sentinel alive whatever the loop's
//! thread is doing (blocked in a write to a full stdout pipe, deciding a long page).
//!
//! Takes futures; gives their outputs to the caller's thread. Invariant: a task whose caller
//! gives up waiting (past its bound, or dropped) is aborted, so nothing the caller abandoned
//! runs on behind its back.

use tokio::runtime::Handle;

/// The thread and its runtime. Dropping it stops the thread and every task still on it.
pub(crate) struct IoThread {
    handle: Handle,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl IoThread {
    /// Starts the thread, named `name` (`amqp`, `pubsub`).
    pub(crate) fn start(name: &str) -> std::io::Result<IoThread> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        Ok(IoThread {
            handle,
            _stop: stop,
        })
    }

    /// Runs `task` on the thread and waits for its output; `None` when the thread is gone. A
    /// caller that stops waiting (a timeout around this future) aborts the task.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        task: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let task = self.handle.spawn(task);
        let _abort = AbortOnDrop(task.abort_handle());
        task.await.ok()
    }

    /// Starts `task` on the thread without waiting for it; its handle aborts it.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) -> AbortOnDrop {
        AbortOnDrop(self.handle.spawn(task).abort_handle())
    }
}

/// Aborts a task on the I/O thread when dropped.
pub(crate) struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
