//! Google Cloud Pub/Sub publishing with Google's `google-cloud-pubsub` client, producing exactly
//! what the Go adapters (watermill-googlecloud) consume.
//!
//! Takes the `broker.googlepubsub` config and the topic; gives [`PubSubPublisher`], which
//! publishes to `projects/<project_id>/topics/<topic>`: data = the structured CloudEvent (the
//! bytes [`Event::encode_into`] writes, as the RabbitMQ body), attributes exactly
//! `{"_watermill_message_uuid": "<event id>"}`, and the resource id as ordering key only when
//! `enable_message_ordering` is set.
//!
//! The topic is checked on first use (and again after a publish found it gone): missing with
//! `create_topic_if_missing` it is created, else every publish fails with
//! [`PublishError::TopicMissing`] until it exists. A page goes out as batched Publish requests
//! (at most 1,000 messages / 10 MB each, the API's limits) flushed at once and awaited together;
//! an event counts as published only once Pub/Sub returned its message id.
//!
//! Readiness: a background probe asks for the topic `projects/<p>/topics/hyperfleet-health-probe`
//! (3 s timeout) every [`PubSubOptions::probe_interval`]; an answer, NotFound included, is
//! healthy (as the Go broker library's check), an error makes [`Liveness`] report it. While
//! the last probe got no answer at all (Pub/Sub unreachable, not merely an error status such as
//! PermissionDenied), publishes fail at once with [`PublishError::Unavailable`] instead of every
//! page of a big fleet waiting out the publish timeout; the next answered probe lifts that.
//!
//! The clients are built, and their requests and the probe run, on the publisher's I/O thread
//! (`broker::io`): the messages are made on the caller's thread and handed over, so Pub/Sub and
//! readiness are served whatever the caller's thread is doing.
//!
//! Invariant: every await is bounded (client creation by `connect_timeout`, topic checks and a
//! page's publishes by `publish_timeout`, and the client's own retries end within
//! `publish_timeout`, so a message given up on is not published later behind the caller's back).

use super::io::{AbortOnDrop, IoThread};
use super::{BrokerError, Link, Liveness, Outbound, PublishError};
use crate::broker::config::PubSubConfig;
use google_cloud_gax::error::rpc::Code;
use google_cloud_gax::options::RequestOptionsBuilder;
use google_cloud_gax::retry_policy::RetryPolicyExt;
use google_cloud_pubsub::client::{Publisher as GcpPublisher, TopicAdmin};
use google_cloud_pubsub::model::Message;
use google_cloud_pubsub::retry_policy::RetryableErrors;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::timeout;

/// The attribute watermill reads the message UUID from.
pub const UUID_ATTRIBUTE: &str = "_watermill_message_uuid";

/// The topic the readiness probe asks for; it need not exist (NotFound proves the round trip).
pub const HEALTH_PROBE_TOPIC: &str = "hyperfleet-health-probe";

/// The environment variable that points the client at an emulator (`host:port`, plain text,
/// no credentials), as Google's client libraries read it.
pub const EMULATOR_HOST_VAR: &str = "PUBSUB_EMULATOR_HOST";

/// Most messages in one Publish request (the API's limit).
pub const MAX_BATCH_MESSAGES: u32 = 1000;

/// Most bytes in one Publish request (the API's limit, 10 MB).
pub const MAX_BATCH_BYTES: u32 = 10_000_000;

/// A publish or topic check whose I/O thread has stopped (only while the process ends).
const GONE: &str = "the Pub/Sub I/O thread is gone";

/// What readiness says once the publisher is closed.
const CLOSED: &str = "google pub/sub publisher is closed";

/// Bounds of a [`PubSubPublisher`].
#[derive(Clone, Debug)]
pub struct PubSubOptions {
    /// Bound on creating the clients (credentials lookup included).
    pub connect_timeout: Duration,
    /// Bound on one page: the topic check and all its publishes. The client's retries of a
    /// message end within it too.
    pub publish_timeout: Duration,
    /// Bound on one readiness probe.
    pub probe_timeout: Duration,
    /// Time between readiness probes.
    pub probe_interval: Duration,
    /// Bound on flushing outstanding messages in `close`.
    pub close_timeout: Duration,
    /// `host:port` of an emulator (plain text, anonymous); `None` is Google's service with
    /// Application Default Credentials.
    pub emulator_host: Option<String>,
}

impl Default for PubSubOptions {
    fn default() -> PubSubOptions {
        PubSubOptions {
            connect_timeout: Duration::from_secs(10),
            publish_timeout: Duration::from_secs(5),
            probe_timeout: Duration::from_secs(3),
            probe_interval: Duration::from_secs(5),
            close_timeout: Duration::from_secs(5),
            emulator_host: None,
        }
    }
}

