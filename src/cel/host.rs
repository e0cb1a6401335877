//! The HyperFleet object model CEL reads: one schema of the resource and condition fields
//! (names, aliases, types) from which the checker's types, the JIT row's slots and the page
//! decoder's projection are all derived, and the [`Resource`] and [`Condition`] values rules
//! evaluate on. Decoding JSON into them lives outside the compiler (the `resource` module).
//!
//! Invariant: a resource decoded under a [`Projection`] answers every access exactly as a fully
//! decoded one: a field outside the projection is decoded on first use from the item's JSON text
//! (kept as a range of the page), so a projection changes the work, never the meaning.
//!
//! A resource over [`MAX_RESOURCE_BYTES`] of JSON is not decoded at all (its memory would grow
//! with its size, several times over): only its id is read, every other field is an error, and
//! [`Resource::too_large`] tells the daemon to skip it with [`TOO_LARGE_REASON`].

use crate::cel::time::Timestamp;
use crate::cel::value::{ErrorKind, EvalError, EvalResult, Map, Value};
use serde_json::Value as Json;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock};

/// The largest resource decoded, in bytes of JSON (1 MiB); a larger one is skipped.
pub const MAX_RESOURCE_BYTES: usize = 1 << 20;

/// The skip reason of a resource over [`MAX_RESOURCE_BYTES`] (one fixed text, so that it is one
/// metrics label).
pub const TOO_LARGE_REASON: &str = "resource larger than 1048576 bytes of JSON";

/// A decoded field: its value, or the error any expression reading it gets.
pub type Field<T> = Result<T, EvalError>;

// ---- the schema ----

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

impl FieldType {
    /// Whether the decoder holds this field typed (the others are read from the JSON text).
    pub const fn is_decoded(self) -> bool {
        !matches!(self, FieldType::Reference | FieldType::Dyn)
    }

    /// Whether a value of this type is a string the JIT row reads with a plain load.
    pub const fn is_text(self) -> bool {
        matches!(self, FieldType::Str | FieldType::Time)
    }
}

/// One field of the schema: `field` is its index in its table.
#[derive(Clone, Copy, Debug)]
pub struct FieldDef<F> {
    /// The field (its discriminant is its index in the table).
    pub field: F,
    /// The name rules use (and the API's JSON key).
    pub name: &'static str,
    /// Other JSON spellings accepted, in order of preference after `name`.
    pub aliases: &'static [&'static str],
    /// Its type.
    pub ty: FieldType,
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
    }
}

/// The fields of a HyperFleet resource: the union of the `Cluster` and `NodePool` schemas of the
/// HyperFleet API (hyperfleet-api-openapi.yaml), in [`ResourceField`] order. The checker warns
/// on `resource.<other>`.
pub const RESOURCE_SCHEMA: [FieldDef<ResourceField>; 15] = {
    use FieldType as T;
    use ResourceField as F;
    [
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
    ]
};

/// The fields of a status condition, in the order the API documents them ([`ConditionField`]
/// order), with the Kubernetes-style spellings accepted as aliases.
pub const CONDITION_SCHEMA: [FieldDef<ConditionField>; 8] = {
    use ConditionField as F;
    use FieldType as T;
    [
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
    ]
};

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
    pub fn def(self) -> &'static FieldDef<ResourceField> {
        &RESOURCE_SCHEMA[self as usize]
    }
}

impl ConditionField {
    /// Its schema entry.
    pub fn def(self) -> &'static FieldDef<ConditionField> {
        &CONDITION_SCHEMA[self as usize]
    }
}

// ---- the projection ----

/// What a config's rules read of a resource, computed when they compile: the page decoder
/// decodes these fields and skips the rest (which stay readable from the JSON text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    /// Resource fields read, a bit per [`ResourceField`].
    pub fields: u32,
    /// The condition types read (constant names), or `None` for every type.
    pub condition_types: Option<Vec<Arc<str>>>,
    /// Condition fields read, a bit per [`ConditionField`] (`type` is always decoded).
    pub condition_fields: u32,
}

impl Default for Projection {
    fn default() -> Projection {
        Projection::all()
    }
}

