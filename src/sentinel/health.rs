//! The health (`/healthz`, `/readyz`, default :8080) and metrics (`/metrics`, default :9090)
//! HTTP servers, with the Go sentinel's bodies and status codes.
//!
//! Invariant: the handlers only read [`HealthState`]; the poll loop and the broker write it.

use super::metrics::Metrics;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// What the health endpoints report, shared with the poll loop.
#[derive(Debug)]
pub struct HealthState {
    poll_interval: Duration,
    started: Instant,
    last_success: Mutex<Option<Instant>>,
    broker: Mutex<Option<String>>,
    shutting_down: AtomicBool,
}

impl HealthState {
    /// A fresh state: no successful poll yet, broker ok, not shutting down.
    pub fn new(poll_interval: Duration) -> Arc<HealthState> {
        Arc::new(HealthState {
            poll_interval,
            started: Instant::now(),
            last_success: Mutex::new(None),
            broker: Mutex::new(None),
            shutting_down: AtomicBool::new(false),
        })
    }

    /// Records a completed cycle.
    pub fn poll_succeeded(&self) {
        *lock(&self.last_success) = Some(Instant::now());
    }

    /// Records the broker's state: `None` when healthy, else what is wrong.
    pub fn set_broker(&self, problem: Option<String>) {
        *lock(&self.broker) = problem;
    }

    /// From now on readiness reports every check `unavailable`.
    pub fn shutting_down(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// `/healthz`: stale when the last successful cycle (or the start, before the first) is older
    /// than three poll intervals.
    pub fn liveness(&self) -> (StatusCode, String) {
        let since = lock(&self.last_success).unwrap_or(self.started);
        if since.elapsed() > self.poll_interval * 3 {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"status":"poll stale"}"#.into(),
            )
        } else {
            (StatusCode::OK, r#"{"status":"ok"}"#.into())
        }
    }

    /// `/readyz`: the broker and poll checks.
    pub fn readiness(&self) -> (StatusCode, String) {
        let (broker, poll) = if self.shutting_down.load(Ordering::SeqCst) {
            ("unavailable".to_string(), "unavailable".to_string())
        } else {
            let broker = lock(&self.broker).clone().unwrap_or_else(|| "ok".into());
            let poll = match *lock(&self.last_success) {
                Some(_) => "ok".to_string(),
                None => "no successful poll completed yet".to_string(),
            };
            (broker, poll)
        };
        let ok = broker == "ok" && poll == "ok";
        let body = serde_json::json!({
            "checks": {"broker": broker, "sentinel_poll": poll},
            "status": if ok { "ok" } else { "error" },
        });
        let code = if ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        (code, body.to_string())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (an Option) is still meaningful.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn json(code: StatusCode, body: String) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The Go flag syntax `:8080` means every interface.
pub fn parse_bind_address(text: &str) -> Result<SocketAddr, String> {
    let full = if text.starts_with(':') {
        format!("0.0.0.0{text}")
    } else {
        text.to_string()
    };
    full.parse()
        .map_err(|_| format!("invalid bind address {text:?} (expected HOST:PORT or :PORT)"))
}

/// The health router.
pub fn health_router(state: Arc<HealthState>) -> Router {
    let live = state.clone();
    Router::new()
        .route(
            "/healthz",
            get(move || async move {
                let (code, body) = live.liveness();
                json(code, body)
            }),
        )
        .route(
            "/readyz",
            get(move || async move {
                let (code, body) = state.readiness();
                json(code, body)
            }),
        )
}

/// The metrics router.
pub fn metrics_router(metrics: Metrics) -> Router {
    Router::new().route(
        "/metrics",
        get(move || async move {
            (
                [(
                    header::CONTENT_TYPE,
                    "text/plain; version=0.0.4; charset=utf-8",
                )],
                metrics.render(),
            )
                .into_response()
        }),
    )
}

/// Binds a listener (so startup fails at once on a taken port) and serves a router on it until
/// `shutdown` resolves. Returns the bound address and the server task.
pub async fn serve(
    addr: SocketAddr,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
    });
    Ok((local, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_transitions() {
        let s = HealthState::new(Duration::from_secs(5));
        let (code, body) = s.readiness();
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            r#"{"checks":{"broker":"ok","sentinel_poll":"no successful poll completed yet"},"status":"error"}"#
        );
        s.poll_succeeded();
        assert_eq!(
            s.readiness(),
            (
                StatusCode::OK,
                r#"{"checks":{"broker":"ok","sentinel_poll":"ok"},"status":"ok"}"#.into()
            )
        );
        s.shutting_down();
        let (code, body) = s.readiness();
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            r#"{"checks":{"broker":"unavailable","sentinel_poll":"unavailable"},"status":"error"}"#
        );
    }

    #[test]
    fn liveness_goes_stale_after_three_intervals() {
        let s = HealthState::new(Duration::from_millis(0));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(s.liveness().0, StatusCode::SERVICE_UNAVAILABLE);
        let s = HealthState::new(Duration::from_secs(3600));
        assert_eq!(s.liveness(), (StatusCode::OK, r#"{"status":"ok"}"#.into()));
    }

    #[test]
    fn go_style_bind_addresses() {
        assert_eq!(
            parse_bind_address(":8080").unwrap(),
            "0.0.0.0:8080".parse().unwrap()
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert!(parse_bind_address("nope").is_err());
    }
}