impl PubSubOptions {
    /// The defaults, with the emulator named by `PUBSUB_EMULATOR_HOST` (if set and not empty).
    pub fn from_env() -> PubSubOptions {
        PubSubOptions {
            emulator_host: std::env::var(EMULATOR_HOST_VAR)
                .ok()
                .filter(|h| !h.trim().is_empty()),
            ..PubSubOptions::default()
        }
    }
}

/// The endpoint URL for an emulator `host:port` (a URL is taken as it is).
pub fn emulator_endpoint(host: &str) -> String {
    let host = host.trim();
    if host.starts_with("http://") || host.starts_with("https://") {
        host.to_string()
    } else {
        format!("http://{host}")
    }
}

/// `projects/<project>/topics/<topic>`.
pub fn topic_path(project: &str, topic: &str) -> String {
    format!("projects/{project}/topics/{topic}")
}

/// Publishes events to one topic. See the module docs.
pub struct PubSubPublisher {
    topic: String,
    publisher: GcpPublisher,
    admin: TopicAdmin,
    create_topic_if_missing: bool,
    ordering: bool,
    topic_checked: bool,
    opts: PubSubOptions,
    link: Arc<Mutex<Link>>,
    /// Set while the last probe got no answer at all (not even an error status): publishes
    /// then fail at once instead of each page waiting out the publish timeout.
    unreachable: Arc<AtomicBool>,
    /// The readiness probe, on the I/O thread (aborted on drop; it ends by itself once the
    /// publisher is closed).
    _probe: AbortOnDrop,
    /// Size of the last encoded event, to allocate each message's data once at its size.
    size_hint: usize,
    /// Where the clients' connections, requests and probe run: a thread of the publisher's
    /// own, so that Pub/Sub and readiness are served whatever the caller's thread is doing.
    /// Last: dropped after the probe's handle.
    io: IoThread,
}

/// Applies the emulator endpoint and anonymous credentials to a client builder, or leaves it
/// on Google's service with Application Default Credentials.
macro_rules! target {
    ($builder:expr, $emulator:expr) => {{
        let builder = $builder;
        match $emulator {
            Some(host) => builder
                .with_endpoint(emulator_endpoint(host))
                .with_credentials(
                    google_cloud_auth::credentials::anonymous::Builder::new().build(),
                ),
            None => builder,
        }
    }};
}

impl PubSubPublisher {
    /// Creates the clients (bounded by `connect_timeout`) and starts the readiness probe. Does
    /// no publish-path I/O: the topic is checked on first use.
    pub async fn connect(
        cfg: &PubSubConfig,
        topic: &str,
        opts: PubSubOptions,
    ) -> Result<PubSubPublisher, BrokerError> {
        let project = cfg.project_id.as_str();
        let full_topic = topic_path(project, topic);
        let fail = |reason: String| BrokerError::PubSubConnect {
            project: project.to_string(),
            reason,
        };
        let io = IoThread::start("pubsub")
            .map_err(|e| fail(format!("cannot start the Pub/Sub I/O thread: {e}")))?;
        let emulator = opts.emulator_host.clone();
        let publish_timeout = opts.publish_timeout;
        let retry = move || RetryableErrors.with_time_limit(publish_timeout);
        let topic_name = full_topic.clone();
        // Built on the I/O thread: the clients' connection tasks are spawned where they are
        // built and used.
        let building = io.run(async move {
            let emulator = emulator.as_deref();
            let admin = target!(TopicAdmin::builder(), emulator)
                .with_retry_policy(retry())
                .build()
                .await
                .map_err(|e| e.to_string())?;
            let publisher = target!(GcpPublisher::builder(topic_name), emulator)
                .with_retry_policy(retry())
                .set_message_count_threshold(MAX_BATCH_MESSAGES)
                .set_byte_threshold(MAX_BATCH_BYTES)
                .set_delay_threshold(Duration::from_millis(10))
                .build()
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((admin, publisher))
        });
        let (admin, publisher) = match timeout(opts.connect_timeout, building).await {
            Ok(Some(built)) => built.map_err(fail)?,
            Ok(None) => return Err(fail("the Pub/Sub I/O thread is gone".into())),
            Err(_) => {
                return Err(fail(format!("no client within {:?}", opts.connect_timeout)));
            }
        };
        let link = Arc::new(Mutex::new(Link::Probed(Some(
            "google pub/sub health check has not completed yet".into(),
        ))));
        let unreachable = Arc::new(AtomicBool::new(false));
        let probe = io.spawn(probe_loop(
            admin.clone(),
            topic_path(project, HEALTH_PROBE_TOPIC),
            opts.probe_timeout,
            opts.probe_interval,
            link.clone(),
            unreachable.clone(),
        ));
        Ok(PubSubPublisher {
            topic: full_topic,
            publisher,
            admin,
            create_topic_if_missing: cfg.create_topic_if_missing,
            ordering: cfg.enable_message_ordering,
            topic_checked: false,
            opts,
            link,
            unreachable,
            _probe: probe,
            size_hint: 1024,
            io,
        })
    }