impl Projection {
    /// Everything (what a dynamic access to the whole resource needs).
    pub fn all() -> Projection {
        Projection {
            fields: (1 << RESOURCE_SCHEMA.len()) - 1,
            condition_types: None,
            condition_fields: (1 << CONDITION_SCHEMA.len()) - 1,
        }
    }

    /// Nothing but the id (which the daemon always reads).
    pub fn none() -> Projection {
        Projection {
            fields: 1 << ResourceField::Id as u32,
            condition_types: Some(Vec::new()),
            condition_fields: 1 << ConditionField::Type as u32,
        }
    }

    /// Whether this is [`Projection::all`].
    pub fn is_all(&self) -> bool {
        *self == Projection::all()
    }

    /// Adds resource field `f`.
    pub fn add_field(&mut self, f: ResourceField) {
        self.fields |= 1 << f as u32;
        if f == ResourceField::Status {
            self.condition_types = None;
            self.condition_fields = (1 << CONDITION_SCHEMA.len()) - 1;
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
            None => self.condition_fields = (1 << CONDITION_SCHEMA.len()) - 1,
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
    pub fn has_condition_field(&self, f: ConditionField) -> bool {
        self.condition_fields & (1 << f as u32) != 0
    }

    /// Whether every condition is decoded whole.
    fn has_all_conditions(&self) -> bool {
        self.has_field(ResourceField::Status)
            && self.condition_types.is_none()
            && self.condition_fields == (1 << CONDITION_SCHEMA.len()) - 1
    }
}

// ---- the model ----

/// The shared text decoded strings and JSON texts are ranges of: a list page's body, taken over
/// from the response without a copy (`String::from_utf8` of the bytes read), or a text of its
/// own.
pub type Page = Arc<String>;

/// A decoded string: a range of a shared text (usually the list page it came in, so decoding a
/// string copies and allocates nothing), or a string of its own (an escaped string, a time in
/// another spelling than its canonical one), read as a CEL value without a copy.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Range { src: Page, start: usize, end: usize },
    Own(Arc<str>),
}

/// A borrowed [`Text`] (or a whole `Arc<str>`): what the accessors return.
#[derive(Clone, Copy)]
pub struct TextRef<'a> {
    text: &'a str,
    /// The shared string `text` is all of, when it is one (read as a value without a copy).
    whole: Option<&'a Arc<str>>,
}

impl Text {
    /// A string of its own.
    pub fn whole(src: Arc<str>) -> Text {
        Text(Repr::Own(src))
    }

    /// A copy of `s`.
    pub fn owned(s: &str) -> Text {
        Text::whole(Arc::from(s))
    }

    /// The range `start..end` of `src`; `None` when it is not within it on character
    /// boundaries.
    pub fn range(src: &Page, start: usize, end: usize) -> Option<Text> {
        src.get(start..end)?;
        Some(Text(Repr::Range {
            src: src.clone(),
            start,
            end,
        }))
    }

    /// `s` as a range of `src` when it is a slice of it (no copy), else a text of its own.
    pub fn within(src: &Page, s: &str) -> Text {
        let start = (s.as_ptr() as usize).wrapping_sub(src.as_ptr() as usize);
        match Text::range(src, start, start.wrapping_add(s.len())) {
            Some(t) if t.as_str().as_ptr() == s.as_ptr() => t,
            _ => Text::owned(s),
        }
    }

    /// The empty text.
    pub fn empty() -> Text {
        Text::whole(EMPTY.clone())
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Range { src, start, end } => src.get(*start..*end).unwrap_or(""),
            Repr::Own(s) => s,
        }
    }

    /// Borrowed.
    pub fn borrow(&self) -> TextRef<'_> {
        match &self.0 {
            Repr::Range { .. } => TextRef {
                text: self.as_str(),
                whole: None,
            },
            Repr::Own(s) => TextRef::whole(s),
        }
    }
}

