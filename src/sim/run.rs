//! A simulation in real time: every sentinel polls on its own schedule while a monitor watches
//! the fleet converge, applies the scripted change once it has, and ends with a [`Summary`].
//!
//! Takes a started [`Simulation`] and [`RunOptions`]; gives the [`Summary`] (as a table or one
//! JSON object) and, while running, a progress line on stderr.
//!
//! Invariant: the sentinels run exactly as `sentinel serve` runs its [`Daemon`]: a cycle every
//! poll interval, never overlapping (an overrun starts the next at once), `now` read once per
//! cycle.

use super::adapters::AdapterCounts;
use super::clock::{Clock, to_timestamp};
use super::simulation::Simulation;
use crate::daemon::runtime::{CycleReport, Daemon};
use serde::Serialize;
use std::io::Write;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How the run reports progress on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressStyle {
    /// One line rewritten in place (a terminal).
    Live,
    /// A plain line every few seconds (a log).
    Lines,
    /// Nothing.
    Quiet,
}

/// When a run ends and what it does on the way.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Give up after this long (None: run until converged, the cycles are done, or Ctrl-C;
    /// without sentinels of its own, as `--api-only` runs, until Ctrl-C).
    pub duration: Option<Duration>,
    /// Stop each sentinel after this many cycles (then wait for the adapters and end).
    pub cycles: Option<u64>,
    /// Once the fleet has converged, change it (fraction of clusters patched, fraction
    /// deleted) and wait for it to converge again.
    pub change: Option<(f64, f64)>,
    /// Progress output.
    pub progress: ProgressStyle,
}

/// What a run measured. `--json` prints it as one object.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Resources created at start.
    pub resources: u64,
    /// Resources reconciled at the end.
    pub reconciled: usize,
    /// Resources left at the end (deleted ones are gone).
    pub remaining: usize,
    /// Events the sentinels published (api-only: events that reached the adapters).
    pub events_published: u64,
    /// `events_published / resources`.
    pub events_per_resource: f64,
    /// Whether the fleet converged (and, with the scripted change, converged again after it).
    pub converged: bool,
    /// Seconds from the start of the run to the final convergence.
    pub time_to_converge_s: Option<f64>,
    /// Seconds until the fleet first converged.
    pub initial_converge_s: Option<f64>,
    /// Seconds from the scripted change to the fleet converging again.
    pub change_converge_s: Option<f64>,
    /// Clusters whose spec the scripted change changed.
    pub patched: u64,
    /// Clusters the scripted change deleted.
    pub deleted: u64,
    /// Completed sentinel cycles.
    pub cycles: usize,
    /// Median cycle time.
    pub cycle_ms_p50: f64,
    /// 99th percentile cycle time.
    pub cycle_ms_p99: f64,
    /// Longest cycle.
    pub cycle_ms_max: f64,
    /// Resources evaluated per second of cycle time.
    pub resources_per_s: f64,
    /// The process's peak resident set (VmHWM).
    pub peak_rss_mib: f64,
    /// Seconds the run took.
    pub elapsed_s: f64,
    /// `in-process`, `rabbitmq` or `pubsub`.
    pub broker: String,
    /// What each adapter did.
    pub adapters: Vec<AdapterCounts>,
    /// List pages the fake API served.
    pub served_pages: u64,
    /// Resources in them.
    pub served_items: u64,
    /// Their body bytes (before gzip).
    pub served_bytes: u64,
    /// Listings finished (a listing runs from a page 1 request to the next page 1 request of
    /// the same collection).
    pub served_listings: u64,
    /// Resources served per finished listing, on average.
    pub items_per_listing: f64,
    /// Bytes served per finished listing, on average.
    pub bytes_per_listing: f64,
}

/// One finished cycle of one sentinel.
struct Cycle {
    lane: usize,
    report: CycleReport,
    elapsed: Duration,
}

