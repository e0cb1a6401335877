//! One pass over a list page's bytes under a [`Projection`]: the envelope and every item are
//! scanned once, the projected fields decoded from slices of the page, every other value
//! skipped (validated, not built, nothing allocated). What this fast path is unsure of (a wrong
//! type, a duplicate key, an escape in a key, deep nesting, a number out of range) it hands to
//! the complete decoder: the whole page when the envelope is unusual (so errors stay exactly
//! those of serde), one item when only that item is.
//!
//! A projected resource keeps its text as a range of the page and decodes whatever it is asked
//! for outside the projection on first use ([`Resource::projected`]): the meaning of every
//! access is that of the complete decoder. Under [`Projection::all`] this pass is the complete
//! decoder's first choice ([`scan_resource`], [`scan_condition`]).
//!
//! Fields are placed by the schema: a key is looked up in the schema's names and aliases and
//! its value stored at the row's slot of its type's array, never at a position of its own.
//!
//! On the way the pass notes, at the cost of a bit per key, whether every item holds every
//! field the projection decodes (`null` counts): an answer to `fields` that does not is one
//! the API left a field out of ([`super::Fields`] says which; an item the complete decoder
//! takes counts as not known to hold them).

use super::json::{
    Skip, blank_end, literal_end, number_end, same_bytes, skip_end, special_at, string_close,
    string_end, token,
};
use super::{complete_condition, complete_resource};
use crate::cel::host::schema::{
    CONDITION_INTS, CONDITION_TEXTS, CONDITION_TIME_NAMES, CONDITION_TIMES, RESOURCE_TEXTS,
    RESOURCE_TIME_NAMES, RESOURCE_TIMES,
};
use crate::cel::host::{
    CONDITION_SCHEMA, Condition, ConditionField, ConditionFields, Conditions, EMPTY_TEXT, Field,
    FieldDef, FieldType, JsonText, MAX_RESOURCE_BYTES, Projection, RESOURCE_SCHEMA, Resource,
    ResourceField, ResourceFields, SharedText, Text, Time,
};
use crate::cel::value::{EvalError, Map, Value};
use std::ops::Range;
use std::sync::{Arc, LazyLock};

/// The items and total of a page, and whether an item may lack a field `p` decodes; or `None`
/// when the complete decoder must decide.
pub(super) fn scan_page(
    page: &SharedText,
    p: &Arc<Projection>,
) -> Option<(Vec<Resource>, i64, bool)> {
    let mut s = Scan::new(page.as_bytes(), 0);
    s.wanted = Wanted::of(p);
    let mut items = None;
    let mut total = None;
    s.ws();
    s.eat(b'{')?;
    s.ws();
    if s.peek()? == b'}' {
        return None;
    }
    loop {
        let key = s.key()?;
        s.ws();
        match key {
            b"items" if items.is_none() => {
                s.eat(b'[')?;
                items = Some(s.items(page, p)?);
            }
            b"total" if total.is_none() => total = Some(s.int()?),
            b"items" | b"total" => return None,
            _ => s.skip()?,
        }
        s.ws();
        match s.next()? {
            b',' => s.ws(),
            b'}' => break,
            _ => return None,
        }
    }
    s.ws();
    if s.i != s.b.len() {
        return None;
    }
    Some((items?, total?, s.incomplete))
}

/// The fields a projection decodes, a bit per schema row: what every item of an answer to
/// `fields` must hold.
#[derive(Clone, Copy, Default)]
struct Wanted {
    resource: u32,
    /// Of each condition of a decoded type (`type` among them).
    condition: u32,
}

impl Wanted {
    fn of(p: &Projection) -> Wanted {
        let bits = |has: &dyn Fn(usize) -> bool, n: usize| {
            (0..n).filter(|&i| has(i)).fold(0u32, |b, i| b | 1 << i)
        };
        Wanted {
            resource: bits(
                &|i| p.has_field(RESOURCE_SCHEMA[i].field),
                RESOURCE_SCHEMA.len(),
            ),
            condition: bits(
                &|i| {
                    let f = CONDITION_SCHEMA[i].field;
                    f == ConditionField::Type || p.has_condition_field(f)
                },
                CONDITION_SCHEMA.len(),
            ),
        }
    }
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    /// The keys of the labels object being read (reused across the page's resources).
    keys: Vec<&'a [u8]>,
    resource_keys: &'static Keys<ResourceField>,
    condition_keys: &'static Keys<ConditionField>,
    /// What every item must hold ([`scan_page`] only; nothing for the complete decoder).
    wanted: Wanted,
    /// Whether an item may lack a wanted field.
    incomplete: bool,
}

