//! Adapter status reports and their aggregation into a resource's conditions, as the HyperFleet
//! API does it.
//!
//! Takes the reports stored for one resource (one per adapter, the latest), the resource's
//! generation, `updated_time`, deletion mark and previous conditions; gives the new
//! `status.conditions`: `Reconciled`, `LastKnownReconciled`, then one `<Adapter>Successful`
//! per reporting adapter.
//!
//! Rules (from the API contract and the issue text):
//! - A report counts only if its `Available` condition is `True` or `False`, and its
//!   observed_generation is not ahead of the resource.
//! - `Reconciled` is True only when every required adapter reported at the current generation
//!   with `Available=True` (with `Finalized=True` once the resource is marked deleted). Its
//!   observed_generation is the resource's generation; its last_updated_time is the oldest
//!   report time among required adapters that reported at the current generation (the
//!   resource's updated_time when none has); its last_transition_time changes only when its
//!   status flips (to the resource's updated_time when a generation bump flips it to False).
//! - `LastKnownReconciled` is sticky: True once every required adapter reported
//!   `Available=True` at one common generation, and it stays True while a newer generation is
//!   being worked on, until a required adapter reports False at the generation it tracks.
//!
//! Invariant: aggregation is a pure function of its input; it never reads the clock.

use super::super::clock::{format_time, parse_time};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value as Json, json};

/// The condition types every report must carry.
pub const MANDATORY_CONDITIONS: [&str; 3] = ["Available", "Applied", "Health"];

/// The adapters that must report before a cluster is reconciled, as in the real API.
pub const CLUSTER_ADAPTERS: [&str; 4] = ["validation", "dns", "pullsecret", "hypershift"];

/// The adapters that must report before a nodepool is reconciled, as in the real API.
pub const NODEPOOL_ADAPTERS: [&str; 2] = ["validation", "hypershift"];

/// One condition of a report request (`ConditionRequest`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ConditionRequest {
    /// `Available`, `Applied`, `Health`, `Finalized`, …
    #[serde(rename = "type")]
    pub ty: String,
    /// `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// Machine-readable reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default)]
    pub message: Option<String>,
}

/// An adapter condition's status.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum ConditionStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

impl ConditionStatus {
    /// The wire text.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// The body of `PUT …/statuses` (`AdapterStatusCreateRequest`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct StatusReport {
    /// The reporting adapter's name.
    pub adapter: String,
    /// The resource generation the report is about.
    pub observed_generation: i64,
    /// When the adapter observed the resource (RFC 3339); becomes `last_report_time`.
    pub observed_time: String,
    /// The adapter's conditions.
    pub conditions: Vec<ConditionRequest>,
    /// Job metadata, stored as given.
    #[serde(default)]
    pub metadata: Option<Json>,
    /// Adapter-specific data, stored as given.
    #[serde(default)]
    pub data: Option<Json>,
}

/// One stored condition of an adapter status.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterCondition {
    /// The condition type.
    pub ty: String,
    /// Its status.
    pub status: ConditionStatus,
    /// Machine-readable reason.
    pub reason: Option<String>,
    /// Human-readable message.
    pub message: Option<String>,
    /// When the status last changed.
    pub last_transition_time: DateTime<Utc>,
}

/// The latest report of one adapter about one resource (`AdapterStatus`).
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterStatus {
    /// The adapter's name.
    pub adapter: String,
    /// The generation reported on.
    pub observed_generation: i64,
    /// The conditions.
    pub conditions: Vec<AdapterCondition>,
    /// Job metadata as reported.
    pub metadata: Option<Json>,
    /// Adapter data as reported.
    pub data: Option<Json>,
    /// When the adapter first reported on the resource.
    pub created_time: DateTime<Utc>,
    /// The `observed_time` of the latest report.
    pub last_report_time: DateTime<Utc>,
}

impl AdapterStatus {
    /// The condition of type `ty`.
    pub fn condition(&self, ty: &str) -> Option<&AdapterCondition> {
        self.conditions.iter().find(|c| c.ty == ty)
    }

    /// Whether condition `ty` is present with status True.
    pub fn is_true(&self, ty: &str) -> bool {
        self.condition(ty)
            .is_some_and(|c| c.status == ConditionStatus::True)
    }