impl<'a> TextRef<'a> {
    /// A whole `Arc<str>`.
    pub fn whole(src: &'a Arc<str>) -> TextRef<'a> {
        TextRef {
            text: src,
            whole: Some(src),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &'a str {
        self.text
    }

    /// The text as a shared string: the whole `Arc<str>` it is (no allocation), a shared
    /// constant for the usual status words, else a copy.
    pub fn to_arc(&self) -> Arc<str> {
        self.shared().unwrap_or_else(|| Arc::from(self.text))
    }

    /// The text as a shared string when that needs no copy: the whole `Arc<str>` it is, or a
    /// shared constant for the usual status words; `None` when [`TextRef::to_arc`] would copy.
    pub fn shared(&self) -> Option<Arc<str>> {
        if let Some(whole) = self.whole {
            return Some(whole.clone());
        }
        Some(match self.text {
            "True" => WORDS[0].clone(),
            "False" => WORDS[1].clone(),
            "Unknown" => WORDS[2].clone(),
            "" => EMPTY.clone(),
            _ => return None,
        })
    }

    /// The text as a CEL string.
    pub fn to_value(&self) -> Value {
        Value::String(self.to_arc())
    }
}

/// The condition status words, shared (a status read as a value allocates nothing).
static WORDS: LazyLock<[Arc<str>; 3]> =
    LazyLock::new(|| [Arc::from("True"), Arc::from("False"), Arc::from("Unknown")]);

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

impl std::fmt::Debug for TextRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// A decoded time field: its canonical RFC 3339 text (what rules read) and that text parsed by
/// `timestamp(…)`'s parser, done once at decode (`None` when that parse fails: the reader of
/// the timestamp then gets the parser's error).
#[derive(Clone, Debug, PartialEq)]
pub struct Time {
    /// The canonical text ("" when absent).
    pub text: Text,
    /// `timestamp(text)`, when it succeeds.
    pub at: Option<Timestamp>,
}

impl Time {
    /// The absent time: "", which `timestamp(…)` rejects.
    pub fn empty() -> Time {
        Time {
            text: Text::empty(),
            at: None,
        }
    }
}

/// A time reads as its canonical text.
impl std::ops::Deref for Time {
    type Target = str;
    fn deref(&self) -> &str {
        self.text.as_str()
    }
}

/// A text field as its accessor reads it.
pub type TextField<'a> = Result<TextRef<'a>, &'a EvalError>;

/// A time field as its accessor reads it.
pub type TimeField<'a> = Result<&'a Time, &'a EvalError>;

/// A JSON text that is a range of a shared text: the body of the list page it came in (so
/// decoding a page copies no item), or a text of its own.
#[derive(Clone)]
pub struct RawText {
    text: Page,
    start: usize,
    end: usize,
}

impl RawText {
    /// A whole text.
    pub fn whole(text: Page) -> RawText {
        RawText {
            start: 0,
            end: text.len(),
            text,
        }
    }

    /// A copy of `text`.
    pub fn owned(text: &str) -> RawText {
        RawText::whole(Arc::new(text.to_owned()))
    }

    /// The range `start..end` of `text`; `None` when it is not within it on character
    /// boundaries.
    pub fn range(text: &Page, start: usize, end: usize) -> Option<RawText> {
        text.get(start..end)?;
        Some(RawText {
            text: text.clone(),
            start,
            end,
        })
    }

    /// The text.
    pub fn get(&self) -> &str {
        self.text.get(self.start..self.end).unwrap_or("null")
    }

    /// The shared text and the range of this one in it.
    pub fn parts(&self) -> (&Page, std::ops::Range<usize>) {
        (&self.text, self.start..self.end)
    }
}

/// The full decoder of one JSON object: what a projected value falls back to for a field
/// outside its projection.
pub type Decoder<T> = fn(&RawText) -> T;

/// What a value decoded under a projection keeps to decode the rest on first use.
#[derive(Clone, Debug)]
pub struct Partial<T> {
    /// Its JSON text.
    pub raw: RawText,
    /// The decoded fields, a bit per schema field.
    pub decoded: u32,
    /// The full decoder of the text.
    pub decode: Decoder<T>,
    /// The fully decoded value, once needed.
    pub full: OnceLock<Box<T>>,
}

impl<T> Partial<T> {
    fn full(&self) -> &T {
        self.full.get_or_init(|| Box::new((self.decode)(&self.raw)))
    }
}

/// A status condition, with Kubernetes-style aliases folded in and times in canonical RFC 3339.
/// Read it through [`Condition::text`] and [`Condition::get`]: a condition decoded under a
/// projection holds only the projected fields (the others are decoded on first read).
#[derive(Clone)]
pub struct Condition {
    /// `type`.
    pub ty: Field<Text>,
    /// `status`: "True", "False", "Unknown" (or "" when absent).
    pub status: Field<Text>,
    /// `reason`.
    pub reason: Field<Text>,
    /// `message`.
    pub message: Field<Text>,
    /// `created_time` (alias `createdTime`), canonical RFC 3339 or "".
    pub created_time: Field<Time>,
    /// `last_updated_time` (alias `lastUpdatedTime`, `lastUpdateTime`), canonical or "".
    pub last_updated_time: Field<Time>,
    /// `last_transition_time` (alias `lastTransitionTime`), canonical or "".
    pub last_transition_time: Field<Time>,
    /// `observed_generation` (alias `observedGeneration`), 0 when absent.
    pub observed_generation: Field<i64>,
    /// Set when decoded under a projection.
    pub partial: Option<Partial<Condition>>,
}

/// The empty string every absent text field shares.
pub static EMPTY: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(""));
/// The empty [`Page`] absent text fields are ranges of.
pub static EMPTY_PAGE: LazyLock<Page> = LazyLock::new(|| Arc::new(String::new()));
/// The empty map every absent `labels` shares.
pub static EMPTY_MAP: LazyLock<Arc<Map>> = LazyLock::new(|| Arc::new(Map::default()));
static ZERO_CONDITION: LazyLock<Arc<Condition>> = LazyLock::new(|| {
    let empty = || Ok(Text::empty());
    Arc::new(Condition {
        ty: empty(),
        status: empty(),
        reason: empty(),
        message: empty(),
        created_time: Ok(Time::empty()),
        last_updated_time: Ok(Time::empty()),
        last_transition_time: Ok(Time::empty()),
        observed_generation: Ok(0),
        partial: None,
    })
});

impl Condition {
    /// The zero-value condition `condition(name)` returns when no condition has that type.
    pub fn zero() -> Arc<Condition> {
        ZERO_CONDITION.clone()
    }

