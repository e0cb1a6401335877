//! The records rules evaluate on: [`Resource`] and [`Condition`], their fields stored by the
//! schema (texts, times, integers, each array indexed by the row's slot), built in one place
//! ([`Resource::new`], [`Resource::projected`], …, from the [`ResourceFields`] a decoder fills)
//! and read only through accessors.
//!
//! Invariant: a record decoded under a [`Projection`] answers every read exactly as a complete
//! decoding does. A field outside the projection holds a placeholder no accessor returns: the
//! accessor decodes the record whole from its JSON text on first such read (and
//! [`Resource::read_outside_projection`] tells that it happened). The fields the daemon reads
//! itself ([`Resource::id`], [`Resource::kind`]) are in every projection by construction.
//!
//! A resource over [`MAX_RESOURCE_BYTES`] of JSON is not decoded at all (its memory would grow
//! with its size, several times over): only its id is read, every other field is an error, and
//! [`Resource::too_large`] tells the daemon to skip it with [`TOO_LARGE_REASON`].

use super::projection::Projection;
use super::schema::{
    CONDITION_INTS, CONDITION_SCHEMA, CONDITION_TEXTS, CONDITION_TIMES, ConditionField, FieldType,
    RESOURCE_INTS, RESOURCE_SCHEMA, RESOURCE_TEXTS, RESOURCE_TIMES, ResourceField, condition_field,
    resource_field,
};
use super::text::{JsonText, Text, TextRef, Time};
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

/// A text field as its accessor reads it.
pub type TextField<'a> = Result<TextRef<'a>, &'a EvalError>;

/// A time field as its accessor reads it.
pub type TimeField<'a> = Result<&'a Time, &'a EvalError>;

/// The empty map every absent `labels` shares.
pub static EMPTY_MAP: LazyLock<Arc<Map>> = LazyLock::new(|| Arc::new(Map::default()));

/// The complete decoder of one JSON object: what a projected record falls back to for a field
/// outside its projection (the decoders live outside the compiler, so it is handed in).
pub type Decoder<T> = fn(&JsonText) -> T;

/// What a record decoded under a projection keeps to decode the rest on first use.
#[derive(Clone)]
struct Partial<T> {
    /// Its JSON text.
    raw: JsonText,
    /// The complete decoder of the text.
    decode: Decoder<T>,
    /// The complete decoding, once needed.
    full: OnceLock<Box<T>>,
}

impl<T> Partial<T> {
    fn new(raw: JsonText, decode: Decoder<T>) -> Partial<T> {
        Partial {
            raw,
            decode,
            full: OnceLock::new(),
        }
    }

    fn full(&self) -> &T {
        self.full.get_or_init(|| Box::new((self.decode)(&self.raw)))
    }
}

// ---- conditions ----

/// The fields of a condition as a decoder fills them, each array indexed by the schema row's
/// `slot` ([`crate::cel::host::FieldDef::slot`]); [`Condition::new`] takes them.
#[derive(Clone)]
pub struct ConditionFields {
    /// The string fields (`type`, `status`, `reason`, `message`).
    pub texts: [Field<Text>; CONDITION_TEXTS],
    /// The time fields, canonical RFC 3339 or "".
    pub times: [Field<Time>; CONDITION_TIMES],
    /// The integer fields (`observed_generation`).
    pub ints: [Field<i64>; CONDITION_INTS],
}

impl ConditionFields {
    /// Every field absent: "" and 0, as the zero condition.
    #[inline]
    pub fn absent() -> ConditionFields {
        ConditionFields {
            texts: std::array::from_fn(|_| Ok(Text::empty())),
            times: std::array::from_fn(|_| Ok(Time::empty())),
            ints: [Ok(0); CONDITION_INTS],
        }
    }
}

/// A status condition, with Kubernetes-style aliases folded in and times in canonical RFC 3339.
/// Read through [`Condition::text`], [`Condition::time`], [`Condition::generation`] and
/// [`Condition::get`].
#[derive(Clone)]
pub struct Condition {
    fields: ConditionFields,
    /// Set when decoded under a projection that leaves out some of its fields: a bit per
    /// [`ConditionField`] decoded, and the rest.
    partial: Option<(u32, Partial<Condition>)>,
}

