//! What a `search` reads of a stored resource, read once when the resource is stored, and the
//! searches the fleet keeps answered.
//!
//! [`Meta`] holds the columns a search compares (generation, the three times, the labels, one
//! compact row per condition); [`Stored`] shows an entry to [`Tsl::eval`] as the API's SQL sees
//! its row. [`Matches`] remembers, per search, the positions of the resources it keeps, and the
//! store updates them on every write, so that the pages of one listing after the first cost a
//! slice of that list instead of a pass over the collection.
//!
//! Invariant: a remembered [`Matches`] always lists exactly the positions a fresh evaluation
//! would (every write to the store goes through [`Matches::changed`], [`Matches::removed`] or
//! [`Matches::appended`], or drops them all).

use crate::cel::time::{Timestamp, parse_timestamp};
use crate::tsl::{Cell, Column, ConditionColumn, Literal, Subject, TimeColumn, TimeLit, Tsl};
use serde_json::Value as Json;
use std::borrow::Cow;
use std::sync::Arc;

/// What the fleet reads from a stored resource.
#[derive(Clone, Debug, Default)]
pub struct Meta {
    /// `generation` (0 when absent).
    pub generation: i64,
    /// Whether `deleted_time` is set.
    pub deleted: bool,
    /// Whether `Reconciled` is True at the current generation.
    pub reconciled: bool,
    /// `owner_references.id`.
    pub owner: Option<Arc<str>>,
    /// `labels`, when non-empty.
    pub labels: Option<Box<Json>>,
    /// `kind`.
    pub kind: Cow<'static, str>,
    /// `created_time` (None when absent or not RFC 3339).
    pub created_time: Option<Timestamp>,
    /// `updated_time`.
    pub updated_time: Option<Timestamp>,
    /// `deleted_time`.
    pub deleted_time: Option<Timestamp>,
    /// `status.conditions`, one row each.
    pub conditions: Box<[ConditionRow]>,
}

impl Meta {
    pub(super) fn of(resource: &Json) -> Meta {
        let generation = resource["generation"].as_i64().unwrap_or(0);
        let reconciled = conditions(resource).iter().any(|c| {
            c["type"] == "Reconciled"
                && c["status"] == "True"
                && c["observed_generation"].as_i64() == Some(generation)
        });
        let labels = resource
            .get("labels")
            .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
            .map(|l| Box::new(l.clone()));
        Meta {
            generation,
            deleted: resource
                .get("deleted_time")
                .is_some_and(|t| t.as_str().is_some_and(|t| !t.is_empty())),
            reconciled,
            owner: resource
                .pointer("/owner_references/id")
                .and_then(Json::as_str)
                .map(Arc::from),
            labels,
            kind: shared(resource["kind"].as_str().unwrap_or("")),
            created_time: time_of(resource.get("created_time")),
            updated_time: time_of(resource.get("updated_time")),
            deleted_time: time_of(resource.get("deleted_time")),
            conditions: conditions(resource).iter().map(ConditionRow::of).collect(),
        }
    }
}

pub(super) fn conditions(resource: &Json) -> &[Json] {
    resource
        .pointer("/status/conditions")
        .and_then(Json::as_array)
        .map_or(&[], Vec::as_slice)
}

/// One condition of a stored resource, as the API's `resource_conditions` row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConditionRow {
    /// `type`
    pub ty: Cow<'static, str>,
    /// `status`
    pub status: Cow<'static, str>,
    /// `last_updated_time` (None when absent or not RFC 3339)
    pub last_updated_time: Option<Timestamp>,
    /// `last_transition_time`
    pub last_transition_time: Option<Timestamp>,
    /// `observed_generation`
    pub observed_generation: Option<i64>,
}

/// Texts most resources share, kept without an allocation per resource.
const COMMON: [&str; 12] = [
    "True",
    "False",
    "Unknown",
    "Reconciled",
    "LastKnownReconciled",
    "Available",
    "Applied",
    "Health",
    "Ready",
    "Cluster",
    "NodePool",
    "",
];

/// `text` shared when it is a common one.
pub(super) fn shared(text: &str) -> Cow<'static, str> {
    match COMMON.iter().find(|c| **c == text) {
        Some(c) => Cow::Borrowed(c),
        None => Cow::Owned(text.to_string()),
    }
}

/// An RFC 3339 time of the resource, None when absent or unreadable (SQL NULL).
pub(super) fn time_of(value: Option<&Json>) -> Option<Timestamp> {
    parse_timestamp(value?.as_str()?).ok()
}

impl ConditionRow {
    pub(super) fn of(condition: &Json) -> ConditionRow {
        let text = |key: &str| shared(condition[key].as_str().unwrap_or(""));
        ConditionRow {
            ty: text("type"),
            status: text("status"),
            last_updated_time: time_of(condition.get("last_updated_time")),
            last_transition_time: time_of(condition.get("last_transition_time")),
            observed_generation: condition["observed_generation"].as_i64(),
        }
    }
}