/// A string value: its content's byte range in the page and whether it has escapes.
#[derive(Clone, Copy)]
struct Str {
    start: usize,
    end: usize,
    escaped: bool,
}

/// The most items reserved for at once from the first item's size (more grow as usual).
const MAX_ITEMS_RESERVED: usize = 1024;

impl<'a> Scan<'a> {
    fn new(b: &'a [u8], i: usize) -> Scan<'a> {
        Scan {
            b,
            i,
            keys: Vec::new(),
            resource_keys: &RESOURCE_KEYS,
            condition_keys: &CONDITION_KEYS,
            wanted: Wanted::default(),
            incomplete: false,
        }
    }

    /// A scan of `range` of `page` alone (nothing after it is read), at its first token.
    fn within(page: &'a SharedText, range: Range<usize>) -> Option<Scan<'a>> {
        let mut s = Scan::new(page.as_bytes().get(..range.end)?, range.start);
        s.ws();
        Some(s)
    }

    /// Whether only blanks are left.
    fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        self.i = blank_end(self.b, self.i);
    }

    /// An object key and its colon; a key with escapes is left to the complete decoder.
    #[inline(always)]
    fn key(&mut self) -> Option<&'a [u8]> {
        let b = self.b;
        let (b'"', at) = token(b, self.i)? else {
            return None;
        };
        let end = special_at(b, at + 1);
        // An escape (or a control byte) ends the key before its quote.
        if *b.get(end)? != b'"' {
            return None;
        }
        let (b':', colon) = token(b, end + 1)? else {
            return None;
        };
        self.i = colon + 1;
        b.get(at + 1..end)
    }

    /// A string (at its opening quote), validated as JSON.
    #[inline(always)]
    fn string(&mut self) -> Option<Str> {
        self.eat(b'"')?;
        let start = self.i;
        let (end, escaped) = string_end::<false>(self.b, start)?;
        self.i = end + 1;
        Some(Str {
            start,
            end,
            escaped,
        })
    }