    /// The API's JSON form.
    pub fn to_json(&self) -> Json {
        let conditions: Vec<Json> = self
            .conditions
            .iter()
            .map(|c| {
                let mut obj = json!({
                    "type": c.ty, "status": c.status.as_str(),
                    "last_transition_time": format_time(c.last_transition_time),
                });
                if let Some(reason) = &c.reason {
                    obj["reason"] = json!(reason);
                }
                if let Some(message) = &c.message {
                    obj["message"] = json!(message);
                }
                obj
            })
            .collect();
        let mut obj = json!({
            "adapter": self.adapter,
            "observed_generation": self.observed_generation,
            "conditions": conditions,
            "created_time": format_time(self.created_time),
            "last_report_time": format_time(self.last_report_time),
        });
        if let Some(metadata) = &self.metadata {
            obj["metadata"] = metadata.clone();
        }
        if let Some(data) = &self.data {
            obj["data"] = data.clone();
        }
        obj
    }
}

/// Why a report was accepted by the API but not stored (it answers 204).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discard {
    /// Older than the generation this adapter already reported on.
    Stale,
    /// Reports a generation the resource has not reached.
    FromTheFuture,
    /// Lacks one of [`MANDATORY_CONDITIONS`].
    MissingCondition(&'static str),
    /// `Available=Unknown` reports are not processed.
    AvailableUnknown,
}

/// Checks a report against the stored one and the resource's generation, and turns it into the
/// stored form: condition transition times carry over while a condition keeps its status.
pub fn accept(
    report: &StatusReport,
    observed_time: DateTime<Utc>,
    previous: Option<&AdapterStatus>,
    generation: i64,
) -> Result<AdapterStatus, Discard> {
    if previous.is_some_and(|p| report.observed_generation < p.observed_generation) {
        return Err(Discard::Stale);
    }
    for ty in MANDATORY_CONDITIONS {
        if !report.conditions.iter().any(|c| c.ty == ty) {
            return Err(Discard::MissingCondition(ty));
        }
    }
    let available = report.conditions.iter().find(|c| c.ty == "Available");
    if available.is_some_and(|c| c.status == ConditionStatus::Unknown) {
        return Err(Discard::AvailableUnknown);
    }
    if report.observed_generation > generation {
        return Err(Discard::FromTheFuture);
    }
    let conditions = report
        .conditions
        .iter()
        .map(|c| {
            let kept = previous
                .and_then(|p| p.condition(&c.ty))
                .filter(|old| old.status == c.status);
            AdapterCondition {
                ty: c.ty.clone(),
                status: c.status,
                reason: c.reason.clone(),
                message: c.message.clone(),
                last_transition_time: kept.map_or(observed_time, |old| old.last_transition_time),
            }
        })
        .collect();
    Ok(AdapterStatus {
        adapter: report.adapter.clone(),
        observed_generation: report.observed_generation,
        conditions,
        metadata: report.metadata.clone(),
        data: report.data.clone(),
        created_time: previous.map_or(observed_time, |p| p.created_time),
        last_report_time: observed_time,
    })
}

/// `dns` → `DnsSuccessful`, `gcp-provisioner` → `GcpProvisionerSuccessful`.
pub fn adapter_condition_type(adapter: &str) -> String {
    let mut out = String::with_capacity(adapter.len() + 10);
    for part in adapter.split('-').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out.push_str("Successful");
    out
}

/// What aggregation needs to know about one resource.
#[derive(Debug)]
pub struct AggregateInput<'a> {
    /// The resource's generation.
    pub generation: i64,
    /// The resource's `updated_time`: the fallback for times no report supplies.
    pub updated_time: DateTime<Utc>,
    /// Whether the resource is marked for deletion.
    pub deleted: bool,
    /// The resource's current `status.conditions` (may be empty).
    pub previous: &'a [Json],
    /// The adapters that must report.
    pub required: &'a [String],
    /// The stored reports, one per adapter.
    pub statuses: &'a [AdapterStatus],
}

/// One required adapter's counted report.
#[derive(Clone, Copy, Debug)]
struct Snapshot<'a> {
    status: &'a AdapterStatus,
    available: bool,
    finalized: bool,
    reason: Option<&'a str>,
    message: Option<&'a str>,
}

