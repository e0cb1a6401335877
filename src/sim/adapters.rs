//! Simulated HyperFleet adapters: each consumes the sentinel's reconcile events from its own
//! queue, fetches the resource from the fake API, and reports a status, as the adapter
//! framework does.
//!
//! Takes [`AdapterSpec`]s (name, latency, failure rate, silence, precondition) and a queue per
//! adapter; gives an [`AdapterSet`] whose counters say how many events each adapter handled,
//! so a driver can wait until every published event has been answered.
//!
//! Behaviour per event, after the adapter's latency:
//! - a silent adapter reports nothing (the spec's warning: the sentinel then re-publishes every
//!   debounce period);
//! - a resource marked deleted gets `Finalized=True`;
//! - an adapter with a precondition on another adapter waits until that adapter's
//!   `<Name>Successful` condition is True at the current generation. Meanwhile, with `after=`, it
//!   reports `Available=False` (`PreconditionsNotMet`) as the spec requires ("report status
//!   anyway"); with `wait=` it reports nothing, the behaviour the spec warns about;
//! - with probability `failure rate` the report is `Available=False` (`SimulatedFailure`);
//! - otherwise `Available=True`.
//!
//! Invariant: every event taken from a queue is counted as handled exactly once, whatever
//! happens to it (silence, a vanished resource, an HTTP error), so waiting for
//! "handled == published" always ends.

mod transport;

pub use transport::{Address, Transport, TransportError};

use crate::sim::api::Collection;
use crate::sim::api::status::adapter_condition_type;
use crate::sim::clock::{Clock, format_time};
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use tracing::debug;

/// How many events one adapter works on at once.
pub const DEFAULT_PARALLELISM: usize = 256;

/// One simulated adapter's behaviour.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterSpec {
    /// The adapter's name (`dns` reports as condition `DnsSuccessful`).
    pub name: String,
    /// Time between taking an event and fetching the resource.
    pub latency: Duration,
    /// Probability in `0..=1` that a report is `Available=False`.
    pub failure_rate: f64,
    /// Never report.
    pub silent: bool,
    /// The adapter that must have succeeded at the current generation first.
    pub after: Option<String>,
    /// While `after` has not succeeded: report nothing (true) or `Available=False` (false).
    pub silent_while_waiting: bool,
}

impl AdapterSpec {
    /// An adapter that reports success after `latency`.
    pub fn new(name: &str, latency: Duration) -> AdapterSpec {
        AdapterSpec {
            name: name.to_string(),
            latency,
            failure_rate: 0.0,
            silent: false,
            after: None,
            silent_while_waiting: false,
        }
    }

    /// Parses `name[:key=value,…]` with keys `latency` (a duration such as `5ms`), `fail` (a
    /// probability), `after` or `wait` (an adapter name: report `Available=False`, or nothing,
    /// until it succeeded) and the bare word `silent`.
    pub fn parse(text: &str) -> Result<AdapterSpec, SpecError> {
        let bad = |reason: String| SpecError {
            spec: text.to_string(),
            reason,
        };
        let (name, options) = text.split_once(':').unwrap_or((text, ""));
        let valid_name = |n: &str| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        if !valid_name(name) {
            return Err(bad("the name must be letters, digits, '-' or '_'".into()));
        }
        let mut spec = AdapterSpec::new(name, Duration::ZERO);
        for option in options.split(',').filter(|o| !o.is_empty()) {
            match option.split_once('=') {
                None if option == "silent" => spec.silent = true,
                Some(("latency", value)) => {
                    spec.latency = parse_duration(value).ok_or_else(|| {
                        bad(format!("latency {value:?} is not a duration like 5ms"))
                    })?;
                }
                Some(("fail", value)) => {
                    spec.failure_rate = value
                        .parse::<f64>()
                        .ok()
                        .filter(|p| (0.0..=1.0).contains(p))
                        .ok_or_else(|| bad(format!("fail {value:?} is not between 0 and 1")))?;
                }
                Some((key @ ("after" | "wait"), value)) if valid_name(value) => {
                    spec.after = Some(value.to_string());
                    spec.silent_while_waiting = key == "wait";
                }
                _ => {
                    let reason = format!(
                        "unknown option {option:?} (use latency=, fail=, after=, wait=, silent)"
                    );
                    return Err(bad(reason));
                }
            }
        }
        Ok(spec)
    }
}

/// A `--adapter` text that cannot be read.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("invalid adapter {spec:?}: {reason}")]
pub struct SpecError {
    /// The text given.
    pub spec: String,
    /// What is wrong.
    pub reason: String,
}

/// Parses a non-negative Go duration such as `250ms` or `1.5s`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let nanos = crate::common::go::parse_go_duration(text)?;
    u64::try_from(nanos).ok().map(Duration::from_nanos)
}

