//! Google's Pub/Sub emulator for the tests (the broker, on_pubsub and simulate tests): started by
//! the test on a free port (`gcloud beta emulators pubsub start`, from the Debian package
//! google-cloud-cli-pubsub-emulator), spoken to over its REST API (topics, subscriptions, pull)
//! so the tests' side of the wire shares no code with the publisher under test.
//!
//! The emulator runs under a `sh` that leads its own process group and waits on a pipe from the
//! test process; gcloud puts itself and the Java server in a group of their own. When the test
//! process ends (even a static emulator, never dropped) the pipe closes and the shell kills both
//! groups (killing gcloud alone leaves the Java server running). Dropping an [`Emulator`] kills
//! them at once.
//!
//! Without the emulator the tests fail with a message saying how to install and start it.

use base64::Engine;
use serde_json::{Value as Json, json};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The project the tests use (the emulator takes any).
pub const PROJECT: &str = "sentinel-test";

/// How long the emulator may take to answer after it is started (it is ~10 s on an idle
/// machine; the tests share two cores with builds).
const STARTUP: Duration = Duration::from_secs(120);

pub struct Emulator {
    pub port: u16,
    /// gcloud's pid: the leader of the group the Java server runs in.
    gcloud: u32,
    child: Option<Child>,
    log: std::path::PathBuf,
}

/// One emulator for the whole test binary (startup costs ~10 s); tests use distinct topics.
pub fn shared() -> &'static Emulator {
    static SHARED: OnceLock<Emulator> = OnceLock::new();
    SHARED.get_or_init(|| Emulator::start_on(free_port()))
}

/// A free port on 127.0.0.1 (bound, then released for the emulator to take).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// A fresh topic or subscription name (the emulator wants ≥ 3 characters).
pub fn unique(what: &str) -> String {
    format!("sentinel-test-{what}-{}", uuid::Uuid::now_v7())
}

impl Emulator {
    /// Starts an emulator on `port` and waits (blocking, bounded) until it answers.
    pub fn start_on(port: u16) -> Emulator {
        if Command::new("gcloud")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| !s.success())
            .unwrap_or(true)
        {
            panic!(
                "gcloud is not installed: these tests need Google's Pub/Sub emulator. Install it \
                 with `apt-get install google-cloud-cli google-cloud-cli-pubsub-emulator`; the \
                 tests start it themselves (`gcloud beta emulators pubsub start \
                 --host-port=127.0.0.1:PORT`)"
            );
        }
        let log = std::env::temp_dir().join(format!("sentinel-pubsub-emulator-{port}.log"));
        // gcloud moves itself (and the Java server) into a process group of its own: the shell
        // reports gcloud's pid, and kills that group and its own when the pipe closes.
        let script = format!(
            "gcloud beta emulators pubsub start --host-port=127.0.0.1:{port} >'{}' 2>&1 & \
             g=$!; echo $g; read _ignored; kill -KILL -$g 2>/dev/null; kill -KILL 0",
            log.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the pub/sub emulator: {e}"));
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("the shell reports gcloud's pid");
        let gcloud: u32 = line.trim().parse().expect("gcloud's pid");
        let emulator = Emulator {
            port,
            gcloud,
            child: Some(child),
            log,
        };
        emulator.wait_up();
        emulator
    }