static ZERO_CONDITION: LazyLock<Arc<Condition>> =
    LazyLock::new(|| Arc::new(Condition::new(ConditionFields::absent())));

const TYPE_SLOT: usize = ConditionField::Type.def().slot;

impl Condition {
    /// A condition decoded whole.
    #[inline]
    pub fn new(fields: ConditionFields) -> Condition {
        Condition {
            fields,
            partial: None,
        }
    }

    /// A condition of which `fields` holds the condition fields of `projection` (and `type`,
    /// always) decoded from `raw`; the others are decoded by `decode` on first read.
    #[inline]
    pub fn projected(
        fields: ConditionFields,
        raw: JsonText,
        projection: &Projection,
        decode: Decoder<Condition>,
    ) -> Condition {
        if projection.has_every_condition_field() {
            return Condition::new(fields);
        }
        Condition {
            fields,
            partial: Some((projection.condition_bits(), Partial::new(raw, decode))),
        }
    }

    /// The zero-value condition `condition(name)` returns when no condition has that type.
    pub fn zero() -> Arc<Condition> {
        ZERO_CONDITION.clone()
    }

    /// The fields with `f` decoded: its own, or those of its complete decoding.
    fn holding(&self, f: ConditionField) -> &ConditionFields {
        match &self.partial {
            Some((decoded, p)) if decoded & (1 << f as u32) == 0 => &p.full().fields,
            _ => &self.fields,
        }
    }

    /// `type` (decoded in every condition).
    fn ty(&self) -> Result<&str, &EvalError> {
        self.fields.texts[TYPE_SLOT].as_ref().map(Text::as_str)
    }