#[derive(Default)]
struct Stats {
    evaluated: u64,
    cycle_ms: Vec<f64>,
    last_ms: f64,
    /// Finished listings: count, resources, bytes.
    listings: (u64, u64, u64),
}

impl Stats {
    fn record(&mut self, sim: &mut Simulation, cycle: Cycle) {
        if let Some(lane) = sim.lanes.get_mut(cycle.lane) {
            lane.published += cycle.report.published as u64;
        }
        let ms = cycle.elapsed.as_secs_f64() * 1e3;
        self.last_ms = ms;
        if cycle.report.completed {
            self.evaluated += cycle.report.total as u64;
            self.cycle_ms.push(ms);
        }
    }
}

/// Where the scripted scenario stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    Initial,
    Changed { at: f64 },
    Done,
}

/// Runs `sim` as [`RunOptions`] says, then shuts it down and summarizes.
pub async fn run(mut sim: Simulation, options: RunOptions) -> Summary {
    let started = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel::<Cycle>();
    let mut drivers = Vec::new();
    for (index, lane) in sim.lanes.iter_mut().enumerate() {
        if let Some(daemon) = lane.daemon.take() {
            let clock = sim.clock.clone();
            let driver = drive(
                index,
                daemon,
                clock,
                lane.stop.clone(),
                tx.clone(),
                options.cycles,
            );
            drivers.push((index, tokio::spawn(driver)));
        }
    }
    drop(tx);
    let mut summary = Summary {
        resources: sim.options.clusters + sim.options.nodepools,
        broker: match sim.options.broker {
            super::simulation::BrokerChoice::InProcess => "in-process".into(),
            super::simulation::BrokerChoice::RabbitMq { .. } => "rabbitmq".into(),
            super::simulation::BrokerChoice::PubSub { .. } => "pubsub".into(),
        },
        ..Summary::default()
    };
    let mut stats = Stats::default();
    let mut phase = Phase::Initial;
    let mut printer = Printer::new(options.progress);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let has_adapters = sim.lanes.iter().any(|l| !l.adapters.is_empty());
    let mut drivers_done = drivers.is_empty() && options.cycles.is_some();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            cycle = rx.recv(), if !drivers_done => match cycle {
                Some(cycle) => { stats.record(&mut sim, cycle); continue; }
                None => drivers_done = true,
            },
            _ = tick.tick() => {}
            _ = &mut ctrl_c => break,
        }
        let elapsed = started.elapsed().as_secs_f64();
        // Counting walks the whole fleet; skip it when nothing reads it.
        let watching = has_adapters || options.progress != ProgressStyle::Quiet;
        let progress = if watching {
            sim.progress()
        } else {
            Default::default()
        };
        if has_adapters && progress.converged() && options.cycles.is_none() {
            match phase {
                Phase::Initial => {
                    summary.initial_converge_s = Some(elapsed);
                    phase = match options.change {
                        Some((patch, delete)) => {
                            (summary.patched, summary.deleted) = sim.change(patch, delete);
                            Phase::Changed { at: elapsed }
                        }
                        None => Phase::Done,
                    };
                }
                Phase::Changed { at } => {
                    summary.change_converge_s = Some(elapsed - at);
                    phase = Phase::Done;
                }
                Phase::Done => {}
            }
        }
        for listing in sim.api().take_listings() {
            stats.listings.0 += 1;
            stats.listings.1 += listing.items;
            stats.listings.2 += listing.bytes;
            printer.listing(&listing);
        }
        let published = published(&sim);
        printer.show(elapsed, published, progress, stats.last_ms);
        let timed_out = options.duration.is_some_and(|d| started.elapsed() >= d);
        let cycles_done = options.cycles.is_some() && drivers_done;
        // Serving the API to a sentinel elsewhere (`--api-only`) goes on after convergence:
        // only the time limit or an interrupt ends it.
        let done = phase == Phase::Done && sim.options.sentinel;
        if done || timed_out || cycles_done {
            break;
        }
    }
    let _ = sim.stop_tx.send(true);
    for (index, driver) in drivers {
        if let Ok(daemon) = driver.await {
            sim.lanes[index].daemon = Some(daemon);
        }
    }
    while let Ok(cycle) = rx.try_recv() {
        stats.record(&mut sim, cycle);
    }
    if options.cycles.is_some() {
        // The adapters still answer what the last cycles published; wait for them (bounded).
        let _ = sim.settle(Duration::from_secs(60)).await;
    }
    printer.finish();
    let progress = sim.progress();
    summary.elapsed_s = started.elapsed().as_secs_f64();
    summary.converged = match options.cycles {
        Some(_) => progress.converged(),
        None => phase == Phase::Done,
    };
    if summary.converged && options.cycles.is_none() {
        summary.time_to_converge_s = Some(
            summary.initial_converge_s.unwrap_or(0.0) + summary.change_converge_s.unwrap_or(0.0),
        );
    }
    summary.reconciled = progress.reconciled;
    summary.remaining = progress.total;
    summary.events_published = published(&sim);
    summary.events_per_resource = ratio(summary.events_published as f64, summary.resources as f64);
    fill_cycle_stats(&mut summary, &stats);
    summary.adapters = sim.lanes.iter().flat_map(|l| l.adapters.counts()).collect();
    let served = sim.api().served();
    (
        summary.served_pages,
        summary.served_items,
        summary.served_bytes,
    ) = (served.pages, served.items, served.bytes);
    let (listings, items, bytes) = stats.listings;
    summary.served_listings = listings;
    summary.items_per_listing = ratio(items as f64, listings as f64);
    summary.bytes_per_listing = ratio(bytes as f64, listings as f64);
    sim.shutdown().await;
    summary.peak_rss_mib = peak_rss_mib().unwrap_or(0.0);
    summary
}

