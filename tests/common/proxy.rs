//! A TCP proxy in front of the shared RabbitMQ that a test can cut, refuse or freeze, so that an
//! outage touches no other connection on the broker (tests/broker.rs, tests/daemon.rs).
// Each test crate uses its own part of this module.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

/// The RabbitMQ this machine kind runs.
pub const RABBIT_ADDR: &str = "127.0.0.1:5672";

pub struct Proxy {
    addr: SocketAddr,
    refusing: Arc<AtomicBool>,
    frozen: Arc<AtomicBool>,
    /// Chunks (other than heartbeats) held back while frozen, either way.
    held: Arc<AtomicUsize>,
    links: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

/// Copies bytes one way; while `frozen`, holds what it read (the peer hears nothing, but its
/// writes still succeed: a half-open connection) and counts in `held` the chunks held that are
/// not a lone heartbeat frame (AMQP frame type 8, 8 bytes).
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
    held: Arc<AtomicUsize>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let heartbeat = n == 8 && buf[0] == 8;
        if frozen.load(Ordering::SeqCst) && !heartbeat {
            held.fetch_add(1, Ordering::SeqCst);
        }
        while frozen.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Proxy {
    pub async fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let proxy = Proxy {
            addr,
            refusing: Arc::new(AtomicBool::new(false)),
            frozen: Arc::new(AtomicBool::new(false)),
            held: Arc::new(AtomicUsize::new(0)),
            links: Arc::new(Mutex::new(Vec::new())),
        };
        let (refusing, frozen, held, links) = (
            proxy.refusing.clone(),
            proxy.frozen.clone(),
            proxy.held.clone(),
            proxy.links.clone(),
        );
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if refusing.load(Ordering::SeqCst) {
                    continue; // dropping the socket closes it: the broker is "down"
                }
                let (frozen, held) = (frozen.clone(), held.clone());
                let link = tokio::spawn(async move {
                    if let Ok(upstream) = TcpStream::connect(RABBIT_ADDR).await {
                        let (in_read, in_write) = inbound.into_split();
                        let (up_read, up_write) = upstream.into_split();
                        tokio::join!(
                            pump(in_read, up_write, frozen.clone(), held.clone()),
                            pump(up_read, in_write, frozen, held)
                        );
                    }
                });
                links.lock().expect("links").push(link.abort_handle());
            }
        });
        proxy
    }

    pub fn url(&self) -> String {
        format!("amqp://guest:guest@{}/", self.addr)
    }

    /// Drops every proxied connection and refuses new ones.
    pub fn cut(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        for link in self.links.lock().expect("links").drain(..) {
            link.abort();
        }
    }

    /// Accepts and forwards again.
    pub fn restore(&self) {
        self.refusing.store(false, Ordering::SeqCst);
    }

    /// Stops (or resumes) forwarding on the existing connections without closing them.
    pub fn freeze(&self, frozen: bool) {
        self.held.store(0, Ordering::SeqCst);
        self.frozen.store(frozen, Ordering::SeqCst);
    }

    /// Chunks other than heartbeats held back since the last freeze.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }
}