impl Snapshot<'_> {
    fn generation(&self) -> i64 {
        self.status.observed_generation
    }

    fn time(&self) -> DateTime<Utc> {
        self.status.last_report_time
    }
}

/// A previous condition, as far as aggregation reads it.
#[derive(Clone, Debug)]
struct Previous {
    status: String,
    observed_generation: i64,
    created: Option<DateTime<Utc>>,
    last_updated: Option<DateTime<Utc>>,
    last_transition: Option<DateTime<Utc>>,
}

fn previous(conditions: &[Json], ty: &str) -> Option<Previous> {
    let c = conditions.iter().find(|c| c["type"] == ty)?;
    let time = |key: &str| c.get(key).and_then(Json::as_str).and_then(parse_time);
    Some(Previous {
        status: c["status"].as_str().unwrap_or("").to_string(),
        observed_generation: c["observed_generation"].as_i64().unwrap_or(0),
        created: time("created_time"),
        last_updated: time("last_updated_time"),
        last_transition: time("last_transition_time"),
    })
}

/// The new `status.conditions` of a resource.
pub fn aggregate(input: &AggregateInput<'_>) -> Vec<Json> {
    let snapshots = snapshots(input);
    let by_name = |name: &str| snapshots.iter().find(|s| s.status.adapter == name).copied();
    let required: Vec<Option<Snapshot<'_>>> = input.required.iter().map(|n| by_name(n)).collect();
    let mut out = vec![
        reconciled(input, &required),
        last_known_reconciled(input, &required),
    ];
    for snapshot in &snapshots {
        out.push(adapter_condition(input, snapshot));
    }
    out
}