    /// This condition with field `f` decoded: itself, or its full decoding.
    fn holding(&self, f: ConditionField) -> &Condition {
        match &self.partial {
            Some(p) if p.decoded & (1 << f as u32) == 0 => p.full(),
            _ => self,
        }
    }

    /// A text field, times included (`None` for `observed_generation`).
    pub fn text(&self, f: ConditionField) -> Option<TextField<'_>> {
        let c = self.holding(f);
        let text = match f {
            ConditionField::Type => &c.ty,
            ConditionField::Status => &c.status,
            ConditionField::Reason => &c.reason,
            ConditionField::Message => &c.message,
            _ => return c.time(f).map(|t| t.map(|t| t.text.borrow())),
        };
        Some(text.as_ref().map(Text::borrow))
    }

    /// A time field (`None` for the others).
    pub fn time(&self, f: ConditionField) -> Option<TimeField<'_>> {
        let c = self.holding(f);
        let time = match f {
            ConditionField::CreatedTime => &c.created_time,
            ConditionField::LastUpdatedTime => &c.last_updated_time,
            ConditionField::LastTransitionTime => &c.last_transition_time,
            _ => return None,
        };
        Some(time.as_ref())
    }

    /// `observed_generation`.
    pub fn generation(&self) -> &Field<i64> {
        &self
            .holding(ConditionField::ObservedGeneration)
            .observed_generation
    }

    /// A field by name as a value.
    pub fn get(&self, name: &str) -> EvalResult {
        let Some(def) = condition_field(name) else {
            return Err(EvalError::no_such_field(name));
        };
        match self.text(def.field) {
            Some(text) => text.map(|t| t.to_value()).map_err(Clone::clone),
            None => self.generation().clone().map(Value::Int),
        }
    }
}

