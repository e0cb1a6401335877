//! `sentinel serve` as a process: the built binary with a clean environment, its output collected
//! by threads, killed on drop if still running; and [`ServeRig`], the surroundings most process
//! tests start it in.

use super::fake_api::{FakeServer, fake_api};
use super::{eventually, process_fleet, read_data};
use crate::common::rig::{Rig, rig, unique};
use serde_json::Value as Json;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_sentinel");

/// A temp directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        let dir = std::env::temp_dir().join(unique("daemon"));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write temp file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// config.yaml and broker.yaml from the fixtures, for `topic` and the AMQP `url`.
pub fn serve_files(dir: &TempDir, topic: &str, amqp_url: &str) -> (PathBuf, PathBuf) {
    let config = read_data("serve.yaml").replace("{topic}", topic);
    let broker = read_data("broker.yaml").replace("{url}", amqp_url);
    (
        dir.write("config.yaml", &config),
        dir.write("broker.yaml", &broker),
    )
}

/// A free port on 127.0.0.1 (bound, then released for the child to take).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `sentinel` with a clean environment plus `env`.
pub fn sentinel_cmd(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_clear();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// A running `sentinel serve`: killed on drop if still running; its output collected by
/// threads.
pub struct Process {
    child: Child,
    pub stdout: Arc<Mutex<Vec<String>>>,
    pub stderr: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    /// The health server's base URL.
    pub health: String,
    /// The metrics server's base URL.
    pub metrics: String,
}

/// Reads `stream` line by line on a thread until it closes.
fn collect(
    stream: impl std::io::Read + Send + 'static,
) -> (Arc<Mutex<Vec<String>>>, std::thread::JoinHandle<()>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            sink.lock().expect("lines").push(line);
        }
    });
    (lines, reader)
}

impl Process {
    /// Spawns `cmd` with piped output; its servers answer at `health` and `metrics`.
    pub fn spawn(mut cmd: Command, health: String, metrics: String) -> Process {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sentinel serve");
        let (stdout, out_reader) = collect(child.stdout.take().expect("stdout"));
        let (stderr, err_reader) = collect(child.stderr.take().expect("stderr"));
        Process {
            child,
            stdout,
            stderr,
            readers: vec![out_reader, err_reader],
            health,
            metrics,
        }
    }

    /// `serve` of `config` with `BROKER_CONFIG_FILE=broker`, the API at `api_url`, `env`, and
    /// the two servers on `health_addr` and `metrics_addr`.
    fn serve(
        config: &Path,
        broker: &Path,
        api_url: &str,
        env: &[(&str, &str)],
        (health_addr, metrics_addr): (&str, &str),
    ) -> Command {
        let config_flag = format!("--config={}", config.display());
        let health_flag = format!("--health-server-bindaddress={health_addr}");
        let metrics_flag = format!("--metrics-server-bindaddress={metrics_addr}");
        let broker_file = broker.display().to_string();
        let mut all_env = vec![
            ("BROKER_CONFIG_FILE", broker_file.as_str()),
            ("HYPERFLEET_API_BASE_URL", api_url),
        ];
        all_env.extend_from_slice(env);
        sentinel_cmd(
            &["serve", &config_flag, &health_flag, &metrics_flag],
            &all_env,
        )
    }

    /// `sentinel serve` of `config` with `BROKER_CONFIG_FILE=broker`, the API at `api_url` and
    /// `env` added, its servers on free ports of 127.0.0.1.
    pub fn start_env(config: &Path, broker: &Path, api_url: &str, env: &[(&str, &str)]) -> Process {
        let health = format!("127.0.0.1:{}", free_port());
        let metrics = format!("127.0.0.1:{}", free_port());
        let cmd = Process::serve(config, broker, api_url, env, (&health, &metrics));
        Process::spawn(cmd, format!("http://{health}"), format!("http://{metrics}"))
    }

