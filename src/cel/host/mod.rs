//! The HyperFleet object model CEL reads, in four parts: the [`schema`] of the resource and
//! condition fields (from which the checker's types, the JIT row's slots and the decoders'
//! tables derive), the [`text`] storage decoded strings and JSON texts share, the records rules
//! evaluate on ([`model`]: [`Resource`], [`Condition`]), and what a program reads of them
//! ([`Projection`], with the read analysis in [`reads`]). Decoding JSON into the records lives
//! outside the compiler (the `resource` module).
//!
//! Invariant: a record decoded under a [`Projection`] answers every read exactly as a complete
//! decoding does; a projection changes the work, never the meaning.

pub mod model;
pub mod projection;
pub mod reads;
pub mod schema;
pub mod text;

pub use model::{
    Condition, ConditionFields, Conditions, Decoder, EMPTY_MAP, Field, MAX_RESOURCE_BYTES,
    Resource, ResourceFields, TOO_LARGE_REASON, TextField, TimeField, json_to_value,
};
pub use projection::Projection;
pub use schema::{
    CONDITION_FIELDS, CONDITION_SCHEMA, ConditionField, FieldDef, FieldType,
    OBJECT_REFERENCE_FIELDS, RESOURCE_FIELDS, RESOURCE_SCHEMA, ResourceField, STATUS_FIELDS,
    condition_field, resource_field,
};
pub use text::{EMPTY, EMPTY_TEXT, JsonText, SharedText, Text, TextRef, Time};