/// The adapters the real API requires for `collection`, with small latencies.
pub fn default_adapters(collection: Collection) -> Vec<AdapterSpec> {
    let ms = Duration::from_millis;
    match collection {
        Collection::Clusters => vec![
            AdapterSpec::new("validation", ms(2)),
            AdapterSpec::new("dns", ms(5)),
            AdapterSpec::new("pullsecret", ms(5)),
            AdapterSpec::new("hypershift", ms(10)),
        ],
        Collection::NodePools => vec![
            AdapterSpec::new("validation", ms(2)),
            AdapterSpec::new("hypershift", ms(10)),
        ],
    }
}

/// The status report `spec` files about `resource` (None: it stays silent). `roll` is a uniform
/// draw in `0..1` that decides a simulated failure.
pub fn report_for(spec: &AdapterSpec, resource: &Json, roll: f64, now: &str) -> Option<Json> {
    if spec.silent {
        return None;
    }
    let generation = resource["generation"].as_i64().unwrap_or(0);
    let deleted = resource.get("deleted_time").is_some_and(Json::is_string);
    let condition = |ty: &str, ok: bool, reason: &str, message: &str| {
        let status = if ok { "True" } else { "False" };
        json!({"type": ty, "status": status, "reason": reason, "message": message})
    };
    let waiting = spec.after.as_deref().filter(|after| {
        let ty = adapter_condition_type(after);
        let done = resource
            .pointer("/status/conditions")
            .and_then(Json::as_array)
            .is_some_and(|conditions| {
                conditions.iter().any(|c| {
                    c["type"] == ty.as_str()
                        && c["status"] == "True"
                        && c["observed_generation"].as_i64() == Some(generation)
                })
            });
        !deleted && !done
    });
    let conditions = if deleted {
        let text = "All resources deleted; cleanup confirmed";
        vec![
            condition("Available", true, "Finalized", text),
            condition("Applied", true, "Finalized", text),
            condition("Health", true, "NoErrors", "Adapter is healthy"),
            condition("Finalized", true, "CleanupConfirmed", text),
        ]
    } else if let Some(after) = waiting {
        if spec.silent_while_waiting {
            return None;
        }
        let text = format!("Waiting for the {after} adapter");
        vec![
            condition("Available", false, "PreconditionsNotMet", &text),
            condition("Applied", false, "PreconditionsNotMet", &text),
            condition("Health", true, "NoErrors", "Adapter is healthy"),
        ]
    } else if roll < spec.failure_rate {
        let text = "Simulated failure";
        vec![
            condition("Available", false, "SimulatedFailure", text),
            condition("Applied", true, "JobApplied", "Job applied"),
            condition("Health", false, "SimulatedFailure", text),
        ]
    } else {
        let text = format!("The {} adapter is available", spec.name);
        vec![
            condition("Available", true, "JobSucceeded", &text),
            condition("Applied", true, "JobApplied", "Job applied"),
            condition("Health", true, "NoErrors", "Adapter is healthy"),
        ]
    };
    Some(json!({
        "adapter": spec.name,
        "observed_generation": generation,
        "observed_time": now,
        "conditions": conditions,
    }))
}

/// What one adapter did so far.
#[derive(Debug, Default)]
pub struct AdapterStats {
    /// Events taken from the queue.
    pub received: AtomicU64,
    /// Events completely handled (whatever the outcome).
    pub handled: AtomicU64,
    /// Reports the API stored with `Available=True`.
    pub available: AtomicU64,
    /// Reports the API stored with `Available=False`.
    pub unavailable: AtomicU64,
    /// Reports the API discarded (204).
    pub discarded: AtomicU64,
    /// Events about resources that no longer exist.
    pub gone: AtomicU64,
    /// Events that could not be handled (unreadable, unroutable, HTTP errors).
    pub errors: AtomicU64,
}

/// A snapshot of [`AdapterStats`].
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AdapterCounts {
    /// The adapter.
    pub name: String,
    /// Events taken from the queue.
    pub received: u64,
    /// Events handled.
    pub handled: u64,
    /// Stored reports with `Available=True`.
    pub available: u64,
    /// Stored reports with `Available=False`.
    pub unavailable: u64,
    /// Discarded reports.
    pub discarded: u64,
    /// Events about vanished resources.
    pub gone: u64,
    /// Events not handled because of an error.
    pub errors: u64,
}

struct Adapter {
    spec: AdapterSpec,
    transport: Transport,
    clock: Arc<dyn Clock>,
    stats: AdapterStats,
    per_resource: Mutex<HashMap<Arc<str>, u32>>,
    rng: Mutex<SplitMix64>,
    permits: Arc<Semaphore>,
}

/// Running adapters, one task each, fed by their queues.
pub struct AdapterSet {
    adapters: Vec<Arc<Adapter>>,
}

/// A message as a queue carries it: the CloudEvent body.
pub type Message = Arc<[u8]>;

