//! The resource model: one HyperFleet resource decoded once from JSON into the fields rules read.
//!
//! Invariant: decoding never fails. A field with the wrong JSON type or a malformed time holds an
//! error value, so one resource's bad data fails only the expressions that read that field, and
//! only that resource's decision.