    /// A text field, times included (`None` for a field that is neither).
    pub fn text(&self, f: ConditionField) -> Option<TextField<'_>> {
        let def = f.def();
        let fields = self.holding(f);
        match def.ty {
            FieldType::Str => Some(fields.texts[def.slot].as_ref().map(Text::borrow)),
            FieldType::Time => Some(fields.times[def.slot].as_ref().map(|t| t.text.borrow())),
            _ => None,
        }
    }

    /// A time field (`None` for the others).
    pub fn time(&self, f: ConditionField) -> Option<TimeField<'_>> {
        let def = f.def();
        (def.ty == FieldType::Time).then(|| self.holding(f).times[def.slot].as_ref())
    }

    /// An integer field (`None` for the others).
    pub fn int(&self, f: ConditionField) -> Option<&Field<i64>> {
        let def = f.def();
        (def.ty == FieldType::Int).then(|| &self.holding(f).ints[def.slot])
    }

    /// `observed_generation`.
    pub fn generation(&self) -> &Field<i64> {
        const F: ConditionField = ConditionField::ObservedGeneration;
        &self.holding(F).ints[F.def().slot]
    }

    /// A field by name as a value.
    pub fn get(&self, name: &str) -> EvalResult {
        let Some(def) = condition_field(name) else {
            return Err(EvalError::no_such_field(name));
        };
        if let Some(text) = self.text(def.field) {
            return text.map(|t| t.to_value()).map_err(Clone::clone);
        }
        match self.int(def.field) {
            Some(int) => int.clone().map(Value::Int),
            None => Err(EvalError::no_such_field(name)),
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

// ---- resources ----

/// The decoded fields of a resource as a decoder fills them, each array indexed by the schema
/// row's `slot` ([`crate::cel::host::FieldDef::slot`]); [`Resource::new`] takes them.
#[derive(Clone)]
pub struct ResourceFields {
    /// The string fields (`href`, `id`, `kind`, `name`).
    pub texts: [Field<Text>; RESOURCE_TEXTS],
    /// The time fields, canonical RFC 3339 or "".
    pub times: [Field<Time>; RESOURCE_TIMES],
    /// The integer fields (`generation`).
    pub ints: [Field<i64>; RESOURCE_INTS],
    /// `labels`, empty when absent.
    pub labels: Field<Arc<Map>>,
    /// `status.conditions`, in API order (under a projection: those of the projected types).
    pub conditions: Field<Conditions>,
}

impl ResourceFields {
    /// Every field absent: "", 0, no labels, no conditions.
    #[inline]
    pub fn absent() -> ResourceFields {
        ResourceFields {
            texts: std::array::from_fn(|_| Ok(Text::empty())),
            times: std::array::from_fn(|_| Ok(Time::empty())),
            ints: [Ok(0); RESOURCE_INTS],
            labels: Ok(EMPTY_MAP.clone()),
            conditions: Ok(Conditions::default()),
        }
    }

    /// Every field the error `err`.
    pub fn failed(err: &EvalError) -> ResourceFields {
        ResourceFields {
            texts: std::array::from_fn(|_| Err(err.clone())),
            times: std::array::from_fn(|_| Err(err.clone())),
            ints: std::array::from_fn(|_| Err(err.clone())),
            labels: Err(err.clone()),
            conditions: Err(err.clone()),
        }
    }
}

/// A HyperFleet resource (cluster, nodepool, …) as the rules and the daemon see it, read through
/// its accessors ([`Resource::id`], [`Resource::text`], [`Resource::get`],
/// [`Resource::condition`], …).
#[derive(Clone)]
pub struct Resource {
    fields: ResourceFields,
    /// The resource's JSON text, for the fields read dynamically (`spec`, `references`, …),
    /// parsed only when a rule reads one of them.
    raw: JsonText,
    /// The JSON size of a resource over [`MAX_RESOURCE_BYTES`], which was not decoded.
    oversize: Option<usize>,
    /// Set when decoded under a projection that is not everything.
    partial: Option<(Arc<Projection>, Partial<Resource>)>,
    /// The fields read from `raw`, each decoded once (see [`Dynamic`]).
    dynamic: Dynamic,
}

/// The top-level fields of a resource's JSON text as reads by name see them: the text is scanned
/// once, on the first such read, for where each field is, and a field's value is made once, on
/// its first read, and shared by every later one. A rule that reads `resource.spec.limit`
/// inside a macro over `resource.spec.items` so costs one decoding of `spec`, not one per
/// element (which would make one decision's memory and time grow with the square of the
/// resource's size).
#[derive(Clone, Default)]
struct Dynamic(OnceLock<Box<[DynamicField]>>);

/// One top-level field of the JSON text: its name, where its text is, and its value once read.
#[derive(Clone)]
struct DynamicField {
    name: Box<str>,
    text: std::ops::Range<usize>,
    value: OnceLock<Option<Value>>,
}

impl Dynamic {
    /// The field `name` of `raw` (the resource's text): `None` when absent.
    fn field<'a>(&'a self, raw: &str, name: &str) -> Option<&'a DynamicField> {
        let fields = self.0.get_or_init(|| Self::scan(raw));
        fields.iter().find(|f| &*f.name == name)
    }

    /// Where each top-level field of `raw` is (none when `raw` is not an object).
    fn scan(raw: &str) -> Box<[DynamicField]> {
        // Of equal keys the last counts, as in Go's and serde_json's maps.
        let Ok(fields) = serde_json::from_str::<HashMap<String, &RawValue>>(raw) else {
            return Box::default();
        };
        let base = raw.as_ptr() as usize;
        fields
            .into_iter()
            .map(|(name, value)| {
                let start = value.get().as_ptr() as usize - base;
                DynamicField {
                    name: name.into(),
                    text: start..start + value.get().len(),
                    value: OnceLock::new(),
                }
            })
            .collect()
    }
}

impl DynamicField {
    /// Whether the field is JSON `null`.
    fn is_null(&self, raw: &str) -> bool {
        raw.get(self.text.clone()) == Some("null")
    }

    /// The field's value made by `make` from its text on first use (`None`: null or not JSON).
    fn value(&self, raw: &str, make: impl FnOnce(&str) -> Option<Value>) -> Option<&Value> {
        self.value
            .get_or_init(|| make(raw.get(self.text.clone()).unwrap_or("null")))
            .as_ref()
    }
}

const ID_SLOT: usize = ResourceField::Id.def().slot;
const KIND_SLOT: usize = ResourceField::Kind.def().slot;