/// A resource's `status.conditions`, in API order, read as a slice. One condition is held
/// inline — what a resource decoded under a projection that reads one condition type usually
/// has — so that holding it costs no allocation beyond the condition's own.
#[derive(Clone, Default)]
pub struct Conditions(Held);

#[derive(Clone, Default)]
enum Held {
    #[default]
    None,
    One(Arc<Condition>),
    Many(Vec<Arc<Condition>>),
}

impl Conditions {
    /// Appends `c`.
    pub fn push(&mut self, c: Arc<Condition>) {
        self.0 = match std::mem::take(&mut self.0) {
            Held::None => Held::One(c),
            Held::One(first) => Held::Many(vec![first, c]),
            Held::Many(mut all) => {
                all.push(c);
                Held::Many(all)
            }
        };
    }
}

impl std::ops::Deref for Conditions {
    type Target = [Arc<Condition>];
    fn deref(&self) -> &[Arc<Condition>] {
        match &self.0 {
            Held::None => &[],
            Held::One(c) => std::slice::from_ref(c),
            Held::Many(all) => all,
        }
    }
}

impl FromIterator<Arc<Condition>> for Conditions {
    fn from_iter<I: IntoIterator<Item = Arc<Condition>>>(items: I) -> Conditions {
        let mut all = Conditions::default();
        for c in items {
            all.push(c);
        }
        all
    }
}

impl std::fmt::Debug for Conditions {
    /// As the slice: how the conditions are held is not part of what they are.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// A HyperFleet resource (cluster, nodepool, …) as the rules see it. Read it through its
/// accessors ([`Resource::text`], [`Resource::get`], [`Resource::condition`], …): a resource
/// decoded under a projection holds only the projected fields (and `id`, always), the others
/// are decoded from its JSON text on first read.
#[derive(Clone)]
pub struct Resource {
    /// `id`.
    pub id: Field<Text>,
    /// `kind`.
    pub kind: Field<Text>,
    /// `name`.
    pub name: Field<Text>,
    /// `href`.
    pub href: Field<Text>,
    /// `created_time`, canonical RFC 3339 or "".
    pub created_time: Field<Time>,
    /// `updated_time`, canonical RFC 3339 or "".
    pub updated_time: Field<Time>,
    /// `generation`, 0 when absent.
    pub generation: Field<i64>,
    /// `labels`, empty when absent.
    pub labels: Field<Arc<Map>>,
    /// `status.conditions`, in API order (under a projection: those of the projected types).
    pub conditions: Field<Conditions>,
    /// The resource's JSON text, for the fields read dynamically (`spec`, `references`, …),
    /// parsed only when a rule reads one of them.
    pub raw: RawText,
    /// The JSON size of a resource over [`MAX_RESOURCE_BYTES`], which was not decoded.
    pub oversize: Option<usize>,
    /// Set when decoded under a projection.
    pub partial: Option<(Arc<Projection>, Partial<Resource>)>,
}

impl Resource {
    /// The JSON size of a resource over [`MAX_RESOURCE_BYTES`], which was not decoded and is to
    /// be skipped with [`TOO_LARGE_REASON`]; `None` for every other resource.
    pub fn too_large(&self) -> Option<usize> {
        self.oversize
    }

    /// The projection this resource was decoded under (`None`: decoded whole).
    pub fn projection(&self) -> Option<&Projection> {
        self.partial.as_ref().map(|(p, _)| &**p)
    }

    /// This resource with field `f` decoded: itself, or its full decoding.
    fn holding(&self, f: ResourceField) -> &Resource {
        match &self.partial {
            Some((p, partial)) if !p.has_field(f) => partial.full(),
            _ => self,
        }
    }

    /// This resource with every condition decoded whole.
    fn with_all_conditions(&self) -> &Resource {
        match &self.partial {
            Some((p, partial)) if !p.has_all_conditions() => partial.full(),
            _ => self,
        }
    }