    /// `host:port`, as `PUBSUB_EMULATOR_HOST` takes it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/v1/{path}", self.port)
    }

    fn wait_up(&self) {
        let deadline = std::time::Instant::now() + STARTUP;
        let probe = format!("projects/{PROJECT}/topics");
        loop {
            if http_status(self.port, &format!("/v1/{probe}")) == Some(200) {
                return;
            }
            if std::time::Instant::now() > deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!(
                    "the pub/sub emulator did not answer on 127.0.0.1:{} within {STARTUP:?}; is \
                     google-cloud-cli-pubsub-emulator installed (and Java)? Its output:\n{log}",
                    self.port
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Kills the emulator's whole process group (the Java server included) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            for group in [self.gcloud, child.id()] {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{group}")])
                    .stderr(Stdio::null())
                    .status();
            }
            let _ = child.wait();
            // The port is free once the Java server is gone.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Freezes (`SIGSTOP`) or thaws (`SIGCONT`) the whole emulator: connections stay open and
    /// nothing is answered.
    pub fn freeze(&self, frozen: bool) {
        if self.child.is_some() {
            let signal = if frozen { "-STOP" } else { "-CONT" };
            let status = Command::new("kill")
                .args([signal, "--", &format!("-{}", self.gcloud)])
                .status()
                .expect("run kill");
            assert!(status.success(), "kill {signal} failed");
        }
    }

    /// Whether the emulator has `topic`.
    pub async fn topic_exists(&self, topic: &str) -> bool {
        let url = self.url(&format!("projects/{PROJECT}/topics/{topic}"));
        let status = reqwest::get(url).await.expect("emulator answers").status();
        match status.as_u16() {
            200 => true,
            404 => false,
            other => panic!("GET topic {topic}: HTTP {other}"),
        }
    }

    pub async fn create_topic(&self, topic: &str) {
        let url = self.url(&format!("projects/{PROJECT}/topics/{topic}"));
        let response = reqwest::Client::new()
            .put(url)
            .json(&json!({}))
            .send()
            .await
            .expect("emulator answers");
        assert!(
            response.status().is_success(),
            "create topic {topic}: {response:?}"
        );
    }

    /// Creates subscription `sub` on `topic` (which must exist).
    pub async fn subscribe(&self, topic: &str, sub: &str, ordered: bool) {
        let url = self.url(&format!("projects/{PROJECT}/subscriptions/{sub}"));
        let body = json!({
            "topic": format!("projects/{PROJECT}/topics/{topic}"),
            "enableMessageOrdering": ordered,
            "ackDeadlineSeconds": 60,
        });
        let response = reqwest::Client::new()
            .put(url)
            .json(&body)
            .send()
            .await
            .expect("emulator answers");
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        assert!(
            status.is_success(),
            "create subscription {sub}: {status} {text}"
        );
    }

    /// Pulls (and acknowledges) what `sub` has now: at most `max`, in one request.
    pub async fn pull_once(&self, sub: &str, max: usize) -> Vec<Pulled> {
        let url = self.url(&format!("projects/{PROJECT}/subscriptions/{sub}:pull"));
        let client = reqwest::Client::new();
        let response: Json = client
            .post(url)
            .json(&json!({"maxMessages": max, "returnImmediately": true}))
            .send()
            .await
            .expect("emulator answers")
            .json()
            .await
            .expect("pull answer is JSON");
        let received = response["receivedMessages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut ack_ids = Vec::new();
        let mut out = Vec::new();
        for r in received {
            ack_ids.push(r["ackId"].clone());
            let m = &r["message"];
            let data = base64::engine::general_purpose::STANDARD
                .decode(m["data"].as_str().unwrap_or_default())
                .expect("data is base64");
            let attributes = m["attributes"]
                .as_object()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            out.push(Pulled {
                data,
                attributes,
                ordering_key: m["orderingKey"].as_str().unwrap_or_default().to_string(),
                message_id: m["messageId"].as_str().unwrap_or_default().to_string(),
            });
        }
        if !ack_ids.is_empty() {
            let url = self.url(&format!(
                "projects/{PROJECT}/subscriptions/{sub}:acknowledge"
            ));
            let acked = client
                .post(url)
                .json(&json!({ "ackIds": ack_ids }))
                .send()
                .await
                .expect("emulator answers");
            assert!(acked.status().is_success(), "ack: {acked:?}");
        }
        out
    }

    /// Pulls until at least `n` messages arrived (failing after `patience`); gives all pulled.
    pub async fn pull_at_least(&self, sub: &str, n: usize, patience: Duration) -> Vec<Pulled> {
        let deadline = tokio::time::Instant::now() + patience;
        let mut got = Vec::new();
        while got.len() < n {
            let more = self.pull_once(sub, 1000).await;
            if more.is_empty() {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "only {} of {n} messages arrived on {sub}",
                    got.len()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            got.extend(more);
        }
        got
    }

    /// Pulls until `n` messages arrived (failing after `patience`), then checks briefly that no
    /// more follow.
    pub async fn pull_exactly(&self, sub: &str, n: usize, patience: Duration) -> Vec<Pulled> {
        let got = self.pull_at_least(sub, n, patience).await;
        assert_eq!(got.len(), n, "{} messages on {sub}, not {n}", got.len());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let extra = self.pull_once(sub, 1000).await;
        assert!(
            extra.is_empty(),
            "{} more than {n} messages on {sub}",
            extra.len()
        );
        got
    }
}

/// The status code of a plain `GET path` on 127.0.0.1:`port`, if anything answers.
fn http_status(port: u16, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One message as a subscriber sees it.
#[derive(Clone, Debug)]
pub struct Pulled {
    pub data: Vec<u8>,
    pub attributes: std::collections::BTreeMap<String, String>,
    pub ordering_key: String,
    pub message_id: String,
}
