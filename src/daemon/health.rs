//! The health (`/healthz`, `/readyz`, default :8080) and metrics (`/metrics`, default :9090)
//! HTTP servers, with the Go sentinel's bodies, status codes and probe warnings, listening
//! dual-stack on Go-style `:PORT` addresses.
//!
//! The connections themselves are [`server`]'s: no client can hold a probe or the shutdown.
//!
//! Invariant: the handlers only read [`HealthState`] (beyond remembering what they last logged);
//! the poll loop writes the poll state, and the broker check reads the publisher's connection
//! live through [`Liveness`] at every request.

use super::metrics::Metrics;
use crate::broker::Liveness;
use crate::common::go::go_duration_string;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

pub mod server;

/// How often a probe that keeps failing the same way is logged again.
const PROBE_LOG_EVERY: Duration = Duration::from_secs(60);

/// What the health endpoints report, shared with the poll loop.
#[derive(Debug)]
pub struct HealthState {
    poll_interval: Duration,
    last_success: Mutex<Option<Instant>>,
    broker: Mutex<Option<Liveness>>,
    /// With a server filter: `None` while the last complete full sweep is recent enough, else
    /// what readiness says of it.
    full_sweep: Mutex<Option<Option<String>>>,
    shutting_down: AtomicBool,
    liveness_log: Mutex<ProbeLog>,
    readiness_log: Mutex<ProbeLog>,
}

/// The last failure a probe logged, so a failing probe logs once per change of its answer and
/// once per [`PROBE_LOG_EVERY`], not on every request.
#[derive(Debug, Default)]
struct ProbeLog {
    last: Option<(String, Instant)>,
}

impl ProbeLog {
    /// Whether a failure answered `body` should be logged now (and remembers it if so).
    fn should_log(&mut self, body: &str) -> bool {
        let due = match &self.last {
            Some((last, at)) => last != body || at.elapsed() >= PROBE_LOG_EVERY,
            None => true,
        };
        if due {
            self.last = Some((body.to_string(), Instant::now()));
        }
        due
    }

    fn passed(&mut self) {
        self.last = None;
    }
}

impl HealthState {
    /// A fresh state: no completed poll yet, broker ok, not shutting down.
    pub fn new(poll_interval: Duration) -> Arc<HealthState> {
        Arc::new(HealthState {
            poll_interval,
            last_success: Mutex::new(None),
            broker: Mutex::new(None),
            full_sweep: Mutex::new(None),
            shutting_down: AtomicBool::new(false),
            liveness_log: Mutex::new(ProbeLog::default()),
            readiness_log: Mutex::new(ProbeLog::default()),
        })
    }

    /// Records a completed cycle.
    pub fn poll_succeeded(&self) {
        *lock(&self.last_success) = Some(Instant::now());
    }

    /// From now on the broker check reads the connection `liveness` shows, at every request.
    pub fn watch_broker(&self, liveness: Liveness) {
        *lock(&self.broker) = Some(liveness);
    }

    /// With a server filter, at each cycle's end: how long since the last complete full sweep
    /// and how often one is due. Readiness fails while that is more than twice the interval (a
    /// sweep that keeps failing leaves what the filter does not list unpublished); liveness
    /// does not (a restart would not make the sweep pass).
    pub fn full_sweep(&self, age: Duration, interval: Duration) {
        let overdue = (age > interval * 2).then(|| {
            format!(
                "no complete full sweep for {} (due every {})",
                go_duration_string(Duration::from_secs(age.as_secs())),
                go_duration_string(interval)
            )
        });
        *lock(&self.full_sweep) = Some(overdue);
    }