    /// A text field, times included (`None` for a field that is not a decoded string).
    pub fn text(&self, f: ResourceField) -> Option<TextField<'_>> {
        use ResourceField as F;
        let r = self.holding(f);
        let text = match f {
            F::Id => &r.id,
            F::Kind => &r.kind,
            F::Name => &r.name,
            F::Href => &r.href,
            _ => return r.time(f).map(|t| t.map(|t| t.text.borrow())),
        };
        Some(text.as_ref().map(Text::borrow))
    }

    /// A time field (`None` for the others).
    pub fn time(&self, f: ResourceField) -> Option<TimeField<'_>> {
        let r = self.holding(f);
        match f {
            ResourceField::CreatedTime => Some(r.created_time.as_ref()),
            ResourceField::UpdatedTime => Some(r.updated_time.as_ref()),
            _ => None,
        }
    }

    /// `generation`.
    pub fn generation(&self) -> &Field<i64> {
        &self.holding(ResourceField::Generation).generation
    }

    /// `labels`.
    pub fn labels(&self) -> &Field<Arc<Map>> {
        &self.holding(ResourceField::Labels).labels
    }

    /// The resource's JSON.
    pub fn json(&self) -> Json {
        serde_json::from_str(self.raw.get()).unwrap_or(Json::Null)
    }

    /// One top-level field of the JSON, parsed on demand (`None` when absent or null).
    pub fn json_field(&self, name: &str) -> Option<Json> {
        let fields: HashMap<String, &RawValue> = serde_json::from_str(self.raw.get()).ok()?;
        let value: Json = serde_json::from_str(fields.get(name)?.get()).ok()?;
        (!value.is_null()).then_some(value)
    }

    /// `condition(name)`: the last condition whose type is `name`, else the zero condition.
    pub fn condition(&self, name: &str) -> Field<Arc<Condition>> {
        let r = match &self.partial {
            Some((p, partial)) if !p.has_condition(name) => partial.full(),
            _ => self,
        };
        let conditions = r.conditions.as_ref().map_err(Clone::clone)?;
        Ok(conditions
            .iter()
            .rev()
            .find(|c| matches!(&c.ty, Ok(t) if t.as_str() == name))
            .cloned()
            .unwrap_or_else(Condition::zero))
    }

    /// A field by name as a value: the typed fields decoded, anything else from the JSON
    /// (`no such key` when absent).
    pub fn get(&self, name: &str) -> EvalResult {
        use ResourceField as F;
        let Some(def) = resource_field(name).filter(|d| d.ty.is_decoded()) else {
            return match self.json_field(name) {
                Some(v) => Ok(json_to_value(&v)),
                None => Err(EvalError::no_such_key(name)),
            };
        };
        if let Some(text) = self.text(def.field) {
            return text.map(|t| t.to_value()).map_err(Clone::clone);
        }
        match def.field {
            F::Generation => self.generation().clone().map(Value::Int),
            F::Labels => self.labels().clone().map(Value::Map),
            _ => {
                let conditions = self.with_all_conditions().conditions.clone()?;
                let present = self
                    .json_field("status")
                    .is_some_and(|s| s.get("conditions").is_some_and(|c| !c.is_null()));
                let entries = if present {
                    let list: Arc<[Value]> =
                        conditions.iter().cloned().map(Value::Condition).collect();
                    vec![(Value::string("conditions"), Value::List(list))]
                } else {
                    Vec::new()
                };
                Ok(Value::Map(Arc::new(Map::from_entries(entries))))
            }
        }
    }

    /// Whether `has(resource.<name>)` holds: the JSON has the key with a non-null value.
    pub fn has(&self, name: &str) -> bool {
        self.json_field(name).is_some()
    }

    /// The resource's fields as a CEL map (for `resource` used as a whole value).
    pub fn to_map(&self) -> EvalResult {
        let json = self.json();
        let Some(obj) = json.as_object() else {
            return Err(EvalError::new(
                ErrorKind::BadResource,
                "resource is not a JSON object",
            ));
        };
        let mut entries = Vec::with_capacity(obj.len());
        for key in obj.keys() {
            entries.push((Value::string(key), self.get(key)?));
        }
        Ok(Value::Map(Arc::new(Map::from_entries(entries))))
    }
}