    /// A number, validated as JSON; its text.
    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        self.i = number_end::<false>(self.b, start)?;
        Some(&self.b[start..self.i])
    }

    /// An integer that fits `i64` (no fraction, no exponent), as Go reads an `int64` field.
    /// `-0` is left to the complete decoder: serde reads it as a float (negative zero), which
    /// an integer field refuses (found by the page fuzz target).
    fn int(&mut self) -> Option<i64> {
        let text = self.number()?;
        if text == b"-0" {
            return None;
        }
        std::str::from_utf8(text).ok()?.parse().ok()
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.i = literal_end(self.b, self.i, word)?;
        Some(())
    }

    /// `null` (consumed: `true`) or anything else (not consumed).
    fn null(&mut self) -> Option<bool> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| true),
            _ => Some(false),
        }
    }

    /// Skips one value, validating it: a string (what most skipped members hold) here, anything
    /// else through [`skip_end`].
    #[inline(always)]
    fn skip(&mut self) -> Option<()> {
        self.i = match self.peek()? {
            b'"' => string_close::<false>(self.b, self.i + 1)? + 1,
            _ => skip_end::<false>(self.b, self.i, Skip::Value)?,
        };
        Some(())
    }

    /// Calls `f` on each key of an object (at `{`) with the scanner at its value, which `f`
    /// consumes.
    fn object(&mut self, mut f: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.members(|s, key| f(s, key).map(|()| true))
    }

    /// [`Scan::object`] where `f` may also consume the rest of the object through its `}`
    /// (and say so with `false`).
    fn members(&mut self, mut f: impl FnMut(&mut Self, &'a [u8]) -> Option<bool>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.ws();
            if !f(self, key)? {
                return Some(());
            }
            let (c, at) = token(self.b, self.i)?;
            self.i = at + 1;
            match c {
                b',' => {}
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// The items of the page (after `[`), through the closing `]`.
    fn items(&mut self, page: &SharedText, p: &Arc<Projection>) -> Option<Vec<Resource>> {
        let mut out = Vec::new();
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(out);
        }
        loop {
            let start = self.i;
            let fast = match self.peek()? {
                b'{' => self.resource(page, p),
                _ => None,
            };
            let resource = match fast {
                Some(r) if self.i - start <= MAX_RESOURCE_BYTES => r,
                _ => {
                    // Only to find its end: as serde skips, a surrogate escape is no error
                    // here (the complete decoder says what it makes of it).
                    self.incomplete = true;
                    self.i = skip_end::<true>(self.b, start, Skip::Value)?;
                    Resource::from_page(page, start..self.i)
                }
            };
            if out.is_empty() {
                // Room for as many more items of the first one's size as the rest could hold,
                // and a quarter more, for items of a varied fleet are smaller than the first
                // by as much (capped): no reallocation, each moving every item decoded so far,
                // while a page of alike items is decoded.
                let size = (self.i - start).max(1);
                let more = (self.b.len() - self.i) / size + 1;
                out.reserve((more + more / 4).min(MAX_ITEMS_RESERVED));
            }
            out.push(resource);
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return Some(out),
                _ => return None,
            }
        }
    }

    /// A text field's value: a string (its range, nothing decoded yet) or null (absent).
    #[inline(always)]
    fn text(&mut self) -> Option<Option<Str>> {
        if self.null()? {
            return Some(None);
        }
        if self.peek()? != b'"' {
            return None;
        }
        Some(Some(self.string()?))
    }

    /// One resource (at `{`) decoded under `p`, or `None` for the complete decoder.
    #[inline(always)]
    fn resource(&mut self, page: &SharedText, p: &Arc<Projection>) -> Option<Resource> {
        let start = self.i;
        let mut seen = 0u32;
        // The member loop only notes where each field's text is; it is decoded after it.
        let mut texts: [Option<Str>; RESOURCE_TEXTS] = Default::default();
        let mut times: [Option<Str>; RESOURCE_TIMES] = Default::default();
        let mut fields = ResourceFields::absent();
        let mut conditions = Conditions::default();
        let keys = self.resource_keys;
        let mut present = 0u32;
        self.object(|s, key| {
            let def = keys.get(key);
            if let Some(d) = def {
                present |= 1 << d.field as u32;
            }
            let Some(def) = def.filter(|d| d.ty.is_decoded() && p.has_field(d.field)) else {
                return s.skip();
            };
            let bit = 1 << def.field as u32;
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match def.ty {
                FieldType::Str => texts[def.slot] = s.text()?,
                FieldType::Time => times[def.slot] = s.text()?,
                FieldType::Int => {
                    if !s.null()? {
                        fields.ints[def.slot] = Ok(s.int()?);
                    }
                }
                FieldType::Labels => {
                    if !s.null()? {
                        fields.labels = Ok(s.labels(page)?);
                    }
                }
                FieldType::Status => {
                    if !s.null()? {
                        s.status(page, p, &mut conditions)?;
                    }
                }
                FieldType::Reference | FieldType::Dyn => s.skip()?,
            }
            Some(())
        })?;
        let raw = JsonText::range(page, start, self.i)?;
        decode_texts(page, texts, &mut fields.texts)?;
        decode_times(page, &RESOURCE_TIME_NAMES, times, &mut fields.times)?;
        fields.conditions = Ok(conditions);
        self.incomplete |= present & self.wanted.resource != self.wanted.resource;
        Some(Resource::projected(fields, raw, p, complete_resource))
    }

    /// `labels` (at `{`): strings only, no repeated key.
    fn labels(&mut self, page: &SharedText) -> Option<Arc<Map>> {
        let mut entries: Vec<(Value, Value)> = Vec::new();
        self.keys.clear();
        self.object(|s, key| {
            if s.peek()? != b'"' {
                return None;
            }
            s.keys.push(key);
            let key = std::str::from_utf8(key).ok()?;
            let v = s.string()?;
            entries.push((Value::string(key), text_of(page, v)?.borrow().to_value()));
            Some(())
        })?;
        // A repeated key goes to the complete decoder, which names it. Sorted, not compared
        // pairwise: a 1 MiB resource can hold ~100,000 labels.
        self.keys.sort_unstable();
        if self.keys.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        Some(Arc::new(Map::from_entries(entries)))
    }

    /// `status` (at `{`): its `conditions` of the projected types.
    fn status(&mut self, page: &SharedText, p: &Projection, out: &mut Conditions) -> Option<()> {
        let mut seen = false;
        let read = self.object(|s, key| {
            if key != b"conditions" {
                return s.skip();
            }
            if std::mem::replace(&mut seen, true) {
                return None;
            }
            if s.null()? {
                return Some(());
            }
            s.eat(b'[')?;
            s.ws();
            if s.peek()? == b']' {
                s.i += 1;
                return Some(());
            }
            loop {
                if let Some(c) = s.condition(page, p)? {
                    out.push(Arc::new(c));
                }
                s.ws();
                match s.next()? {
                    b',' => s.ws(),
                    b']' => return Some(()),
                    _ => return None,
                }
            }
        });
        self.incomplete |= !seen;
        read
    }

    /// One condition (must be an object), decoded when its type is projected; nothing is
    /// built for one that is not, and once its type is known not to be (the API writes `type`
    /// first) the rest of it is only skipped.
    #[inline(always)]
    fn condition(&mut self, page: &SharedText, p: &Projection) -> Option<Option<Condition>> {
        let start = self.i;
        let mut seen = 0u32;
        let mut texts: [Option<Str>; CONDITION_TEXTS] = Default::default();
        let mut times: [Option<Str>; CONDITION_TIMES] = Default::default();
        let mut ints = [0i64; CONDITION_INTS];
        let mut typed = false;
        let keys = self.condition_keys;
        let mut dropped = false;
        let mut present = 0u32;
        self.members(|s, key| {
            let def = keys.get(key);
            if let Some(d) = def {
                present |= 1 << d.field as u32;
            }
            let Some(def) = def.filter(|d| {
                matches!(d.field, ConditionField::Type) || p.has_condition_field(d.field)
            }) else {
                s.skip()?;
                return Some(true);
            };
            let bit = 1 << def.field as u32;
            // A repeated field (or two spellings of one): the complete decoder picks.
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            if matches!(def.field, ConditionField::Type) {
                let text = s.text()?;
                if !p.has_condition(&opt_str(page, text)?) {
                    // Not read: the rest is only skipped (a second `type` would change
                    // which type this is: the complete decoder picks).
                    s.i = skip_end::<false>(s.b, s.i, Skip::RestOfCondition)?;
                    dropped = true;
                    return Some(false);
                }
                texts[def.slot] = text;
                typed = true;
                return Some(true);
            }
            match def.ty {
                FieldType::Str => texts[def.slot] = s.text()?,
                FieldType::Time => times[def.slot] = s.text()?,
                FieldType::Int => {
                    if !s.null()? {
                        ints[def.slot] = s.int()?;
                    }
                }
                _ => s.skip()?,
            }
            Some(true)
        })?;
        if dropped {
            return Some(None);
        }
        self.incomplete |= present & self.wanted.condition != self.wanted.condition;
        // Without a `type` it is of type "" (read only when "" is).
        if !typed && !p.has_condition("") {
            return Some(None);
        }
        let raw = JsonText::range(page, start, self.i)?;
        let mut fields = ConditionFields::absent();
        decode_texts(page, texts, &mut fields.texts)?;
        decode_times(page, &CONDITION_TIME_NAMES, times, &mut fields.times)?;
        fields.ints = ints.map(Ok);
        Some(Some(Condition::projected(
            fields,
            raw,
            p,
            complete_condition,
        )))
    }
}