impl AdapterSet {
    /// Starts one task per spec, each reading its queue from `queues` (same order) until the
    /// queue closes. `seed` makes the simulated failures reproducible.
    pub fn start(
        specs: &[AdapterSpec],
        queues: Vec<mpsc::UnboundedReceiver<Message>>,
        transport: Transport,
        clock: Arc<dyn Clock>,
        seed: u64,
    ) -> AdapterSet {
        let adapters: Vec<Arc<Adapter>> = specs
            .iter()
            .zip(queues)
            .enumerate()
            .map(|(i, (spec, queue))| {
                let adapter = Arc::new(Adapter {
                    spec: spec.clone(),
                    transport: transport.clone(),
                    clock: clock.clone(),
                    stats: AdapterStats::default(),
                    per_resource: Mutex::new(HashMap::new()),
                    rng: Mutex::new(SplitMix64(seed ^ (i as u64 + 1).wrapping_mul(0x9e37))),
                    permits: Arc::new(Semaphore::new(DEFAULT_PARALLELISM)),
                });
                tokio::spawn(adapter.clone().run(queue));
                adapter
            })
            .collect();
        AdapterSet { adapters }
    }

    /// The adapters' names.
    pub fn names(&self) -> Vec<String> {
        self.adapters.iter().map(|a| a.spec.name.clone()).collect()
    }

    /// Per adapter, what it did so far.
    pub fn counts(&self) -> Vec<AdapterCounts> {
        self.adapters
            .iter()
            .map(|a| {
                let s = &a.stats;
                let get = |c: &AtomicU64| c.load(Ordering::Acquire);
                AdapterCounts {
                    name: a.spec.name.clone(),
                    received: get(&s.received),
                    handled: get(&s.handled),
                    available: get(&s.available),
                    unavailable: get(&s.unavailable),
                    discarded: get(&s.discarded),
                    gone: get(&s.gone),
                    errors: get(&s.errors),
                }
            })
            .collect()
    }

    /// The fewest events any adapter has handled (0 without adapters).
    pub fn min_handled(&self) -> u64 {
        let handled = self
            .adapters
            .iter()
            .map(|a| a.stats.handled.load(Ordering::Acquire));
        handled.min().unwrap_or(0)
    }

    /// How many events about resource `id` the first adapter handled.
    pub fn events_for(&self, id: &str) -> u32 {
        self.adapters.first().map_or(0, |a| {
            let per = a.per_resource.lock().unwrap_or_else(|e| e.into_inner());
            per.get(id).copied().unwrap_or(0)
        })
    }

    /// Whether there are no adapters.
    pub fn is_empty(&self) -> bool {
        self.adapters.is_empty()
    }
}

impl Adapter {
    async fn run(self: Arc<Self>, mut queue: mpsc::UnboundedReceiver<Message>) {
        while let Some(message) = queue.recv().await {
            self.stats.received.fetch_add(1, Ordering::AcqRel);
            // The semaphore is never closed, so acquiring only waits.
            let Ok(permit) = self.permits.clone().acquire_owned().await else {
                break;
            };
            let adapter = self.clone();
            tokio::spawn(async move {
                adapter.handle(&message).await;
                adapter.stats.handled.fetch_add(1, Ordering::AcqRel);
                drop(permit);
            });
        }
    }

    async fn handle(&self, message: &[u8]) {
        let Some(address) = Address::from_event(message) else {
            self.stats.errors.fetch_add(1, Ordering::AcqRel);
            debug!(adapter = %self.spec.name, "unroutable event");
            return;
        };
        {
            let mut per = self.per_resource.lock().unwrap_or_else(|e| e.into_inner());
            *per.entry(Arc::from(address.id.as_str())).or_default() += 1;
        }
        if !self.spec.latency.is_zero() {
            tokio::time::sleep(self.spec.latency).await;
        }
        if let Err(e) = self.answer(&address).await {
            let counter = match e {
                TransportError::Gone => &self.stats.gone,
                _ => &self.stats.errors,
            };
            counter.fetch_add(1, Ordering::AcqRel);
            debug!(adapter = %self.spec.name, id = %address.id, error = %e, "event not answered");
        }
    }

    async fn answer(&self, address: &Address) -> Result<(), TransportError> {
        let resource = self.transport.get(address).await?;
        let roll = self
            .rng
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_f64();
        let now = format_time(self.clock.now());
        let Some(report) = report_for(&self.spec, &resource, roll, &now) else {
            return Ok(());
        };
        let available = report["conditions"][0]["status"] == "True";
        let counter = match self.transport.put_status(address, &report).await? {
            false => &self.stats.discarded,
            true if available => &self.stats.available,
            true => &self.stats.unavailable,
        };
        counter.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// A small, fast, seedable generator (SplitMix64) for simulated failures.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in `0..1`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests;