/// Shows what reading each field gives (the same for a projected and a complete decoding).
impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Condition");
        for def in &CONDITION_SCHEMA {
            match self.text(def.field) {
                Some(text) => d.field(def.name, &text),
                None => d.field(def.name, self.generation()),
            };
        }
        d.finish()
    }
}

/// Shows what reading each decoded field gives, and the JSON text (the same for a projected and
/// a complete decoding).
impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Resource");
        for def in RESOURCE_SCHEMA.iter().filter(|d| d.ty.is_text()) {
            if let Some(text) = self.text(def.field) {
                d.field(def.name, &text);
            }
        }
        d.field("generation", self.generation())
            .field("labels", self.labels())
            .field("conditions", &self.with_all_conditions().conditions)
            .field("raw", &self.raw.get())
            .field("too_large", &self.oversize)
            .finish()
    }
}

impl std::fmt::Debug for RawText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// Converts JSON to a CEL value: integers that fit become `int`, other numbers `double`.
pub fn json_to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::string(s),
        Json::Array(items) => Value::List(items.iter().map(json_to_value).collect()),
        Json::Object(obj) => {
            let entries = obj
                .iter()
                .map(|(k, v)| (Value::string(k), json_to_value(v)))
                .collect();
            Value::Map(Arc::new(Map::from_entries(entries)))
        }
    }
}

// ---- what a program reads ----

impl Projection {
    /// Adds what `e` reads of the resource: `resource.<field>`, `condition("<constant>")` and
    /// `condition("<constant>").<field>` are named; `resource` used as a whole value needs
    /// everything, `condition(<computed>)` every condition. `resource[<computed>]` and
    /// `has(resource.<field>)` add nothing: they read through the resource's accessors, which
    /// decode what is outside the projection from the JSON text. A projection that misses a
    /// read changes only the work, never a result.
    pub fn add_reads(&mut self, e: &crate::cel::typed::TExpr) {
        use crate::cel::typed::{Builtin, TExprKind as K, Var};
        let constant_condition = |e: &crate::cel::typed::TExpr| match &e.kind {
            K::Call(Builtin::Condition, args) => match args.as_slice() {
                [arg] => match &arg.kind {
                    K::Const(Value::String(name)) => Some(Some(name.clone())),
                    _ => Some(None),
                },
                _ => None,
            },
            _ => None,
        };
        match &e.kind {
            K::Var(Var::Resource) => *self = Projection::all(),
            // `resource[k]`: one field by a computed name, read through the resource's
            // accessors (decoded from the JSON text when outside the projection).
            K::Index(target, key) if matches!(target.kind, K::Var(Var::Resource)) => {
                self.add_reads(key)
            }
            K::Select(target, field) | K::Has(target, field)
                if matches!(target.kind, K::Var(Var::Resource)) =>
            {
                if matches!(e.kind, K::Select(..))
                    && let Some(def) = resource_field(&field.name)
                {
                    self.add_field(def.field);
                }
            }
            K::Select(target, field) | K::Has(target, field)
                if constant_condition(target).is_some() =>
            {
                let name = constant_condition(target).flatten();
                self.add_condition(name.as_deref());
                self.add_condition_field(condition_field(&field.name).map(|d| d.field));
                // The argument, when computed, reads too.
                self.add_children(target);
            }
            K::Call(Builtin::Condition, _) => {
                let name = constant_condition(e).flatten();
                self.add_condition(name.as_deref());
                self.add_condition_field(None);
                self.add_children(e);
            }
            _ => self.add_children(e),
        }
    }

