//! The accept loop of the health and metrics servers: each connection driven by hyper with the
//! bounds axum's own server lacks, so that no client can hold the probes or the process.
//!
//! Takes a bound listener, a router and a shutdown future; gives a task that serves until the
//! shutdown and then ends within [`SHUTDOWN_GRACE`].
//!
//! Invariants:
//! - a connection that has not sent a whole request head within [`HEADER_READ_TIMEOUT`] (Go's
//!   `ReadTimeout`), whether it is new, idle between keep-alive requests or half-way through a
//!   head, is closed;
//! - a connection reads into at most [`MAX_BUF_BYTES`] of buffer, so many partial requests cost
//!   that many small buffers, freed when they close;
//! - at most [`connection_cap`] connections are open at once, below the open-files limit: the
//!   connection accepted past it closes the oldest one, so a probe is answered however many
//!   connections a client holds;
//! - at shutdown the listener closes at once, idle connections are closed, those in a request
//!   get [`SHUTDOWN_GRACE`] to finish, then every connection left is dropped.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a client may take to send a request head, or stay idle between requests (Go's
/// health and metrics servers' `ReadTimeout`).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The most a connection buffers of what a client sends (hyper's smallest allowed is 8 KiB;
/// a probe or scrape request is a few hundred bytes).
pub const MAX_BUF_BYTES: usize = 16 * 1024;

/// How long connections in a request may finish once shutdown starts.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The most connections one server holds: a quarter of the open-files limit (two servers, the
/// API and broker connections and the runtime share the rest), between 16 and 512.
pub fn connection_cap() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    cap_for(limit)
}

fn cap_for(open_files: Option<u64>) -> usize {
    let quarter = open_files.map_or(u64::MAX, |n| n / 4);
    usize::try_from(quarter.clamp(16, 512)).unwrap_or(512)
}

/// Serves `router` on `listener` until `shutdown` resolves (see the module doc).
pub async fn run(
    listener: TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    cap: usize,
) {
    let (closing, closing_rx) = watch::channel(false);
    let mut open: VecDeque<JoinHandle<()>> = VecDeque::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors or a connection reset before it was taken: wait a
                // moment instead of spinning on the same error.
                tracing::debug!(error = %e, "health server: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        open.retain(|task| !task.is_finished());
        while open.len() >= cap.max(1) {
            if let Some(oldest) = open.pop_front() {
                oldest.abort();
            }
        }
        open.push_back(tokio::spawn(connection(
            stream,
            router.clone(),
            closing_rx.clone(),
        )));
    }
    drop(listener);
    let _ = closing.send(true);
    let all = futures_util::future::join_all(open.iter_mut());
    if tokio::time::timeout(SHUTDOWN_GRACE, all).await.is_err() {
        open.iter().for_each(JoinHandle::abort);
    }
}

/// One connection, until the client closes it, a bound closes it, or shutdown does.
async fn connection(
    stream: tokio::net::TcpStream,
    router: Router,
    mut closing: watch::Receiver<bool>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_BUF_BYTES)
        .keep_alive(true);
    let conn = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = closing.wait_for(|c| *c) => {}
    }
    // Idle connections close now; one in a request finishes it (the caller bounds the wait).
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

#[cfg(test)]
mod tests {
    use super::cap_for;

    #[test]
    fn the_cap_is_a_quarter_of_the_open_files_limit_within_bounds() {
        assert_eq!(cap_for(Some(1024)), 256);
        assert_eq!(cap_for(Some(20)), 16);
        assert_eq!(cap_for(Some(1 << 20)), 512);
        assert_eq!(cap_for(None), 512);
    }
}