impl Resource {
    /// A resource decoded whole from `raw`.
    #[inline]
    pub fn new(fields: ResourceFields, raw: JsonText) -> Resource {
        Resource {
            fields,
            raw,
            oversize: None,
            partial: None,
            dynamic: Dynamic::default(),
        }
    }

    /// A resource of which `fields` holds the fields of `projection` decoded from `raw` (the
    /// conditions: those of its condition types); everything else is decoded by `decode` on
    /// first read.
    #[inline]
    pub fn projected(
        fields: ResourceFields,
        raw: JsonText,
        projection: &Arc<Projection>,
        decode: Decoder<Resource>,
    ) -> Resource {
        let partial =
            (!projection.is_all()).then(|| (projection.clone(), Partial::new(raw.clone(), decode)));
        Resource {
            fields,
            raw,
            oversize: None,
            partial,
            dynamic: Dynamic::default(),
        }
    }

    /// A resource of `size` bytes of JSON, over [`MAX_RESOURCE_BYTES`]: not decoded, its `id`
    /// as read (or an error), every other field an error naming the size.
    pub fn oversized(id: Option<Text>, size: usize) -> Resource {
        let err = EvalError::new(
            ErrorKind::BadResource,
            format!(
                "resource is {size} bytes of JSON, more than the limit of {MAX_RESOURCE_BYTES}"
            ),
        );
        let mut fields = ResourceFields::failed(&err);
        if let Some(id) = id {
            fields.texts[ID_SLOT] = Ok(id);
        }
        Resource {
            fields,
            raw: JsonText::owned("null"),
            oversize: Some(size),
            partial: None,
            dynamic: Dynamic::default(),
        }
    }

    /// The JSON size of a resource over [`MAX_RESOURCE_BYTES`], which was not decoded and is to
    /// be skipped with [`TOO_LARGE_REASON`]; `None` for every other resource.
    pub fn too_large(&self) -> Option<usize> {
        self.oversize
    }

    /// The resource's JSON text ("null" for one too large to decode).
    pub fn json_text(&self) -> &str {
        self.raw.get()
    }

    /// The projection this resource was decoded under (`None`: decoded whole).
    pub fn projection(&self) -> Option<&Projection> {
        self.partial.as_ref().map(|(p, _)| &**p)
    }

    /// Whether a read outside its projection made this resource decode whole (what no read
    /// of the daemon itself, and no static read of its rules, ever does).
    pub fn read_outside_projection(&self) -> bool {
        self.partial
            .as_ref()
            .is_some_and(|(_, p)| p.full.get().is_some())
    }