/// A stored resource as a search sees it: the API's row, its labels and its conditions.
pub struct Stored<'a> {
    /// The resource's id.
    pub id: &'a str,
    /// What the fleet read from it.
    pub meta: &'a Meta,
    /// The bytes served, read for the text columns the fleet does not keep (`name`, `href`,
    /// `created_by`, …), which no sentinel searches on.
    pub body: &'a [u8],
}

impl Subject for Stored<'_> {
    fn cell(&self, column: &Column) -> Option<Cell<'_>> {
        let meta = self.meta;
        let time = |t: Option<Timestamp>| t.map(Cell::Time);
        match column {
            Column::Label(key) => {
                let value = meta.labels.as_deref()?.get(key.as_str())?.as_str()?;
                Some(Cell::Text(Cow::Borrowed(value)))
            }
            Column::ConditionStatus(ty) | Column::Condition(ty, _) => {
                let row = meta.conditions.iter().find(|c| c.ty == ty.as_str())?;
                match column {
                    Column::Condition(_, ConditionColumn::LastUpdatedTime) => {
                        time(row.last_updated_time)
                    }
                    Column::Condition(_, ConditionColumn::LastTransitionTime) => {
                        time(row.last_transition_time)
                    }
                    Column::Condition(_, ConditionColumn::ObservedGeneration) => {
                        row.observed_generation.map(Cell::Int)
                    }
                    _ => Some(Cell::Text(Cow::Borrowed(&row.status))),
                }
            }
            Column::Generation => Some(Cell::Int(meta.generation)),
            Column::Time(TimeColumn::Created) => time(meta.created_time),
            Column::Time(TimeColumn::Updated) => time(meta.updated_time),
            Column::Time(TimeColumn::Deleted) => time(meta.deleted_time),
            Column::Text(name) => match name.as_str() {
                "id" => Some(Cell::Text(Cow::Borrowed(self.id))),
                "kind" => (!meta.kind.is_empty()).then(|| Cell::Text(Cow::Borrowed(&meta.kind))),
                "owner_id" => meta.owner.as_deref().map(|o| Cell::Text(Cow::Borrowed(o))),
                other => {
                    let resource: Json = serde_json::from_slice(self.body).ok()?;
                    let value = match other {
                        "owner_href" => resource.pointer("/owner_references/href"),
                        "owner_kind" => resource.pointer("/owner_references/kind"),
                        _ => resource.get(other),
                    };
                    let text = value?.as_str()?;
                    Some(Cell::Text(Cow::Owned(text.to_string())))
                }
            },
        }
    }
}

/// Whether `tsl` reads the clock (a [`TimeLit::Cutoff`]): its matches change with time, so
/// they are never remembered.
fn reads_clock(tsl: &Tsl) -> bool {
    let literal = |l: &Literal| matches!(l, Literal::Time(TimeLit::Cutoff { .. }));
    match tsl {
        Tsl::True | Tsl::False | Tsl::IsNull(..) => false,
        Tsl::And(parts) | Tsl::Or(parts) => parts.iter().any(reads_clock),
        Tsl::Not(inner) => reads_clock(inner),
        Tsl::Compare(_, _, l) => literal(l),
        Tsl::In(_, ls) => ls.iter().any(literal),
    }
}

/// How many searches a collection remembers (a sentinel sends one text per cycle; a few
/// sentinels or collections share the fake API).
pub(super) const REMEMBERED: usize = 8;

/// The resources a search keeps, by position in the store, ascending.
#[derive(Debug)]
pub(super) struct Matches {
    /// The search's text and owner: what a request must repeat to reuse it.
    pub key: String,
    pub search: Tsl,
    pub owner: Option<String>,
    pub positions: Vec<u32>,
}

impl Matches {
    /// Whether this filter can be remembered, and under what key.
    pub(super) fn key_of(search: &Tsl, owner: Option<&str>) -> Option<String> {
        (!reads_clock(search)).then(|| format!("{search}\u{0}{}", owner.unwrap_or("")))
    }

    /// Whether the entry keeps matching after a change, updating the list.
    pub(super) fn changed(&mut self, pos: usize, keeps: bool) {
        let pos = pos as u32;
        match (self.positions.binary_search(&pos), keeps) {
            (Ok(i), false) => {
                self.positions.remove(i);
            }
            (Err(i), true) => self.positions.insert(i, pos),
            _ => {}
        }
    }

    /// The entry at `pos` is gone; later ones moved down by one.
    pub(super) fn removed(&mut self, pos: usize) {
        let pos = pos as u32;
        if let Ok(i) = self.positions.binary_search(&pos) {
            self.positions.remove(i);
        }
        let from = self.positions.partition_point(|&p| p < pos);
        for p in &mut self.positions[from..] {
            *p -= 1;
        }
    }

    /// A new entry at the end.
    pub(super) fn appended(&mut self, pos: usize, keeps: bool) {
        if keeps {
            self.positions.push(pos as u32);
        }
    }
}

/// The owner id a filter requires, shared with [`super::ListFilter`].
pub(super) fn owner_matches(owner: Option<&str>, meta_owner: Option<&Arc<str>>) -> bool {
    owner.is_none_or(|o| meta_owner.map(|m| &**m) == Some(o))
}