/// The counted reports of required adapters, in the order of `required`.
fn snapshots<'a>(input: &AggregateInput<'a>) -> Vec<Snapshot<'a>> {
    input
        .required
        .iter()
        .filter_map(|name| input.statuses.iter().find(|s| &s.adapter == name))
        .filter(|s| s.observed_generation <= input.generation)
        .filter_map(|status| {
            let available = status.condition("Available")?;
            let is_true = match available.status {
                ConditionStatus::True => true,
                ConditionStatus::False => false,
                ConditionStatus::Unknown => return None,
            };
            Some(Snapshot {
                status,
                available: is_true,
                finalized: status.is_true("Finalized"),
                reason: available.reason.as_deref(),
                message: available.message.as_deref(),
            })
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn condition(
    ty: &str,
    status: bool,
    reason: &str,
    message: &str,
    observed_generation: i64,
    created: DateTime<Utc>,
    last_updated: DateTime<Utc>,
    last_transition: DateTime<Utc>,
) -> Json {
    json!({
        "type": ty,
        "status": if status { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "observed_generation": observed_generation,
        "created_time": format_time(created),
        "last_updated_time": format_time(last_updated),
        "last_transition_time": format_time(last_transition),
    })
}

fn reconciled(input: &AggregateInput<'_>, required: &[Option<Snapshot<'_>>]) -> Json {
    let generation = input.generation;
    let at_current: Vec<Snapshot<'_>> = required
        .iter()
        .flatten()
        .filter(|s| s.generation() == generation)
        .copied()
        .collect();
    let met = |s: &Option<Snapshot<'_>>| {
        s.is_some_and(|s| {
            s.generation() == generation
                && if input.deleted {
                    s.finalized
                } else {
                    s.available
                }
        })
    };
    let status = !required.is_empty() && required.iter().all(met);
    let last_updated = at_current
        .iter()
        .map(Snapshot::time)
        .min()
        .unwrap_or(input.updated_time);
    let prev = previous(input.previous, "Reconciled");
    let last_transition = match &prev {
        None => last_updated,
        Some(p) if (p.status == "True") == status => p.last_transition.unwrap_or(last_updated),
        Some(p) if p.status == "True" && generation > p.observed_generation => input.updated_time,
        Some(_) => last_updated,
    };
    let created = prev
        .as_ref()
        .and_then(|p| p.created)
        .unwrap_or(input.updated_time);
    let (reason, message) = if status {
        let text = "All required adapters reconciled at the current generation";
        ("AllAdaptersReconciled", text.to_string())
    } else {
        let wanted = if input.deleted {
            "Finalized=True"
        } else {
            "Available=True"
        };
        let missing: Vec<&str> = input
            .required
            .iter()
            .zip(required)
            .filter(|(_, s)| !met(s))
            .map(|(n, _)| n.as_str())
            .collect();
        let text = format!(
            "Required adapters not reporting {wanted}: [{}]",
            missing.join(", ")
        );
        ("MissingRequiredAdapters", text)
    };
    let ty = "Reconciled";
    condition(
        ty,
        status,
        reason,
        &message,
        generation,
        created,
        last_updated,
        last_transition,
    )
}

fn last_known_reconciled(input: &AggregateInput<'_>, required: &[Option<Snapshot<'_>>]) -> Json {
    let prev = previous(input.previous, "LastKnownReconciled");
    let prev_true = prev.as_ref().is_some_and(|p| p.status == "True");
    let all_reported = !required.is_empty() && required.iter().all(Option::is_some);
    let reported: Vec<Snapshot<'_>> = required.iter().flatten().copied().collect();
    let all_true = all_reported && reported.iter().all(|s| s.available);
    let first_generation = reported.first().map_or(0, Snapshot::generation);
    let uniform = reported.iter().all(|s| s.generation() == first_generation);
    let tracked = prev.as_ref().map_or(1, |p| p.observed_generation);
    let status = if !all_reported {
        false
    } else if all_true {
        uniform || prev_true
    } else {
        // Sticky: stay True while no failure lands on the tracked generation.
        prev_true
            && !reported
                .iter()
                .any(|s| !s.available && s.generation() == tracked)
    };
    let prev_updated = prev.as_ref().and_then(|p| p.last_updated);
    let (observed_generation, last_updated) = if status && all_true && uniform {
        let oldest = reported.iter().map(Snapshot::time).min();
        (first_generation, oldest.unwrap_or(input.updated_time))
    } else if status {
        (tracked, prev_updated.unwrap_or(input.updated_time))
    } else {
        let newest = reported.iter().map(Snapshot::generation).max();
        let generation = newest.unwrap_or(tracked);
        let failed_there = reported
            .iter()
            .filter(|s| s.generation() == generation)
            .any(|s| !s.available);
        let oldest_there = reported
            .iter()
            .filter(|s| s.generation() == generation)
            .map(Snapshot::time)
            .min();
        let time = if failed_there { oldest_there } else { None };
        let fallback = prev_updated.unwrap_or(input.updated_time);
        (generation, time.unwrap_or(fallback))
    };
    let last_transition = match &prev {
        Some(p) if (p.status == "True") == status => p.last_transition.unwrap_or(last_updated),
        _ => last_updated,
    };
    let created = prev
        .as_ref()
        .and_then(|p| p.created)
        .unwrap_or(input.updated_time);
    let (reason, message) = if status {
        let text = "All required adapters reported Available=True at a common generation";
        ("AllAdaptersReconciled", text)
    } else {
        let text = "Required adapters do not report a common Available=True generation";
        ("AdaptersNotReconciled", text)
    };
    condition(
        "LastKnownReconciled",
        status,
        reason,
        message,
        observed_generation,
        created,
        last_updated,
        last_transition,
    )
}

fn adapter_condition(input: &AggregateInput<'_>, snapshot: &Snapshot<'_>) -> Json {
    let ty = adapter_condition_type(&snapshot.status.adapter);
    let prev = previous(input.previous, &ty);
    let last_updated = snapshot.time();
    let last_transition = match &prev {
        Some(p) if (p.status == "True") == snapshot.available => {
            p.last_transition.unwrap_or(last_updated)
        }
        _ => last_updated,
    };
    let created = prev
        .as_ref()
        .and_then(|p| p.created)
        .unwrap_or(input.updated_time);
    condition(
        &ty,
        snapshot.available,
        snapshot.reason.unwrap_or(""),
        snapshot.message.unwrap_or(""),
        snapshot.generation(),
        created,
        last_updated,
        last_transition,
    )
}

#[cfg(test)]
mod tests;