    /// `id` (in every projection: [`Projection::DAEMON_READS`]).
    pub fn id(&self) -> TextField<'_> {
        self.fields.texts[ID_SLOT].as_ref().map(Text::borrow)
    }

    /// `id` as its shared text (a share of the page, no copy); "" when it is not a string.
    pub fn id_text(&self) -> Text {
        self.fields.texts[ID_SLOT]
            .clone()
            .unwrap_or_else(|_| Text::empty())
    }

    /// `kind` (in every projection: [`Projection::DAEMON_READS`]).
    pub fn kind(&self) -> TextField<'_> {
        self.fields.texts[KIND_SLOT].as_ref().map(Text::borrow)
    }

    /// The fields with `f` decoded: its own, or those of its complete decoding.
    fn holding(&self, f: ResourceField) -> &ResourceFields {
        match &self.partial {
            Some((p, partial)) if !p.has_field(f) => &partial.full().fields,
            _ => &self.fields,
        }
    }

    /// The fields with every condition decoded whole.
    fn with_all_conditions(&self) -> &ResourceFields {
        match &self.partial {
            Some((p, partial)) if !p.has_all_conditions() => &partial.full().fields,
            _ => &self.fields,
        }
    }

    /// A text field, times included (`None` for a field that is not a decoded string).
    pub fn text(&self, f: ResourceField) -> Option<TextField<'_>> {
        let def = f.def();
        match def.ty {
            FieldType::Str => Some(self.holding(f).texts[def.slot].as_ref().map(Text::borrow)),
            FieldType::Time => Some(
                self.holding(f).times[def.slot]
                    .as_ref()
                    .map(|t| t.text.borrow()),
            ),
            _ => None,
        }
    }

    /// A time field (`None` for the others).
    pub fn time(&self, f: ResourceField) -> Option<TimeField<'_>> {
        let def = f.def();
        (def.ty == FieldType::Time).then(|| self.holding(f).times[def.slot].as_ref())
    }

    /// An integer field (`None` for the others).
    pub fn int(&self, f: ResourceField) -> Option<&Field<i64>> {
        let def = f.def();
        (def.ty == FieldType::Int).then(|| &self.holding(f).ints[def.slot])
    }

    /// `generation`.
    pub fn generation(&self) -> &Field<i64> {
        const F: ResourceField = ResourceField::Generation;
        &self.holding(F).ints[F.def().slot]
    }

    /// `labels`.
    pub fn labels(&self) -> &Field<Arc<Map>> {
        &self.holding(ResourceField::Labels).labels
    }

    /// `status.conditions`, every one decoded whole.
    pub fn conditions(&self) -> &Field<Conditions> {
        &self.with_all_conditions().conditions
    }

    /// The resource's JSON.
    pub fn json(&self) -> Json {
        serde_json::from_str(self.raw.get()).unwrap_or(Json::Null)
    }

    /// One top-level field of the JSON (`None` when absent or null).
    pub fn json_field(&self, name: &str) -> Option<Json> {
        let raw = self.raw.get();
        let field = self.dynamic.field(raw, name)?;
        let value: Json = serde_json::from_str(raw.get(field.text.clone())?).ok()?;
        (!value.is_null()).then_some(value)
    }

    /// The value of the field `name` not decoded into a slot, made from the JSON text on its
    /// first read and shared by every later one (`None` when absent or null).
    fn dynamic_value(&self, name: &str) -> Option<&Value> {
        let raw = self.raw.get();
        self.dynamic.field(raw, name)?.value(raw, |text| {
            let json: Json = serde_json::from_str(text).ok()?;
            (!json.is_null()).then(|| json_to_value(&json))
        })
    }

    /// `condition(name)`: the last condition whose type is `name`, else the zero condition.
    pub fn condition(&self, name: &str) -> Field<Arc<Condition>> {
        let fields = match &self.partial {
            Some((p, partial)) if !p.has_condition(name) => &partial.full().fields,
            _ => &self.fields,
        };
        let conditions = fields.conditions.as_ref().map_err(Clone::clone)?;
        Ok(conditions
            .iter()
            .rev()
            .find(|c| c.ty() == Ok(name))
            .cloned()
            .unwrap_or_else(Condition::zero))
    }

    /// A field by name as a value: the typed fields decoded, anything else from the JSON
    /// (`no such key` when absent).
    pub fn get(&self, name: &str) -> EvalResult {
        let Some(def) = resource_field(name).filter(|d| d.ty.is_decoded()) else {
            return match self.dynamic_value(name) {
                Some(v) => Ok(v.clone()),
                None => Err(EvalError::no_such_key(name)),
            };
        };
        if let Some(text) = self.text(def.field) {
            return text.map(|t| t.to_value()).map_err(Clone::clone);
        }
        if let Some(int) = self.int(def.field) {
            return int.clone().map(Value::Int);
        }
        match def.ty {
            FieldType::Labels => self.labels().clone().map(Value::Map),
            _ => self.status(),
        }
    }

    /// `status` as a value: `{conditions: [...]}` when the JSON has conditions, else `{}`.
    fn status(&self) -> EvalResult {
        let conditions = self.conditions().as_ref().map_err(Clone::clone)?;
        let raw = self.raw.get();
        let Some(field) = self.dynamic.field(raw, "status") else {
            return Ok(Value::Map(EMPTY_MAP.clone()));
        };
        let value = field.value(raw, |text| {
            let status: HashMap<String, &RawValue> = serde_json::from_str(text).ok()?;
            let present = status.get("conditions").is_some_and(|c| c.get() != "null");
            let entries = if present {
                let list: Arc<[Value]> = conditions.iter().cloned().map(Value::Condition).collect();
                vec![(Value::string("conditions"), Value::List(list))]
            } else {
                Vec::new()
            };
            Some(Value::Map(Arc::new(Map::from_entries(entries))))
        });
        Ok(value
            .cloned()
            .unwrap_or_else(|| Value::Map(EMPTY_MAP.clone())))
    }

    /// Whether `has(resource.<name>)` holds: the JSON has the key with a non-null value.
    pub fn has(&self, name: &str) -> bool {
        let raw = self.raw.get();
        self.dynamic
            .field(raw, name)
            .is_some_and(|f| !f.is_null(raw))
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
            match (self.text(def.field), self.int(def.field)) {
                (Some(text), _) => d.field(def.name, &text),
                (None, Some(int)) => d.field(def.name, int),
                (None, None) => &mut d,
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
        for def in &RESOURCE_SCHEMA {
            match (self.text(def.field), self.int(def.field)) {
                (Some(text), _) => d.field(def.name, &text),
                (None, Some(int)) => d.field(def.name, int),
                (None, None) => &mut d,
            };
        }
        d.field("labels", self.labels())
            .field("conditions", self.conditions())
            .field("raw", &self.raw.get())
            .field("too_large", &self.oversize)
            .finish()
    }
}