    /// The full topic name, `projects/<p>/topics/<t>`.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The readiness view: the last probe's outcome.
    pub fn liveness(&self) -> Liveness {
        Liveness::new(self.link.clone())
    }

    /// Whether the last readiness probe reached Pub/Sub.
    pub fn is_connected(&self) -> bool {
        self.liveness().problem().is_none()
    }

    /// Publishes the events as one flush of batched requests and awaits them together; one
    /// result per event, in order. A message's ordering key (its resource id) is used only
    /// with `enable_message_ordering`.
    pub async fn publish_batch<M: Outbound>(
        &mut self,
        messages: &[M],
    ) -> Vec<Result<(), PublishError>> {
        let n = messages.len();
        if messages.is_empty() {
            return Vec::new();
        }
        if self.unreachable.load(Ordering::Acquire) {
            let problem = lock(&self.link).clone();
            let reason = match problem {
                Link::Probed(Some(problem)) => problem,
                _ => "google pub/sub unreachable".into(),
            };
            let e = PublishError::Unavailable {
                reason,
                retry_in: self.opts.probe_interval,
            };
            return vec![Err(e); n];
        }
        let deadline = tokio::time::Instant::now() + self.opts.publish_timeout;
        if let Err(e) = self.check_topic(deadline).await {
            return vec![Err(e); n];
        }
        let mut outgoing = Vec::with_capacity(n);
        for m in messages {
            let event = m.event();
            let mut data = Vec::with_capacity(self.size_hint);
            event.encode_into(&mut data);
            self.size_hint = data.len();
            let mut message = Message::new()
                .set_data(data)
                .set_attributes([(UUID_ATTRIBUTE, event.id.to_string())]);
            if self.ordering
                && let Some(key) = m.ordering_key()
            {
                message = message.set_ordering_key(key);
            }
            outgoing.push(message);
        }
        // The messages are built here; sent, flushed (every batch now instead of after the
        // delay threshold) and awaited on the I/O thread.
        let publisher = self.publisher.clone();
        let waiting = self.io.run(async move {
            let pending: Vec<_> = outgoing.into_iter().map(|m| publisher.publish(m)).collect();
            let flush = publisher.flush();
            futures_util::future::join(flush, futures_util::future::join_all(pending))
                .await
                .1
        });
        let results: Vec<Result<(), PublishError>> =
            match tokio::time::timeout_at(deadline, waiting).await {
                Ok(None) => vec![Err(PublishError::PubSub(GONE.into())); n],
                Ok(Some(ids)) => ids
                    .into_iter()
                    .map(|id| match id {
                        Ok(message_id) if !message_id.is_empty() => Ok(()),
                        Ok(_) => Err(PublishError::PubSub("no message id in the answer".into())),
                        Err(e) => Err(self.publish_error(&e)),
                    })
                    .collect(),
                Err(_) => {
                    vec![Err(PublishError::PublishTimeout(self.opts.publish_timeout)); n]
                }
            };
        if self.ordering {
            // A failure pauses the key in the client; the next cycle re-decides, so let it
            // publish again.
            for (m, result) in messages.iter().zip(&results) {
                if let (Some(key), Err(_)) = (m.ordering_key(), result) {
                    self.publisher.resume_publish(key);
                }
            }
        }
        results
    }

    /// Maps the client's error; a NotFound topic is checked again before the next publish.
    fn publish_error(&mut self, e: &google_cloud_pubsub::error::PublishError) -> PublishError {
        use google_cloud_pubsub::error::PublishError as Gcp;
        if let Gcp::Rpc(rpc) = e
            && rpc.status().is_some_and(|s| s.code == Code::NotFound)
        {
            self.topic_checked = false;
            return if self.create_topic_if_missing {
                PublishError::PubSub(format!("topic '{}' not found", self.topic))
            } else {
                PublishError::TopicMissing {
                    topic: self.topic.clone(),
                }
            };
        }
        PublishError::PubSub(error_chain(e))
    }