/// A schema's names and aliases by length: a key is compared only with the (one or two)
/// names of its length (the page scan's and `fields.rs`'s).
pub(super) struct Keys<F: 'static> {
    by_len: Vec<Vec<(&'static [u8], &'static FieldDef<F>)>>,
}

impl<F> Keys<F> {
    fn new(schema: &'static [FieldDef<F>]) -> Keys<F> {
        let mut by_len: Vec<Vec<_>> = Vec::new();
        for def in schema {
            for name in std::iter::once(&def.name).chain(def.aliases) {
                let name = name.as_bytes();
                if by_len.len() <= name.len() {
                    by_len.resize_with(name.len() + 1, Vec::new);
                }
                by_len[name.len()].push((name, def));
            }
        }
        Keys { by_len }
    }

    /// The entry whose name or alias is `key`.
    #[inline]
    pub(super) fn get(&self, key: &[u8]) -> Option<&'static FieldDef<F>> {
        let names = self.by_len.get(key.len())?;
        names
            .iter()
            .find(|(name, _)| same_bytes(name, key))
            .map(|(_, def)| *def)
    }
}

pub(super) static RESOURCE_KEYS: LazyLock<Keys<ResourceField>> =
    LazyLock::new(|| Keys::new(&RESOURCE_SCHEMA));
