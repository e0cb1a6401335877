//! A TCP proxy in front of the shared RabbitMQ that a test can cut, refuse or freeze, so that an
//! outage touches no other connection on the broker (the broker, cycle and process tests). It
//! can also speak for the broker: inject `connection.blocked` / `connection.unblocked` frames.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The RabbitMQ this machine kind runs.
pub const RABBIT_ADDR: &str = "127.0.0.1:5672";

pub struct Proxy {
    addr: SocketAddr,
    refusing: Arc<AtomicBool>,
    frozen: Arc<AtomicBool>,
    /// Chunks (other than heartbeats) held back while frozen, either way.
    held: Arc<AtomicUsize>,
    links: Arc<Mutex<Vec<Link>>>,
    accepted: Arc<AtomicUsize>,
}

/// One proxied connection: its task, and where to send frames to inject towards the client.
struct Link {
    task: tokio::task::AbortHandle,
    inject: mpsc::UnboundedSender<Vec<u8>>,
}

/// Where a byte stream of AMQP frames stands (the broker-to-client direction is frames from its
/// first byte: type 1, channel 2, size 4, payload, 0xCE), so injection lands between frames.
#[derive(Default)]
struct Frames {
    header: [u8; 7],
    /// Header bytes of the current frame seen so far.
    have: usize,
    /// Payload and frame-end bytes of the current frame still to come.
    left: usize,
}

impl Frames {
    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.left > 0 {
                let k = self.left.min(bytes.len());
                self.left -= k;
                bytes = &bytes[k..];
                continue;
            }
            let k = (7 - self.have).min(bytes.len());
            self.header[self.have..self.have + k].copy_from_slice(&bytes[..k]);
            self.have += k;
            bytes = &bytes[k..];
            if self.have == 7 {
                let size = u32::from_be_bytes(self.header[3..7].try_into().expect("4 bytes"));
                self.left = size as usize + 1;
                self.have = 0;
            }
        }
    }

    fn at_boundary(&self) -> bool {
        self.have == 0 && self.left == 0
    }
}

/// An AMQP method frame on channel 0 (connection class 10) with `args`.
fn connection_method(method: u16, args: &[u8]) -> Vec<u8> {
    let mut payload = vec![0, 10];
    payload.extend_from_slice(&method.to_be_bytes());
    payload.extend_from_slice(args);
    let mut frame = vec![1, 0, 0];
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(&payload);
    frame.push(0xCE);
    frame
}

/// The next frame to inject; pending forever when there is no injector.
async fn next_injection(inject: &mut Option<mpsc::UnboundedReceiver<Vec<u8>>>) -> Vec<u8> {
    match inject {
        Some(rx) => match rx.recv().await {
            Some(frame) => frame,
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

/// Copies bytes one way; while `frozen`, holds what it read (the peer hears nothing, but its
/// writes still succeed: a half-open connection) and counts in `held` the chunks held that are
/// not a lone heartbeat frame (AMQP frame type 8, 8 bytes). With `inject` (the broker-to-client
/// direction), also writes the frames sent there, each only between two forwarded frames.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
    held: Arc<AtomicUsize>,
    mut inject: Option<mpsc::UnboundedReceiver<Vec<u8>>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut frames = Frames::default();
    let mut pending: Vec<u8> = Vec::new();
    loop {
        tokio::select! {
            read = from.read(&mut buf) => {
                let n = match read {
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
                frames.feed(&buf[..n]);
            }
            frame = next_injection(&mut inject) => pending.extend_from_slice(&frame),
        }
        if !pending.is_empty() && frames.at_boundary() && !frozen.load(Ordering::SeqCst) {
            if to.write_all(&pending).await.is_err() {
                return;
            }
            pending.clear();
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
            accepted: Arc::new(AtomicUsize::new(0)),
        };
        let (refusing, frozen, held, links, accepted) = (
            proxy.refusing.clone(),
            proxy.frozen.clone(),
            proxy.held.clone(),
            proxy.links.clone(),
            proxy.accepted.clone(),
        );
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                if refusing.load(Ordering::SeqCst) {
                    continue; // dropping the socket closes it: the broker is "down"
                }
                accepted.fetch_add(1, Ordering::SeqCst);
                let (frozen, held) = (frozen.clone(), held.clone());
                let (inject, injected) = mpsc::unbounded_channel();
                let task = tokio::spawn(async move {
                    if let Ok(upstream) = TcpStream::connect(RABBIT_ADDR).await {
                        let (in_read, in_write) = inbound.into_split();
                        let (up_read, up_write) = upstream.into_split();
                        tokio::join!(
                            pump(in_read, up_write, frozen.clone(), held.clone(), None),
                            pump(up_read, in_write, frozen, held, Some(injected))
                        );
                    }
                });
                let task = task.abort_handle();
                links.lock().expect("links").push(Link { task, inject });
            }
        });
        proxy
    }

    pub fn url(&self) -> String {
        format!("amqp://guest:guest@{}/", self.addr)
    }

    /// Connections forwarded so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Drops every proxied connection and refuses new ones.
    pub fn cut(&self) {
        self.refusing.store(true, Ordering::SeqCst);
        for link in self.links.lock().expect("links").drain(..) {
            link.task.abort();
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

    /// Sends every current connection's client a `connection.blocked` (class 10, method 60) with
    /// `reason`, as if from the broker, at the next frame boundary. Meant for an idle connection
    /// after the handshake.
    pub fn inject_blocked(&self, reason: &str) {
        let reason = reason.as_bytes();
        let len = u8::try_from(reason.len()).expect("a shortstr reason");
        let mut args = vec![len];
        args.extend_from_slice(reason);
        self.inject(connection_method(60, &args));
    }

    /// Sends every current connection's client a `connection.unblocked` (class 10, method 61).
    pub fn inject_unblocked(&self) {
        self.inject(connection_method(61, &[]));
    }

    fn inject(&self, frame: Vec<u8>) {
        for link in self.links.lock().expect("links").iter() {
            // A link whose connection ended has nobody to tell.
            let _ = link.inject.send(frame.clone());
        }
    }
}