    /// Makes sure the topic exists (creating it when configured), once until a publish finds
    /// it gone.
    async fn check_topic(&mut self, deadline: tokio::time::Instant) -> Result<(), PublishError> {
        if self.topic_checked {
            return Ok(());
        }
        let bound = self.opts.publish_timeout;
        let topic = self.topic.clone();
        let no_answer = || {
            PublishError::PubSub(format!(
                "no answer checking topic '{topic}' within {bound:?}"
            ))
        };
        let (admin, name) = (self.admin.clone(), self.topic.clone());
        let get = self.io.run(async move {
            admin
                .get_topic()
                .set_topic(name)
                .with_attempt_timeout(bound)
                .send()
                .await
        });
        let found = match tokio::time::timeout_at(deadline, get).await {
            Err(_) => return Err(no_answer()),
            Ok(None) => return Err(PublishError::PubSub(GONE.into())),
            Ok(Some(Ok(_))) => true,
            Ok(Some(Err(e))) if e.status().is_some_and(|s| s.code == Code::NotFound) => false,
            Ok(Some(Err(e))) => {
                return Err(PublishError::PubSub(format!(
                    "cannot check topic '{}': {}",
                    self.topic,
                    error_chain(&e)
                )));
            }
        };
        if !found {
            if !self.create_topic_if_missing {
                return Err(PublishError::TopicMissing {
                    topic: self.topic.clone(),
                });
            }
            let (admin, name) = (self.admin.clone(), self.topic.clone());
            let create = self.io.run(async move {
                admin
                    .create_topic()
                    .set_name(name)
                    .with_attempt_timeout(bound)
                    .send()
                    .await
            });
            match tokio::time::timeout_at(deadline, create).await {
                Err(_) => return Err(no_answer()),
                Ok(None) => return Err(PublishError::PubSub(GONE.into())),
                Ok(Some(Ok(_))) => {
                    tracing::info!(topic = %self.topic, "Created Pub/Sub topic");
                }
                Ok(Some(Err(e))) if e.status().is_some_and(|s| s.code == Code::AlreadyExists) => {}
                Ok(Some(Err(e))) => {
                    return Err(PublishError::PubSub(format!(
                        "cannot create topic '{}': {}",
                        self.topic,
                        error_chain(&e)
                    )));
                }
            }
        }
        self.topic_checked = true;
        Ok(())
    }

    /// Flushes outstanding messages (bounded by `close_timeout`) and stops the probe.
    pub async fn close(&mut self) -> Result<(), PublishError> {
        *lock(&self.link) = Link::Probed(Some(CLOSED.into()));
        let publisher = self.publisher.clone();
        let flush = self.io.run(async move { publisher.flush().await });
        match timeout(self.opts.close_timeout, flush).await {
            Ok(_) => Ok(()),
            Err(_) => Err(PublishError::PublishTimeout(self.opts.close_timeout)),
        }
    }
}

fn lock(link: &Mutex<Link>) -> std::sync::MutexGuard<'_, Link> {
    link.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An error and its sources, `: `-separated (the client's top-level messages are generic).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Probes every `interval` and records the outcome for readiness.
async fn probe_loop(
    admin: TopicAdmin,
    probe_topic: String,
    bound: Duration,
    interval: Duration,
    link: Arc<Mutex<Link>>,
    unreachable: Arc<AtomicBool>,
) {
    loop {
        let outcome = probe(&admin, &probe_topic, bound).await;
        {
            let mut link = lock(&link);
            if matches!(&*link, Link::Probed(Some(p)) if p == CLOSED) {
                return;
            }
            unreachable.store(outcome.unreachable, Ordering::Release);
            *link = Link::Probed(outcome.problem);
        }
        tokio::time::sleep(interval).await;
    }
}

/// What one readiness probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeOutcome {
    /// `None` when Pub/Sub answered the probe (NotFound included), else the problem in the Go
    /// broker library's words.
    pub problem: Option<String>,
    /// No answer at all (a transport error or the timeout), as opposed to an error status such
    /// as PermissionDenied, which proves Pub/Sub is reachable.
    pub unreachable: bool,
}

/// One readiness probe of `probe_topic`, bounded by `bound`.
pub async fn probe(admin: &TopicAdmin, probe_topic: &str, bound: Duration) -> ProbeOutcome {
    let get = admin
        .get_topic()
        .set_topic(probe_topic)
        .with_attempt_timeout(bound)
        .with_retry_policy(google_cloud_gax::retry_policy::NeverRetry)
        .send();
    let (problem, unreachable) = match timeout(bound, get).await {
        Ok(Ok(_)) => (None, false),
        Ok(Err(e)) if e.status().is_some_and(|s| s.code == Code::NotFound) => (None, false),
        Ok(Err(e)) => (
            Some(format!(
                "google pub/sub health check failed: {}",
                error_chain(&e)
            )),
            e.status().is_none(),
        ),
        Err(_) => (
            Some(format!(
                "google pub/sub health check failed: no answer within {bound:?}"
            )),
            true,
        ),
    };
    ProbeOutcome {
        problem,
        unreachable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulator_hosts_become_plain_text_endpoints() {
        assert_eq!(emulator_endpoint("127.0.0.1:8085"), "http://127.0.0.1:8085");
        assert_eq!(emulator_endpoint(" localhost:1 "), "http://localhost:1");
        assert_eq!(emulator_endpoint("http://h:2"), "http://h:2");
        assert_eq!(topic_path("p", "t"), "projects/p/topics/t");
    }
}
