//! What is decoded of a resource: a set of resource fields, condition types and condition
//! fields ([`Projection`]). The page decoder decodes these and skips the rest, which stays
//! readable from the resource's JSON text.
//!
//! Invariant: every projection holds what the daemon itself reads of every resource, whatever
//! the rules read ([`Projection::DAEMON_READS`]: the id, for de-duplication, ordering keys, logs
//! and spans; the kind, for the event type). The fields are private and every constructor
//! starts from that set, so no projection without them can be made, and the record's
//! [`super::Resource::id`] and [`super::Resource::kind`] never fall back to a second decoding.

use super::schema::{CONDITION_SCHEMA, ConditionField, RESOURCE_SCHEMA, ResourceField};
use std::sync::Arc;

/// A set of the schema's fields (what a program reads of a resource, with what the daemon
/// reads). Built from [`Projection::base`] or [`Projection::all`] and grown with the `add_`
/// methods ([`Projection::add_reads`] adds what an expression reads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    /// Resource fields, a bit per [`ResourceField`].
    fields: u32,
    /// The condition types (constant names), or `None` for every type.
    condition_types: Option<Vec<Arc<str>>>,
    /// Condition fields, a bit per [`ConditionField`] (`type` is always decoded).
    condition_fields: u32,
}

const ALL_RESOURCE_FIELDS: u32 = (1 << RESOURCE_SCHEMA.len()) - 1;
const ALL_CONDITION_FIELDS: u32 = (1 << CONDITION_SCHEMA.len()) - 1;

impl Default for Projection {
    fn default() -> Projection {
        Projection::all()
    }
}

impl Projection {
    /// What the daemon reads of every resource, whatever its rules read: `id` (de-duplication,
    /// ordering keys, logs, spans) and `kind` (the event type, the empty-id warning).
    pub const DAEMON_READS: [ResourceField; 2] = [ResourceField::Id, ResourceField::Kind];

    /// Everything (what a dynamic access to the whole resource needs).
    pub fn all() -> Projection {
        Projection {
            fields: ALL_RESOURCE_FIELDS,
            condition_types: None,
            condition_fields: ALL_CONDITION_FIELDS,
        }
    }

    /// Nothing but [`Projection::DAEMON_READS`]: what a config whose rules read nothing of a
    /// resource decodes.
    pub fn base() -> Projection {
        let mut fields = 0;
        for f in Projection::DAEMON_READS {
            fields |= 1 << f as u32;
        }
        Projection {
            fields,
            condition_types: Some(Vec::new()),
            condition_fields: 1 << ConditionField::Type as u32,
        }
    }

    /// Whether this is [`Projection::all`].
    #[inline]
    pub fn is_all(&self) -> bool {
        self.fields == ALL_RESOURCE_FIELDS
            && self.condition_fields == ALL_CONDITION_FIELDS
            && self.condition_types.is_none()
    }

    /// Adds resource field `f`.
    pub fn add_field(&mut self, f: ResourceField) {
        self.fields |= 1 << f as u32;
        if f == ResourceField::Status {
            self.condition_types = None;
            self.condition_fields = ALL_CONDITION_FIELDS;
        }
    }

    /// Adds condition type `name` (`None`: every type), with `status` (where they live).
    pub fn add_condition(&mut self, name: Option<&str>) {
        self.fields |= 1 << ResourceField::Status as u32;
        match (name, &mut self.condition_types) {
            (Some(name), Some(types)) => {
                if !types.iter().any(|t| &**t == name) {
                    types.push(Arc::from(name));
                }
            }
            (None, types) => *types = None,
            (Some(_), None) => {}
        }
    }

    /// Adds condition field `f` (`None`: every field).
    pub fn add_condition_field(&mut self, f: Option<ConditionField>) {
        match f {
            Some(f) => self.condition_fields |= 1 << f as u32,
            None => self.condition_fields = ALL_CONDITION_FIELDS,
        }
    }

    /// The union of two projections.
    pub fn union(&mut self, other: &Projection) {
        self.fields |= other.fields;
        self.condition_fields |= other.condition_fields;
        match &other.condition_types {
            None => self.condition_types = None,
            Some(types) => {
                for t in types {
                    self.add_condition(Some(t));
                }
            }
        }
    }

    /// Whether resource field `f` is decoded.
    #[inline]
    pub fn has_field(&self, f: ResourceField) -> bool {
        self.fields & (1 << f as u32) != 0
    }

    /// Whether conditions of type `name` are decoded.
    pub fn has_condition(&self, name: &str) -> bool {
        self.has_field(ResourceField::Status)
            && self
                .condition_types
                .as_ref()
                .is_none_or(|types| types.iter().any(|t| &**t == name))
    }

    /// Whether condition field `f` is decoded.
    #[inline]
    pub fn has_condition_field(&self, f: ConditionField) -> bool {
        self.condition_fields & (1 << f as u32) != 0
    }

    /// The condition fields decoded, a bit per [`ConditionField`], `type` always among them.
    pub(in crate::cel::host) fn condition_bits(&self) -> u32 {
        self.condition_fields | 1 << ConditionField::Type as u32
    }

    /// Whether every field of a condition is decoded.
    pub fn has_every_condition_field(&self) -> bool {
        self.condition_fields == ALL_CONDITION_FIELDS
    }

    /// Whether every condition is decoded whole.
    pub fn has_all_conditions(&self) -> bool {
        self.has_field(ResourceField::Status)
            && self.condition_types.is_none()
            && self.has_every_condition_field()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever is added or united, the daemon's own reads stay in.
    #[test]
    fn every_projection_holds_the_daemon_reads() {
        let mut grown = Projection::base();
        grown.add_condition(Some("Ready"));
        grown.add_condition_field(Some(ConditionField::Status));
        grown.union(&Projection::base());
        for p in [Projection::base(), Projection::all(), grown] {
            for f in Projection::DAEMON_READS {
                assert!(p.has_field(f), "{f:?} in {p:?}");
            }
        }
        assert!(!Projection::base().has_field(ResourceField::Generation));
        assert!(Projection::base().has_condition_field(ConditionField::Type));
    }
}