    /// From now on readiness reports every check `unavailable`.
    pub fn shutting_down(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// `/healthz`, as Go answers it: ok until the first cycle completes, then stale (503) once
    /// the last completed cycle is older than three poll intervals. A first cycle longer than
    /// that (a big fleet, a slow API) must not fail liveness, or the pod is restarted mid-cycle.
    pub fn liveness(&self) -> (StatusCode, String) {
        let threshold = self.poll_interval * 3;
        let staleness = lock(&self.last_success).map(|at| at.elapsed());
        match staleness {
            Some(staleness) if staleness > threshold => {
                let body = r#"{"status":"poll stale"}"#.to_string();
                if lock(&self.liveness_log).should_log(&body) {
                    // Go rounds the staleness to whole seconds.
                    let rounded = Duration::from_secs(staleness.as_secs_f64().round() as u64);
                    tracing::warn!(
                        staleness = %go_duration_string(rounded),
                        threshold = %go_duration_string(threshold),
                        "Healthz check failed: poll stale"
                    );
                }
                (StatusCode::SERVICE_UNAVAILABLE, body)
            }
            _ => {
                lock(&self.liveness_log).passed();
                (StatusCode::OK, r#"{"status":"ok"}"#.into())
            }
        }
    }

    /// `/readyz`: the broker and poll checks (Go's), and with a server filter the full sweep's.
    pub fn readiness(&self) -> (StatusCode, String) {
        let shutting_down = self.shutting_down.load(Ordering::SeqCst);
        let sweep = lock(&self.full_sweep)
            .as_ref()
            .map(|overdue| match overdue {
                _ if shutting_down => "unavailable".to_string(),
                None => "ok".to_string(),
                Some(why) => why.clone(),
            });
        let (broker, poll) = if shutting_down {
            ("unavailable".to_string(), "unavailable".to_string())
        } else {
            let broker = lock(&self.broker)
                .as_ref()
                .and_then(Liveness::problem)
                .unwrap_or_else(|| "ok".into());
            let poll = match *lock(&self.last_success) {
                Some(_) => "ok".to_string(),
                None => "no successful poll completed yet".to_string(),
            };
            (broker, poll)
        };
        let ok = broker == "ok" && poll == "ok" && sweep.as_deref().is_none_or(|s| s == "ok");
        // In key order, as Go writes a map.
        let mut checks = serde_json::Map::new();
        checks.insert("broker".into(), broker.as_str().into());
        if let Some(sweep) = &sweep {
            checks.insert("full_sweep".into(), sweep.as_str().into());
        }
        checks.insert("sentinel_poll".into(), poll.as_str().into());
        let body = serde_json::json!({
            "checks": checks,
            "status": if ok { "ok" } else { "error" },
        })
        .to_string();
        if ok {
            lock(&self.readiness_log).passed();
            return (StatusCode::OK, body);
        }
        // Go logs a failed check, not the shutdown's 503.
        if !shutting_down && lock(&self.readiness_log).should_log(&body) {
            match &sweep {
                None => tracing::warn!(
                    checks.broker = %broker,
                    checks.sentinel_poll = %poll,
                    "Readyz check failed"
                ),
                Some(sweep) => tracing::warn!(
                    checks.broker = %broker,
                    checks.full_sweep = %sweep,
                    checks.sentinel_poll = %poll,
                    "Readyz check failed"
                ),
            }
        }
        (StatusCode::SERVICE_UNAVAILABLE, body)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (an Option) is still meaningful.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn json(code: StatusCode, body: String) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The Go flag syntax `:8080` means every interface, IPv6 and IPv4 (`[::]:8080`, served
/// dual-stack by [`serve`], as Go's listener is).
pub fn parse_bind_address(text: &str) -> Result<SocketAddr, String> {
    let full = if text.starts_with(':') {
        format!("[::]{text}")
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
/// `shutdown` resolves, bounded as [`server`] says (header-read timeout, connection cap, a
/// shutdown that ends within [`server::SHUTDOWN_GRACE`]). Returns the bound address and the server task. `[::]` is bound
/// dual-stack (IPv4 clients arrive as mapped addresses); on a machine without IPv6 it falls back
/// to `0.0.0.0` with a warning.
pub async fn serve(
    addr: SocketAddr,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    serve_on(&tokio::runtime::Handle::current(), addr, router, shutdown)
}

/// [`serve`] on the runtime `on` (`serve` runs its servers on a runtime of their own, so that
/// they answer whatever the cycle's thread is doing).
pub fn serve_on(
    on: &tokio::runtime::Handle,
    addr: SocketAddr,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    // The listener registers with the I/O driver of the runtime it is made in.
    let _in = on.enter();
    let listener = bind_any_stack(addr)?;
    let local = listener.local_addr()?;
    let cap = server::connection_cap();
    let task = on.spawn(server::run(listener, router, shutdown, cap));
    Ok((local, task))
}

/// Binds `addr`, dual-stack when it is the IPv6 wildcard.
fn bind_any_stack(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let wildcard_v6 = addr.is_ipv6() && addr.ip().is_unspecified();
    match bind(addr, wildcard_v6) {
        Err(e) if wildcard_v6 && e.kind() != std::io::ErrorKind::AddrInUse => {
            let v4 = SocketAddr::from(([0, 0, 0, 0], addr.port()));
            tracing::warn!(error = %e, "Cannot listen on {addr} (no IPv6?), listening on {v4} instead");
            bind(v4, false)
        }
        other => other,
    }
}

fn bind(addr: SocketAddr, dual_stack: bool) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if dual_stack {
        socket.set_only_v6(false)?;
    }
    // As std's and Go's listeners do, so a restart can rebind while old connections linger.
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    TcpListener::from_std(socket.into())
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
    fn readiness_reports_a_full_sweep_overdue() {
        let s = HealthState::new(Duration::from_secs(5));
        s.poll_succeeded();
        let minute = Duration::from_secs(60);
        s.full_sweep(minute * 20, minute * 10);
        assert_eq!(
            s.readiness(),
            (
                StatusCode::OK,
                r#"{"checks":{"broker":"ok","full_sweep":"ok","sentinel_poll":"ok"},"status":"ok"}"#
                    .into()
            )
        );
        s.full_sweep(minute * 20 + Duration::from_millis(1500), minute * 10);
        let (code, body) = s.readiness();
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            body.contains(r#""full_sweep":"no complete full sweep for 20m1s (due every 10m0s)""#),
            "{body}"
        );
        // Liveness is not readiness: an overdue sweep restarts nothing.
        assert_eq!(s.liveness().0, StatusCode::OK);
    }

    #[test]
    fn liveness_goes_stale_three_intervals_after_a_completed_poll() {
        let s = HealthState::new(Duration::from_millis(0));
        std::thread::sleep(Duration::from_millis(2));
        // Before the first poll completes liveness is ok, however long that first cycle takes.
        assert_eq!(s.liveness(), (StatusCode::OK, r#"{"status":"ok"}"#.into()));
        s.poll_succeeded();
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(
            s.liveness(),
            (
                StatusCode::SERVICE_UNAVAILABLE,
                r#"{"status":"poll stale"}"#.into()
            )
        );
        let s = HealthState::new(Duration::from_secs(3600));
        s.poll_succeeded();
        assert_eq!(s.liveness(), (StatusCode::OK, r#"{"status":"ok"}"#.into()));
    }

    #[test]
    fn a_failing_probe_logs_once_per_change() {
        let mut log = ProbeLog::default();
        assert!(log.should_log("a"));
        assert!(!log.should_log("a"));
        assert!(log.should_log("b"));
        log.passed();
        assert!(log.should_log("b"));
    }

    #[test]
    fn go_style_bind_addresses() {
        assert_eq!(
            parse_bind_address(":8080").unwrap(),
            "[::]:8080".parse().unwrap()
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert!(parse_bind_address("nope").is_err());
    }
}