    /// `sentinel serve` listening on Go-style `:PORT` addresses (every interface, dual-stack),
    /// with extra environment: the health server read over IPv6, the metrics over IPv4.
    pub fn start_anywhere(
        config: &Path,
        broker: &Path,
        api_url: &str,
        env: &[(&str, &str)],
    ) -> Process {
        let (health_port, metrics_port) = (free_port(), free_port());
        let addrs = (format!(":{health_port}"), format!(":{metrics_port}"));
        let cmd = Process::serve(config, broker, api_url, env, (&addrs.0, &addrs.1));
        Process::spawn(
            cmd,
            format!("http://[::1]:{health_port}"),
            format!("http://127.0.0.1:{metrics_port}"),
        )
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} failed");
    }

    /// GET on the health server; `None` while nothing listens.
    pub async fn health_get(&self, path: &str) -> Option<(u16, String)> {
        let response = reqwest::get(format!("{}{path}", self.health)).await.ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.ok()?))
    }

    pub async fn wait_ready(&mut self) {
        let mut tries = 0;
        loop {
            if let Some((200, _)) = self.health_get("/readyz").await {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "sentinel exited ({status}) before ready:\n{}",
                    self.output()
                );
            }
            tries += 1;
            assert!(tries < 1500, "never ready:\n{}", self.output());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (bounded) for the process to exit, then for its output to be read to the end.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let status = eventually("sentinel to exit", async || {
            self.child.try_wait().expect("try_wait")
        })
        .await;
        for reader in self.readers.drain(..) {
            // The pipes are closed once the process is gone, so the readers end.
            let _ = tokio::task::block_in_place(|| reader.join());
        }
        status
    }

    /// Every stdout line as JSON.
    pub fn json_lines(&self) -> Vec<Json> {
        self.stdout
            .lock()
            .expect("stdout")
            .iter()
            .filter_map(|line| serde_json::from_str::<Json>(line).ok())
            .collect()
    }

    /// The log lines on stdout, as JSON: the stdout span exporter's lines (tracing is on by
    /// default) have no level.
    pub fn log_lines(&self) -> Vec<Json> {
        self.json_lines()
            .into_iter()
            .filter(|v| v.get("level").is_some())
            .collect()
    }

    /// The JSON objects on stdout that are not log lines (spans).
    pub fn span_lines(&self) -> Vec<Json> {
        self.json_lines()
            .into_iter()
            .filter(|v| v.get("level").is_none())
            .collect()
    }

    /// `(level, message)` of every log line.
    pub fn log_messages(&self) -> Vec<(String, String)> {
        self.log_lines()
            .iter()
            .map(|v| {
                let field = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                (field("level"), field("message"))
            })
            .collect()
    }

    pub fn output(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            self.stdout.lock().expect("stdout").join("\n"),
            self.stderr.lock().expect("stderr").join("\n")
        )
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The end of a clean shutdown: the signal logged, no error logged, nothing on stderr, and
/// `Sentinel stopped gracefully` last, in Go's words.
pub fn assert_clean_stop(process: &Process) {
    let logs = process.log_messages();
    let messages: Vec<&str> = logs.iter().map(|(_, m)| m.as_str()).collect();
    let signal = messages
        .iter()
        .position(|m| *m == "Received shutdown signal");
    let loop_stop = messages
        .iter()
        .position(|m| *m == "Stopping sentinel due to context cancellation");
    assert!(
        signal.is_some() && loop_stop.is_some() && signal < loop_stop,
        "{logs:?}"
    );
    let errors: Vec<_> = logs.iter().filter(|(l, _)| l == "error").collect();
    assert!(errors.is_empty(), "{}", process.output());
    assert_eq!(
        logs.last().map(|(_, m)| m.as_str()),
        Some("Sentinel stopped gracefully")
    );
    let stderr = process.stderr.lock().expect("stderr").clone();
    assert!(stderr.is_empty(), "{}", process.output());
}

/// A process test's surroundings: the rig, its own exchange (`topic`) with a queue bound to it,
/// the process fleet (`due`: the ids every cycle publishes) on a fake API, and config.yaml and
/// broker.yaml for them in a temp directory.
pub struct ServeRig {
    pub rig: Rig,
    pub topic: String,
    pub queue: String,
    pub due: Vec<String>,
    pub api: FakeServer,
    pub config: PathBuf,
    pub broker: PathBuf,
    _dir: TempDir,
}

/// Sets up [`ServeRig`] for the test `name`, the broker reached at `amqp_url`.
pub async fn serve_rig(name: &str, amqp_url: &str) -> ServeRig {
    let mut rig = rig().await;
    let (topic, queue) = rig.exchange_and_queue(name).await;
    let (fleet, due) = process_fleet();
    let api = fake_api(fleet).await;
    let dir = TempDir::new();
    let (config, broker) = serve_files(&dir, &topic, amqp_url);
    ServeRig {
        rig,
        topic,
        queue,
        due,
        api,
        config,
        broker,
        _dir: dir,
    }
}

impl ServeRig {
    /// `sentinel serve` in this rig with `env` added ([`Process::start_env`]), ready.
    pub async fn start(&self, env: &[(&str, &str)]) -> Process {
        let mut process = Process::start_env(&self.config, &self.broker, &self.api.base_url, env);
        process.wait_ready().await;
        process
    }
}
