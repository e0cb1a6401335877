//! The schema of the object model: the fields of a HyperFleet resource and of a status
//! condition (names, aliases, types), written once. The checker's field types, the JIT row's
//! slots, the page decoder's key tables, the tree decoder and the record's storage all derive
//! from these tables by name, never by position: adding a field is one enum variant and one
//! row.
//!
//! A record stores its fields by kind (texts, times, integers), each in an array indexed by the
//! row's `slot`, which a const fn computes from the table itself.

/// How a field of the object model is typed and decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// A string (`""` when absent).
    Str,
    /// An RFC 3339 time string, decoded to canonical form (`""` when absent).
    Time,
    /// An integer (0 when absent).
    Int,
    /// `labels`: a map of strings (empty when absent).
    Labels,
    /// `status`: `{conditions: [condition]}`.
    Status,
    /// `owner_references`: an object reference, read from the JSON on use.
    Reference,
    /// Whatever the JSON holds, read from the JSON on use.
    Dyn,
}

/// The fields of an object reference (`owner_references`), each a string.
pub const OBJECT_REFERENCE_FIELDS: &[&str] = &["id", "href", "kind"];

/// The fields of a resource's `status`: its conditions.
pub const STATUS_FIELDS: &[&str] = &["conditions"];

impl FieldType {
    /// Whether the decoder holds this field typed (the others are read from the JSON text).
    pub const fn is_decoded(self) -> bool {
        !matches!(self, FieldType::Reference | FieldType::Dyn)
    }

    /// Whether a value of this type is a string the JIT row reads with a plain load.
    pub const fn is_text(self) -> bool {
        matches!(self, FieldType::Str | FieldType::Time)
    }

    /// Whether two types are stored in the same array of a record (each decoded type is
    /// its own kind of storage).
    const fn same_storage(self, other: FieldType) -> bool {
        self as u8 == other as u8
    }
}

/// One field of the schema.
#[derive(Clone, Copy, Debug)]
pub struct FieldDef<F> {
    /// The field (its discriminant is its row in the table).
    pub field: F,
    /// The name rules use (and the API's JSON key).
    pub name: &'static str,
    /// Other JSON spellings accepted, in order of preference after `name`.
    pub aliases: &'static [&'static str],
    /// Its type.
    pub ty: FieldType,
    /// Its index in the record's array for its type (among the rows of the same type, in table
    /// order), computed from the table.
    pub slot: usize,
}

/// A field of a HyperFleet resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ResourceField {
    CreatedBy,
    CreatedTime,
    DeletedBy,
    DeletedTime,
    Generation,
    Href,
    Id,
    Kind,
    Labels,
    Name,
    OwnerReferences,
    Spec,
    Status,
    UpdatedBy,
    UpdatedTime,
}

/// A field of a status condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ConditionField {
    Type,
    Status,
    Reason,
    Message,
    CreatedTime,
    LastUpdatedTime,
    LastTransitionTime,
    ObservedGeneration,
}

const fn def<F>(field: F, name: &'static str, ty: FieldType) -> FieldDef<F> {
    FieldDef {
        field,
        name,
        aliases: &[],
        ty,
        slot: 0,
    }
}

/// `table` with each row's `slot` set: how many earlier rows share its type.
const fn with_slots<F: Copy, const N: usize>(mut table: [FieldDef<F>; N]) -> [FieldDef<F>; N] {
    let mut i = 0;
    while i < N {
        table[i].slot = count_before(&table, i, table[i].ty);
        i += 1;
    }
    table
}

const fn count_before<F, const N: usize>(
    table: &[FieldDef<F>; N],
    end: usize,
    ty: FieldType,
) -> usize {
    let mut n = 0;
    let mut j = 0;
    while j < end {
        if table[j].ty.same_storage(ty) {
            n += 1;
        }
        j += 1;
    }
    n
}

/// How many rows of `table` have type `ty`: the length of a record's array for it.
const fn count<F, const N: usize>(table: &[FieldDef<F>; N], ty: FieldType) -> usize {
    count_before(table, N, ty)
}

/// The fields of a HyperFleet resource: the union of the `Cluster` and `NodePool` schemas of the
/// HyperFleet API (hyperfleet-api-openapi.yaml), in [`ResourceField`] order. The checker warns
/// on `resource.<other>`.
pub const RESOURCE_SCHEMA: [FieldDef<ResourceField>; 15] = {
    use FieldType as T;
    use ResourceField as F;
    with_slots([
        def(F::CreatedBy, "created_by", T::Dyn),
        def(F::CreatedTime, "created_time", T::Time),
        def(F::DeletedBy, "deleted_by", T::Dyn),
        def(F::DeletedTime, "deleted_time", T::Dyn),
        def(F::Generation, "generation", T::Int),
        def(F::Href, "href", T::Str),
        def(F::Id, "id", T::Str),
        def(F::Kind, "kind", T::Str),
        def(F::Labels, "labels", T::Labels),
        def(F::Name, "name", T::Str),
        def(F::OwnerReferences, "owner_references", T::Reference),
        def(F::Spec, "spec", T::Dyn),
        def(F::Status, "status", T::Status),
        def(F::UpdatedBy, "updated_by", T::Dyn),
        def(F::UpdatedTime, "updated_time", T::Time),
    ])
};

