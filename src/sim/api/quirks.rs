//! Ways the fake API departs from the contract when a test asks it to ([`Quirks`]), each an API
//! a sentinel meets on a bad day: an older version that refuses part of the search language,
//! one that honours only part of `fields` or ignores `order`, one whose search disagrees with
//! the rules, and adapters so fast that a filtered set shrinks while it is listed.
//!
//! Invariant: with [`Quirks::default`] the fake API is the contract's.

use super::fleet::{Collection, Fleet};
use crate::sim::clock::format_time;
use crate::tsl::{Column, Tsl};
use serde_json::{Value as Json, json};
use std::sync::Arc;

/// The departures from the contract a fake API makes (none by default).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Quirks {
    /// Refuse (400, as the API refuses a search it cannot parse) every search that contains
    /// this text.
    pub refuse_search: Option<String>,
    /// Leave these out of every projected item: top-level names, or `status.conditions.<name>`.
    pub ignore_fields: Vec<String>,
    /// List in insertion order whatever `order` asks.
    pub ignore_order: bool,
    /// `<condition> IS NULL` never matches, not even a resource without that condition: a
    /// search that disagrees with the rules (the new resources a filter looks for are missed).
    pub null_conditions_unmatched: bool,
    /// Every resource a request with a search lists is reconciled as it is served (its
    /// `Reconciled` condition True, updated now, at its generation): adapters faster than the
    /// listing, so that a filtered set shrinks under it.
    pub reconcile_listed: bool,
}

impl Quirks {
    /// Why a search is refused, if this API refuses it.
    pub(super) fn refuses(&self, search: &str) -> Option<String> {
        let term = self.refuse_search.as_deref()?;
        search.contains(term).then(|| {
            format!("failed to parse search query: {term} is not supported by this API version")
        })
    }

    /// The search as this API applies it.
    pub(super) fn applied(&self, search: Tsl) -> Tsl {
        if !self.null_conditions_unmatched {
            return search;
        }
        unmatched_nulls(search)
    }

    /// A projected item as this API writes it.
    pub(super) fn projected(&self, mut item: Json) -> Json {
        for field in &self.ignore_fields {
            match field.strip_prefix("status.conditions.") {
                Some(sub) => {
                    let conditions = item.pointer_mut("/status/conditions");
                    for c in conditions
                        .and_then(Json::as_array_mut)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(c) = c.as_object_mut() {
                            c.remove(sub);
                        }
                    }
                }
                None => {
                    if let Some(o) = item.as_object_mut() {
                        o.remove(field);
                    }
                }
            }
        }
        item
    }

    /// After `items` of `collection` were served to a request with a search.
    pub(super) fn listed(&self, fleet: &Fleet, collection: Collection, items: &[Arc<[u8]>]) {
        if !self.reconcile_listed {
            return;
        }
        let now = format_time(fleet.clock().now());
        for item in items {
            let Ok(resource) = serde_json::from_slice::<Json>(item) else {
                continue;
            };
            let Some(id) = resource["id"].as_str() else {
                continue;
            };
            fleet.update(collection, id, |r| {
                let generation = r["generation"].clone();
                let reconciled = json!({
                    "type": "Reconciled", "status": "True", "reason": "Reconciled",
                    "message": "", "created_time": now, "last_updated_time": now,
                    "last_transition_time": now, "observed_generation": generation,
                });
                let mut conditions: Vec<Json> = r["status"]["conditions"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                conditions.retain(|c| c["type"] != "Reconciled");
                conditions.push(reconciled);
                r["status"]["conditions"] = Json::Array(conditions);
            });
        }
    }
}

/// `search` with every `<condition> IS NULL` unmatched.
fn unmatched_nulls(search: Tsl) -> Tsl {
    match search {
        Tsl::IsNull(Column::ConditionStatus(_) | Column::Condition(..), false) => Tsl::False,
        Tsl::And(parts) => Tsl::And(parts.into_iter().map(unmatched_nulls).collect()),
        Tsl::Or(parts) => Tsl::Or(parts.into_iter().map(unmatched_nulls).collect()),
        Tsl::Not(inner) => Tsl::Not(Box::new(unmatched_nulls(*inner))),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_change_only_what_they_name() {
        let none = Quirks::default();
        let search =
            crate::tsl::parse("status.conditions.Ready IS NULL or generation = 1").unwrap();
        assert_eq!(none.applied(search.clone()), search);
        assert_eq!(none.refuses("anything"), None);
        let item = json!({"id": "a", "generation": 1, "status": {"conditions": [
            {"type": "R", "last_updated_time": "t", "status": "True"}]}});
        assert_eq!(none.projected(item.clone()), item);
        let odd = Quirks {
            refuse_search: Some("last_updated_time".into()),
            ignore_fields: vec![
                "generation".into(),
                "status.conditions.last_updated_time".into(),
            ],
            null_conditions_unmatched: true,
            ..Quirks::default()
        };
        assert!(
            odd.refuses("status.conditions.R.last_updated_time < 'x'")
                .is_some()
        );
        assert_eq!(
            odd.applied(search).to_string(),
            "id IS NULL or generation = 1"
        );
        assert_eq!(
            odd.projected(item),
            json!({"id": "a", "status": {"conditions": [{"type": "R", "status": "True"}]}})
        );
    }
}