/// The events published: counted by the sentinels, or by the broker when they run elsewhere.
fn published(sim: &Simulation) -> u64 {
    if sim.options.sentinel {
        sim.lanes.iter().map(|l| l.published).sum()
    } else {
        sim.lanes.iter().map(|l| l.delivered()).sum()
    }
}

fn fill_cycle_stats(summary: &mut Summary, stats: &Stats) {
    let mut ms = stats.cycle_ms.clone();
    ms.sort_by(f64::total_cmp);
    summary.cycles = ms.len();
    summary.cycle_ms_p50 = percentile(&ms, 0.50);
    summary.cycle_ms_p99 = percentile(&ms, 0.99);
    summary.cycle_ms_max = ms.last().copied().unwrap_or(0.0);
    let seconds: f64 = ms.iter().sum::<f64>() / 1e3;
    summary.resources_per_s = ratio(stats.evaluated as f64, seconds);
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// The nearest-rank percentile of sorted values (0 when empty).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The process's peak resident set size in MiB, from `VmHWM` in /proc/self/status.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// One sentinel's loop ([`Daemon::run_with`] on the simulation's clock), reporting each cycle;
/// gives the daemon back when stopped or after `cycles` cycles.
async fn drive(
    lane: usize,
    mut daemon: Daemon,
    clock: Arc<dyn Clock>,
    mut stop: watch::Receiver<bool>,
    tx: mpsc::UnboundedSender<Cycle>,
    cycles: Option<u64>,
) -> Daemon {
    let mut done = 0u64;
    let on_cycle = |report, elapsed| {
        let _ = tx.send(Cycle {
            lane,
            report,
            elapsed,
        });
        done += 1;
        match cycles.is_some_and(|c| done >= c) {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    };
    daemon
        .run_with(|| to_timestamp(clock.now()), on_cycle, &mut stop)
        .await;
    daemon
}

/// Writes the progress line.
struct Printer {
    style: ProgressStyle,
    last_line: Option<Instant>,
    shown: bool,
}

impl Printer {
    fn new(style: ProgressStyle) -> Printer {
        Printer {
            style,
            last_line: None,
            shown: false,
        }
    }

    fn show(
        &mut self,
        elapsed: f64,
        published: u64,
        progress: super::api::Progress,
        cycle_ms: f64,
    ) {
        let line = format!(
            "{elapsed:6.1}s  events published {published}  reconciled {}/{}  deleting {}  cycle {cycle_ms:.0} ms",
            progress.reconciled,
            progress.total - progress.deleting,
            progress.deleting,
        );
        let mut err = std::io::stderr().lock();
        match self.style {
            ProgressStyle::Quiet => {}
            ProgressStyle::Live => {
                let _ = write!(err, "\r\x1b[2K{line}");
                let _ = err.flush();
                self.shown = true;
            }
            ProgressStyle::Lines => {
                let due = self
                    .last_line
                    .is_none_or(|t| t.elapsed() >= Duration::from_secs(2));
                if due {
                    let _ = writeln!(err, "{line}");
                    self.last_line = Some(Instant::now());
                }
            }
        }
    }

    /// One line per finished listing: what the fake API served for it.
    fn listing(&mut self, listing: &super::api::Listing) {
        let line = format!(
            "served {}: {} pages, {} items, {} bytes",
            listing.path, listing.pages, listing.items, listing.bytes
        );
        let mut err = std::io::stderr().lock();
        match self.style {
            ProgressStyle::Quiet => {}
            ProgressStyle::Live => {
                let _ = writeln!(err, "\r\x1b[2K{line}");
            }
            ProgressStyle::Lines => {
                let _ = writeln!(err, "{line}");
            }
        }
    }

    fn finish(&mut self) {
        if self.shown {
            let _ = writeln!(std::io::stderr());
        }
    }
}

impl Summary {
    /// The human-readable table.
    pub fn table(&self) -> String {
        let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |s| format!("{s:.1} s"));
        let mut rows = vec![
            ("resources", self.resources.to_string()),
            ("broker", self.broker.clone()),
            ("events published", self.events_published.to_string()),
            (
                "events per resource",
                format!("{:.2}", self.events_per_resource),
            ),
            (
                "converged",
                if self.converged { "yes" } else { "no" }.to_string(),
            ),
            ("time to converge", opt(self.time_to_converge_s)),
            ("  initial fleet", opt(self.initial_converge_s)),
        ];
        if self.patched + self.deleted > 0 {
            let change = format!(
                "{} ({} patched, {} deleted)",
                opt(self.change_converge_s),
                self.patched,
                self.deleted
            );
            rows.push(("  after the change", change));
        }
        rows.extend([
            (
                "reconciled at the end",
                format!("{}/{}", self.reconciled, self.remaining),
            ),
            ("cycles", self.cycles.to_string()),
            (
                "cycle time p50 / p99",
                format!(
                    "{:.0} ms / {:.0} ms (max {:.0} ms)",
                    self.cycle_ms_p50, self.cycle_ms_p99, self.cycle_ms_max
                ),
            ),
            (
                "resources per second",
                format!("{:.0}", self.resources_per_s),
            ),
            (
                "served per listing",
                format!(
                    "{:.0} items, {:.0} bytes ({} listings; {} items, {} bytes in all)",
                    self.items_per_listing,
                    self.bytes_per_listing,
                    self.served_listings,
                    self.served_items,
                    self.served_bytes
                ),
            ),
            ("peak RSS", format!("{:.1} MiB", self.peak_rss_mib)),
            ("elapsed", format!("{:.1} s", self.elapsed_s)),
        ]);
        let mut out = String::new();
        for (name, value) in rows {
            out.push_str(&format!("  {name:<24}{value}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn peak_rss_is_read_from_proc() {
        assert!(peak_rss_mib().is_some_and(|m| m > 0.0));
    }
}