/// The fields of a status condition, in the order the API documents them ([`ConditionField`]
/// order), with the Kubernetes-style spellings accepted as aliases.
pub const CONDITION_SCHEMA: [FieldDef<ConditionField>; 8] = {
    use ConditionField as F;
    use FieldType as T;
    with_slots([
        def(F::Type, "type", T::Str),
        def(F::Status, "status", T::Str),
        def(F::Reason, "reason", T::Str),
        def(F::Message, "message", T::Str),
        FieldDef {
            aliases: &["createdTime"],
            ..def(F::CreatedTime, "created_time", T::Time)
        },
        FieldDef {
            aliases: &["lastUpdatedTime", "lastUpdateTime"],
            ..def(F::LastUpdatedTime, "last_updated_time", T::Time)
        },
        FieldDef {
            aliases: &["lastTransitionTime"],
            ..def(F::LastTransitionTime, "last_transition_time", T::Time)
        },
        FieldDef {
            aliases: &["observedGeneration"],
            ..def(F::ObservedGeneration, "observed_generation", T::Int)
        },
    ])
};

/// The string fields a resource record holds.
pub const RESOURCE_TEXTS: usize = count(&RESOURCE_SCHEMA, FieldType::Str);
/// The time fields a resource record holds.
pub const RESOURCE_TIMES: usize = count(&RESOURCE_SCHEMA, FieldType::Time);
/// The integer fields a resource record holds.
pub const RESOURCE_INTS: usize = count(&RESOURCE_SCHEMA, FieldType::Int);
/// The string fields a condition record holds.
pub const CONDITION_TEXTS: usize = count(&CONDITION_SCHEMA, FieldType::Str);
/// The time fields a condition record holds.
pub const CONDITION_TIMES: usize = count(&CONDITION_SCHEMA, FieldType::Time);
/// The integer fields a condition record holds.
pub const CONDITION_INTS: usize = count(&CONDITION_SCHEMA, FieldType::Int);

/// The names of the rows of type `ty`, by slot.
const fn slot_names<F, const N: usize, const M: usize>(
    table: &[FieldDef<F>; N],
    ty: FieldType,
) -> [&'static str; M] {
    let mut out = [""; M];
    let mut i = 0;
    while i < N {
        if table[i].ty.same_storage(ty) {
            out[table[i].slot] = table[i].name;
        }
        i += 1;
    }
    out
}

/// The names of a resource's time fields, by slot (for the decoders' error messages).
pub const RESOURCE_TIME_NAMES: [&str; RESOURCE_TIMES] =
    slot_names(&RESOURCE_SCHEMA, FieldType::Time);

/// The names of a condition's time fields, by slot.
pub const CONDITION_TIME_NAMES: [&str; CONDITION_TIMES] =
    slot_names(&CONDITION_SCHEMA, FieldType::Time);

const fn names<F: Copy, const N: usize>(schema: &[FieldDef<F>; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = schema[i].name;
        i += 1;
    }
    out
}

/// The names of a condition's fields, in [`CONDITION_SCHEMA`] order.
pub const CONDITION_FIELDS: [&str; 8] = names(&CONDITION_SCHEMA);

/// The names of a resource's fields, in [`RESOURCE_SCHEMA`] order.
pub const RESOURCE_FIELDS: &[&str] = &names(&RESOURCE_SCHEMA);

/// The schema entry of resource field `name`.
pub fn resource_field(name: &str) -> Option<&'static FieldDef<ResourceField>> {
    RESOURCE_SCHEMA.iter().find(|d| d.name == name)
}

/// The schema entry of condition field `name` (by its rule name, not an alias).
pub fn condition_field(name: &str) -> Option<&'static FieldDef<ConditionField>> {
    CONDITION_SCHEMA.iter().find(|d| d.name == name)
}

impl ResourceField {
    /// Its schema entry.
    pub const fn def(self) -> &'static FieldDef<ResourceField> {
        &RESOURCE_SCHEMA[self as usize]
    }
}

impl ConditionField {
    /// Its schema entry.
    pub const fn def(self) -> &'static FieldDef<ConditionField> {
        &CONDITION_SCHEMA[self as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_tables_are_in_enum_order() {
        for (i, d) in RESOURCE_SCHEMA.iter().enumerate() {
            assert_eq!(d.field as usize, i, "{}", d.name);
            assert_eq!(RESOURCE_FIELDS[i], d.name);
            assert_eq!(resource_field(d.name).map(|d| d.field), Some(d.field));
        }
        for (i, d) in CONDITION_SCHEMA.iter().enumerate() {
            assert_eq!(d.field as usize, i, "{}", d.name);
            assert_eq!(CONDITION_FIELDS[i], d.name);
            assert_eq!(condition_field(d.name).map(|d| d.field), Some(d.field));
        }
        assert!(RESOURCE_SCHEMA.len() < 32 && CONDITION_SCHEMA.len() < 32);
    }

    /// Every decoded field has its own slot in its type's array, and the arrays are exactly
    /// as long as the fields of their type.
    #[test]
    fn slots_number_each_type_from_zero() {
        fn check<F: Copy + std::fmt::Debug>(table: &[FieldDef<F>], ty: FieldType, len: usize) {
            let mut slots: Vec<usize> = table
                .iter()
                .filter(|d| d.ty == ty)
                .map(|d| d.slot)
                .collect();
            slots.sort_unstable();
            assert_eq!(slots, (0..len).collect::<Vec<_>>(), "{ty:?}");
        }
        check(&RESOURCE_SCHEMA, FieldType::Str, RESOURCE_TEXTS);
        check(&RESOURCE_SCHEMA, FieldType::Time, RESOURCE_TIMES);
        check(&RESOURCE_SCHEMA, FieldType::Int, RESOURCE_INTS);
        check(&CONDITION_SCHEMA, FieldType::Str, CONDITION_TEXTS);
        check(&CONDITION_SCHEMA, FieldType::Time, CONDITION_TIMES);
        check(&CONDITION_SCHEMA, FieldType::Int, CONDITION_INTS);
    }
}