pub(super) static CONDITION_KEYS: LazyLock<Keys<ConditionField>> =
    LazyLock::new(|| Keys::new(&CONDITION_SCHEMA));

/// A string's decoded text: a range of the page when it has no escapes, else a copy.
fn text_of(page: &SharedText, s: Str) -> Option<Text> {
    if !s.escaped {
        return Text::range(page, s.start, s.end);
    }
    let quoted = page.get(s.start - 1..s.end + 1)?;
    serde_json::from_str::<String>(quoted)
        .ok()
        .map(|t| Text::whole(Arc::from(t)))
}

/// A text field's decoded text, without building a [`Text`] when it has no escapes ("" when
/// absent).
fn opt_str(page: &SharedText, s: Option<Str>) -> Option<std::borrow::Cow<'_, str>> {
    match s {
        None => Some("".into()),
        Some(s) if !s.escaped => page.get(s.start..s.end).map(Into::into),
        Some(s) => text_of(page, s).map(|t| t.as_str().to_owned().into()),
    }
}

/// Decodes the texts found into their slots (the others stay ""); `None` when one cannot be
/// decoded here.
#[inline(always)]
fn decode_texts<const N: usize>(
    page: &SharedText,
    found: [Option<Str>; N],
    into: &mut [Field<Text>; N],
) -> Option<()> {
    for (s, out) in found.into_iter().zip(into) {
        if let Some(s) = s {
            *out = Ok(text_of(page, s)?);
        }
    }
    Some(())
}

/// Decodes the times found into their slots, named by slot in `names` (the others stay "");
/// `None` when one cannot be decoded here.
#[inline(always)]
fn decode_times<const N: usize>(
    page: &SharedText,
    names: &[&str; N],
    found: [Option<Str>; N],
    into: &mut [Field<Time>; N],
) -> Option<()> {
    for ((s, out), name) in found.into_iter().zip(into).zip(names) {
        if s.is_some() {
            *out = time_of(page, name, s)?;
        }
    }
    Some(())
}

/// A time field: canonical and parsed ("" when absent, an error when it is not RFC 3339).
fn time_of(page: &SharedText, name: &str, s: Option<Str>) -> Option<Result<Time, EvalError>> {
    let Some(s) = s else {
        return Some(Ok(Time::empty()));
    };
    if !s.escaped {
        return Some(Time::canonical(name, page.get(s.start..s.end)?, page));
    }
    let text = text_of(page, s)?;
    Some(Time::canonical(name, text.as_str(), &EMPTY_TEXT))
}

/// The resource at `range` of `page` decoded by this pass under `p` (the whole object, nothing
/// after it but blanks), or `None` for the JSON tree to decide.
pub(super) fn scan_resource(
    page: &SharedText,
    range: Range<usize>,
    p: &Arc<Projection>,
) -> Option<Resource> {
    let mut s = Scan::within(page, range)?;
    let r = s.resource(page, p)?;
    s.at_end().then_some(r)
}

/// The condition at `range` of `page` decoded whole by this pass, or `None` for the JSON tree
/// to decide.
pub(super) fn scan_condition(page: &SharedText, range: Range<usize>) -> Option<Condition> {
    let mut s = Scan::within(page, range)?;
    let c = s.condition(page, &ALL)??;
    s.at_end().then_some(c)
}

/// Everything.
pub(super) static ALL: LazyLock<Arc<Projection>> = LazyLock::new(|| Arc::new(Projection::all()));
