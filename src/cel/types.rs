//! CEL types as the checker infers them.
//!
//! Invariant: `Dyn` is the only type the checker cannot see through; every other type is exact,
//! so a value of a non-`Dyn` static type always has that runtime type.

use std::fmt;

/// A CEL type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// `int` (i64).
    Int,
    /// `uint` (u64).
    Uint,
    /// `double` (f64).
    Double,
    /// `bool`.
    Bool,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `null_type`.
    Null,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `google.protobuf.Duration`.
    Duration,
    /// `list(T)`.
    List(Box<Type>),
    /// `map(K, V)`.
    Map(Box<Type>, Box<Type>),
    /// Known only at run time.
    Dyn,
    /// The type of a type value (`type(1)`).
    Type,
    /// A status condition returned by `condition(name)`.
    Condition,
    /// The polled HyperFleet resource.
    Resource,
    /// `resource.status`: `{conditions: list(Condition)}`.
    ResourceStatus,
    /// `resource.owner_references`: `{id, href, kind}`.
    ObjectReference,
}

impl Type {
    /// `list(T)`.
    pub fn list(elem: Type) -> Type {
        Type::List(Box::new(elem))
    }

    /// `map(K, V)`.
    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Box::new(key), Box::new(value))
    }

    /// The type a type-name identifier denotes as a value (`int`, `list`,
    /// `google.protobuf.Timestamp`); `None` for any other name (CEL has no `dyn` denotation).
    pub fn from_name(name: &str) -> Option<Type> {
        Some(match name {
            "int" => Type::Int,
            "uint" => Type::Uint,
            "double" => Type::Double,
            "bool" => Type::Bool,
            "string" => Type::String,
            "bytes" => Type::Bytes,
            "null_type" => Type::Null,
            "list" => Type::list(Type::Dyn),
            "map" => Type::map(Type::Dyn, Type::Dyn),
            "type" => Type::Type,
            "google.protobuf.Timestamp" => Type::Timestamp,
            "google.protobuf.Duration" => Type::Duration,
            _ => return None,
        })
    }

    /// Whether this is `dyn`.
    pub fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn)
    }

    /// Whether values of this type can stand where `want` is expected, statically:
    /// equal types, or either side `dyn` (checked at run time), element-wise for containers.
    pub fn assignable_to(&self, want: &Type) -> bool {
        match (self, want) {
            (Type::Dyn, _) | (_, Type::Dyn) => true,
            (Type::List(a), Type::List(b)) => a.assignable_to(b),
            (Type::Map(ak, av), Type::Map(bk, bv)) => ak.assignable_to(bk) && av.assignable_to(bv),
            (a, b) => a == b,
        }
    }

    /// The join of two types in a list/map literal or the branches of `?:`:
    /// the type itself when equal, `dyn` otherwise.
    pub fn join(&self, other: &Type) -> Type {
        if self == other {
            self.clone()
        } else {
            Type::Dyn
        }
    }

    /// The static type of field `name` of an object type, when known.
    pub fn field(&self, name: &str) -> Option<Type> {
        use crate::cel::host::FieldType;
        match self {
            Type::Condition => crate::cel::host::condition_field(name).map(|d| match d.ty {
                FieldType::Int => Type::Int,
                _ => Type::String,
            }),
            Type::Resource => Some(match crate::cel::host::resource_field(name).map(|d| d.ty) {
                Some(FieldType::Str | FieldType::Time) => Type::String,
                Some(FieldType::Int) => Type::Int,
                Some(FieldType::Labels) => Type::map(Type::String, Type::String),
                Some(FieldType::Reference) => Type::ObjectReference,
                Some(FieldType::Status) => Type::ResourceStatus,
                // spec, references and anything else: whatever the JSON holds.
                Some(FieldType::Dyn) | None => Type::Dyn,
            }),
            Type::ResourceStatus => crate::cel::host::STATUS_FIELDS
                .contains(&name)
                .then(|| Type::list(Type::Condition)),
            Type::ObjectReference => crate::cel::host::OBJECT_REFERENCE_FIELDS
                .contains(&name)
                .then_some(Type::String),
            _ => None,
        }
    }

    /// Whether this type is one of the object types with known fields.
    pub fn is_object(&self) -> bool {
        matches!(
            self,
            Type::Condition | Type::Resource | Type::ResourceStatus | Type::ObjectReference
        )
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::Bool => f.write_str("bool"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Null => f.write_str("null_type"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::List(e) => write!(f, "list({e})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Dyn => f.write_str("dyn"),
            Type::Type => f.write_str("type"),
            Type::Condition => f.write_str("Condition"),
            Type::Resource => f.write_str("Resource"),
            Type::ResourceStatus => f.write_str("ResourceStatus"),
            Type::ObjectReference => f.write_str("ObjectReference"),
        }
    }
}