    fn add_children(&mut self, e: &crate::cel::typed::TExpr) {
        e.children().for_each(|c| self.add_reads(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However many conditions are held (none, one inline, several), pushed one by one or
    /// collected, they read and print as the same slice a `Vec` would hold.
    #[test]
    fn conditions_read_as_their_slice() {
        let all: Vec<Arc<Condition>> = (0..4)
            .map(|i| {
                let mut c = (*Condition::zero()).clone();
                c.observed_generation = Ok(i);
                Arc::new(c)
            })
            .collect();
        for n in 0..=all.len() {
            let mut pushed = Conditions::default();
            for c in &all[..n] {
                pushed.push(c.clone());
            }
            let collected: Conditions = all[..n].iter().cloned().collect();
            for held in [&pushed, &collected] {
                assert_eq!(held.len(), n);
                assert!(held.iter().zip(&all).all(|(a, b)| Arc::ptr_eq(a, b)));
                assert_eq!(format!("{held:?}"), format!("{:?}", &all[..n]));
            }
        }
    }

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

    #[test]
    fn texts_are_ranges_of_their_source_or_copies() {
        let page: Page = Arc::new(r#"{"a":"True","b":"x\u0041"}"#.to_string());
        let inside = Text::within(&page, &page[6..10]);
        let range = |t: &Text| match &t.0 {
            Repr::Range { src, start, .. } => Some((src.clone(), *start)),
            Repr::Own(_) => None,
        };
        assert_eq!(inside.as_str(), "True");
        assert!(range(&inside).is_some_and(|(src, start)| Arc::ptr_eq(&src, &page) && start == 6));
        // A status word read as a value is the shared one; another range is copied.
        assert!(Arc::ptr_eq(&inside.borrow().to_arc(), &WORDS[0]));
        let b = Text::range(&page, 17, 24).map(|t| t.borrow().to_arc());
        assert_eq!(b.as_deref(), Some("x\\u0041"));
        // Text from elsewhere is copied; a whole text is shared as it is.
        let other = String::from("True");
        let copied = Text::within(&page, &other);
        assert!(range(&copied).is_none());
        assert_eq!(copied.as_str(), "True");
        let whole: Arc<str> = Arc::from("x");
        assert!(Arc::ptr_eq(&TextRef::whole(&whole).to_arc(), &whole));
        // Not on a character boundary: no range.
        let wide: Page = Arc::new("é".to_string());
        assert!(Text::range(&wide, 0, 1).is_none());
        assert!(Text::range(&wide, 0, 3).is_none());
    }

    #[test]
    fn each_field_reads_its_own_value() {
        // A condition whose every text field holds its own name: reordering the schema or the
        // accessors' matches inconsistently reads the wrong field.
        let own = |f: ConditionField| Ok(Text::owned(f.def().name));
        let own_time = |f: ConditionField| {
            Ok(Time {
                text: Text::owned(f.def().name),
                at: None,
            })
        };
        let c = Condition {
            ty: own(ConditionField::Type),
            status: own(ConditionField::Status),
            reason: own(ConditionField::Reason),
            message: own(ConditionField::Message),
            created_time: own_time(ConditionField::CreatedTime),
            last_updated_time: own_time(ConditionField::LastUpdatedTime),
            last_transition_time: own_time(ConditionField::LastTransitionTime),
            observed_generation: Ok(7),
            partial: None,
        };
        for d in &CONDITION_SCHEMA {
            match d.ty {
                FieldType::Int => assert!(matches!(c.get(d.name), Ok(Value::Int(7)))),
                _ => assert!(
                    matches!(c.get(d.name), Ok(Value::String(s)) if *s == *d.name),
                    "{}",
                    d.name
                ),
            }
        }
        let text: Page = Arc::new("{}".to_string());
        let own = |f: ResourceField| Ok(Text::owned(f.def().name));
        let own_time = |f: ResourceField| {
            Ok(Time {
                text: Text::owned(f.def().name),
                at: None,
            })
        };
        let r = Resource {
            id: Ok(Text::owned("id")),
            kind: own(ResourceField::Kind),
            name: own(ResourceField::Name),
            href: own(ResourceField::Href),
            created_time: own_time(ResourceField::CreatedTime),
            updated_time: own_time(ResourceField::UpdatedTime),
            generation: Ok(3),
            labels: Ok(EMPTY_MAP.clone()),
            conditions: Ok(Conditions::default()),
            raw: RawText::whole(text),
            oversize: None,
            partial: None,
        };
        for d in RESOURCE_SCHEMA.iter().filter(|d| d.ty.is_text()) {
            assert!(
                matches!(r.get(d.name), Ok(Value::String(s)) if *s == *d.name),
                "{}",
                d.name
            );
        }
    }
}