/// Converts untyped JSON to a CEL value as cel-go sees what Go's `encoding/json` decodes into
/// `interface{}` (the Go sentinel's `spec` and `metadata`): every number a `double`.
pub fn json_to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Double(n.as_f64().unwrap_or(f64::NAN)),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// However many conditions are held (none, one inline, several), pushed one by one or
    /// collected, they read and print as the same slice a `Vec` would hold.
    #[test]
    fn conditions_read_as_their_slice() {
        let all: Vec<Arc<Condition>> = (0..4)
            .map(|i| {
                let mut fields = ConditionFields::absent();
                fields.ints[0] = Ok(i);
                Arc::new(Condition::new(fields))
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

    /// A record whose every field holds its own name (its number for integers): a slot
    /// computed or read inconsistently with the schema reads another field's value.
    #[test]
    fn each_field_reads_its_own_value() {
        let own = |name: &str| Ok(Text::owned(name));
        let own_time = |name: &str| {
            Ok(Time {
                text: Text::owned(name),
                at: None,
            })
        };
        let mut c = ConditionFields::absent();
        for d in &CONDITION_SCHEMA {
            match d.ty {
                FieldType::Str => c.texts[d.slot] = own(d.name),
                FieldType::Time => c.times[d.slot] = own_time(d.name),
                FieldType::Int => c.ints[d.slot] = Ok(d.field as i64 + 100),
                _ => {}
            }
        }
        let c = Condition::new(c);
        for d in &CONDITION_SCHEMA {
            match d.ty {
                FieldType::Int => {
                    assert!(
                        matches!(c.get(d.name), Ok(Value::Int(n)) if n == d.field as i64 + 100),
                        "{}",
                        d.name
                    )
                }
                _ => assert!(
                    matches!(c.get(d.name), Ok(Value::String(s)) if *s == *d.name),
                    "{}",
                    d.name
                ),
            }
        }
        let mut r = ResourceFields::absent();
        for d in &RESOURCE_SCHEMA {
            match d.ty {
                FieldType::Str => r.texts[d.slot] = own(d.name),
                FieldType::Time => r.times[d.slot] = own_time(d.name),
                FieldType::Int => r.ints[d.slot] = Ok(d.field as i64 + 100),
                _ => {}
            }
        }
        let r = Resource::new(r, JsonText::owned("{}"));
        for d in &RESOURCE_SCHEMA {
            match d.ty {
                FieldType::Int => {
                    assert!(
                        matches!(r.get(d.name), Ok(Value::Int(n)) if n == d.field as i64 + 100),
                        "{}",
                        d.name
                    )
                }
                FieldType::Str | FieldType::Time => assert!(
                    matches!(r.get(d.name), Ok(Value::String(s)) if *s == *d.name),
                    "{}",
                    d.name
                ),
                _ => {}
            }
        }
        assert_eq!(r.id().map(|t| t.as_str()), Ok("id"));
        assert_eq!(r.kind().map(|t| t.as_str()), Ok("kind"));
    }
}
