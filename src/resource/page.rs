//! One pass over a list page's bytes under a [`Projection`]: the envelope and every item are
//! scanned once, the projected fields decoded from slices of the page, every other value
//! skipped (validated, not built, nothing allocated). What this fast path is unsure of (a wrong
//! type, a duplicate key, an escape in a key, deep nesting, a number out of range) it hands to
//! the complete decoder: the whole page when the envelope is unusual (so errors stay exactly
//! those of serde), one item when only that item is.
//!
//! A projected resource keeps its text as a range of the page and decodes whatever it is asked
//! for outside the projection on first use ([`crate::cel::host::Partial`]): the meaning of
//! every access is that of the complete decoder.

use super::{Condition, Page, Projection, RawText, Resource, Text, Time, canonical_time};
use crate::cel::host::{
    CONDITION_SCHEMA, ConditionField, Conditions, EMPTY_MAP, EMPTY_PAGE, FieldDef,
    MAX_RESOURCE_BYTES, Partial, RESOURCE_SCHEMA, ResourceField,
};
use crate::cel::value::{Map, Value};
use serde_json::Value as Json;
use std::sync::{Arc, LazyLock, OnceLock};

/// The items and total of a page, or `None` when the complete decoder must decide.
pub(crate) fn scan_page(page: &Page, p: &Arc<Projection>) -> Option<(Vec<Resource>, i64)> {
    let mut s = Scan {
        b: page.as_bytes(),
        i: 0,
        keys: Vec::new(),
        resource_keys: &RESOURCE_KEYS,
        condition_keys: &CONDITION_KEYS,
    };
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
    Some((items?, total?))
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
    /// The keys of the labels object being read (reused across the page's resources).
    keys: Vec<&'a [u8]>,
    resource_keys: &'static Keys<ResourceField>,
    condition_keys: &'static Keys<ConditionField>,
}

/// A string value: its content's byte range in the page and whether it has escapes.
#[derive(Clone, Copy)]
struct Str {
    start: usize,
    end: usize,
    escaped: bool,
}

/// The deepest nesting skipped (deeper: the complete decoder decides); below serde's 128 and
/// within the 64 bits of [`skip_end`]'s stack.
const MAX_DEPTH: u32 = 64;

/// The most items reserved for at once from the first item's size (more grow as usual).
const MAX_ITEMS_RESERVED: usize = 1024;

impl<'a> Scan<'a> {
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
    fn items(&mut self, page: &Page, p: &Arc<Projection>) -> Option<Vec<Resource>> {
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
                    self.i = skip_end::<true>(self.b, start, Skip::Value)?;
                    Resource::from_page(page, start..self.i)
                }
            };
            if out.is_empty() {
                // Room for as many more items of the first one's size as the rest could hold
                // (capped): no reallocation while a page of alike items is decoded.
                let size = (self.i - start).max(1);
                out.reserve(((self.b.len() - self.i) / size + 1).min(MAX_ITEMS_RESERVED));
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
    fn resource(&mut self, page: &Page, p: &Arc<Projection>) -> Option<Resource> {
        use ResourceField as F;
        let start = self.i;
        let mut seen = 0u32;
        let mut texts: [Option<Str>; 6] = Default::default();
        let mut generation = 0;
        let mut labels = None;
        let mut conditions = Conditions::default();
        let text_index = |f: ResourceField| match f {
            F::Id => Some(0),
            F::Kind => Some(1),
            F::Name => Some(2),
            F::Href => Some(3),
            F::CreatedTime => Some(4),
            F::UpdatedTime => Some(5),
            _ => None,
        };
        let wanted = p.fields | 1 << F::Id as u32;
        let keys = self.resource_keys;
        self.object(|s, key| {
            let Some(def) = keys
                .get(key)
                .filter(|d| d.ty.is_decoded() && wanted & (1 << d.field as u32) != 0)
            else {
                return s.skip();
            };
            let bit = 1 << def.field as u32;
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            if let Some(i) = text_index(def.field) {
                texts[i] = s.text()?;
                return Some(());
            }
            match def.field {
                F::Generation => {
                    if !s.null()? {
                        generation = s.int()?;
                    }
                }
                F::Labels => {
                    if !s.null()? {
                        labels = Some(s.labels(page)?);
                    }
                }
                _ => {
                    if !s.null()? {
                        s.status(page, p, &mut conditions)?;
                    }
                }
            }
            Some(())
        })?;
        let raw = RawText::range(page, start, self.i)?;
        let [id, kind, name, href, created_time, updated_time] = texts;
        let id = opt_text(page, id)?;
        let partial = (!p.is_all()).then(|| {
            (
                p.clone(),
                Partial {
                    raw: raw.clone(),
                    decoded: wanted,
                    decode: decode_resource,
                    full: OnceLock::new(),
                },
            )
        });
        Some(Resource {
            id: Ok(id),
            kind: Ok(opt_text(page, kind)?),
            name: Ok(opt_text(page, name)?),
            href: Ok(opt_text(page, href)?),
            created_time: time_of(page, "created_time", created_time)?,
            updated_time: time_of(page, "updated_time", updated_time)?,
            generation: Ok(generation),
            labels: Ok(labels.unwrap_or_else(|| EMPTY_MAP.clone())),
            conditions: Ok(conditions),
            raw,
            oversize: None,
            partial,
        })
    }

    /// `labels` (at `{`): strings only, no repeated key.
    fn labels(&mut self, page: &Page) -> Option<Arc<Map>> {
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
    fn status(&mut self, page: &Page, p: &Projection, out: &mut Conditions) -> Option<()> {
        let mut seen = false;
        self.object(|s, key| {
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
        })
    }

    /// One condition (must be an object), decoded when its type is projected; nothing is
    /// built for one that is not, and once its type is known not to be (the API writes `type`
    /// first) the rest of it is only skipped.
    fn condition(&mut self, page: &Page, p: &Projection) -> Option<Option<Condition>> {
        use ConditionField as F;
        let start = self.i;
        let decoded = p.condition_fields | 1 << F::Type as u32;
        let mut seen = 0u32;
        let mut texts: [Option<Str>; 7] = Default::default();
        let mut generation = 0;
        let mut ty = None;
        let keys = self.condition_keys;
        let mut dropped = false;
        self.members(|s, key| {
            let Some(def) = keys.get(key).filter(|d| decoded & 1 << d.field as u32 != 0) else {
                s.skip()?;
                return Some(true);
            };
            let bit = 1 << def.field as u32;
            // A repeated field (or two spellings of one): the complete decoder picks.
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match def.field {
                F::ObservedGeneration => {
                    if !s.null()? {
                        generation = s.int()?;
                    }
                }
                F::Type => {
                    let text = s.text()?;
                    if !p.has_condition(&opt_str(page, text)?) {
                        // Not read: the rest is only skipped (a second `type` would change
                        // which type this is: the complete decoder picks).
                        s.i = skip_end::<false>(s.b, s.i, Skip::RestOfCondition)?;
                        dropped = true;
                        return Some(false);
                    }
                    ty = Some(opt_text(page, text)?);
                }
                f => texts[f as usize] = s.text()?,
            }
            Some(true)
        })?;
        if dropped {
            return Some(None);
        }
        let ty = match ty {
            Some(ty) => ty,
            None if p.has_condition("") => Text::empty(),
            None => return Some(None),
        };
        let [_, status, reason, message, created, updated, transition] = texts;
        let raw = RawText::range(page, start, self.i)?;
        let all = (1 << CONDITION_SCHEMA.len()) - 1;
        Some(Some(Condition {
            ty: Ok(ty),
            status: Ok(opt_text(page, status)?),
            reason: Ok(opt_text(page, reason)?),
            message: Ok(opt_text(page, message)?),
            created_time: time_of(page, "created_time", created)?,
            last_updated_time: time_of(page, "last_updated_time", updated)?,
            last_transition_time: time_of(page, "last_transition_time", transition)?,
            observed_generation: Ok(generation),
            partial: (decoded != all).then(|| Partial {
                raw,
                decoded,
                decode: decode_condition,
                full: OnceLock::new(),
            }),
        }))
    }
}

/// A schema's names and aliases by length: a key is compared only with the (one or two)
/// names of its length.
struct Keys<F: 'static> {
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
    fn get(&self, key: &[u8]) -> Option<&'static FieldDef<F>> {
        let names = self.by_len.get(key.len())?;
        names
            .iter()
            .find(|(name, _)| same_bytes(name, key))
            .map(|(_, def)| *def)
    }
}

/// `a == b`, a word at a time and inline: a key is short, and a call to `memcmp` per key
/// costs more than comparing it.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    // The words at `i` (eight bytes, else four).
    let wide = |s: &[u8], i: usize| {
        s.get(i..i + 8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    let narrow = |s: &[u8], i: usize| {
        s.get(i..i + 4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    match n {
        // Every eight bytes, the last eight overlapping the word before.
        8.. => {
            (0..n - 8).step_by(8).all(|i| wide(a, i) == wide(b, i))
                && wide(a, n - 8) == wide(b, n - 8)
        }
        4.. => narrow(a, 0) == narrow(b, 0) && narrow(a, n - 4) == narrow(b, n - 4),
        _ => a.iter().zip(b).all(|(x, y)| x == y),
    }
}

static RESOURCE_KEYS: LazyLock<Keys<ResourceField>> = LazyLock::new(|| Keys::new(&RESOURCE_SCHEMA));
static CONDITION_KEYS: LazyLock<Keys<ConditionField>> =
    LazyLock::new(|| Keys::new(&CONDITION_SCHEMA));

/// Where [`skip_end`] starts.
#[derive(Clone, Copy)]
enum Skip {
    /// At a value: skip it.
    Value,
    /// Inside an object, after one of its values: skip the rest of the object (through its
    /// `}`), failing at a second member named `type` (which would change the condition's
    /// type).
    RestOfCondition,
}

/// The end of what `from` says is at `i` in `b`, validated as JSON. Iterative: the open
/// containers are a stack of bits (an object is a 1), at most [`MAX_DEPTH`] deep (deeper: the
/// complete decoder decides). Everything stays in locals and each byte between tokens is looked
/// at once ([`token`]); what is rare (blanks, escapes, numbers, literals) is out of line, so
/// the registers stay with strings and structure: this is the loop most of a page goes through.
/// `LENIENT`: accept what serde accepts in a value it skips but may refuse in one it decodes
/// (a `\u` surrogate escape, [`escape_end`]; a number out of range, [`number_end`]); the item-end
/// fallback of [`Scan::items`] is lenient, a projected item is not.
#[inline(never)]
fn skip_end<const LENIENT: bool>(b: &[u8], mut i: usize, from: Skip) -> Option<usize> {
    // `watch`: the depth whose keys may not be `type` (none for a value: no depth reaches it).
    let (mut open, mut depth, watch, mut at_value): (u64, u32, u32, bool) = match from {
        Skip::Value => (0, 0, u32::MAX, true),
        Skip::RestOfCondition => (1, 1, 1, false),
    };
    loop {
        if at_value {
            let (c, at) = token(b, i)?;
            if c == b'"' {
                i = string_close::<LENIENT>(b, at + 1)? + 1;
            } else if c == b'{' || c == b'[' {
                let (next, at) = token(b, at + 1)?;
                // `{` + 2 is `}`, `[` + 2 is `]`.
                if next == c + 2 {
                    i = at + 1;
                } else {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return None;
                    }
                    let object = c == b'{';
                    open = open << 1 | u64::from(object);
                    i = match object {
                        true => key_end::<LENIENT>(b, next, at, depth == watch)?,
                        false => at,
                    };
                    continue;
                }
            } else {
                i = scalar_end::<LENIENT>(b, at)?;
            }
        }
        at_value = true;
        // After a value: close the containers it ends.
        loop {
            if depth == 0 {
                return Some(i);
            }
            let object = open & 1 == 1;
            let (c, at) = token(b, i)?;
            i = at + 1;
            if c == b',' {
                if object {
                    let (c, at) = token(b, i)?;
                    i = key_end::<LENIENT>(b, c, at, depth == watch)?;
                    // The usual member, a string, stays in this loop.
                    if b.get(i) == Some(&b'"') {
                        i = string_close::<LENIENT>(b, i + 1)? + 1;
                        continue;
                    }
                }
                break;
            }
            if c != if object { b'}' } else { b']' } {
                return None;
            }
            open >>= 1;
            depth -= 1;
        }
    }
}

/// The first byte at or after `i` that is not a blank, and where it is.
#[inline(always)]
fn token(b: &[u8], i: usize) -> Option<(u8, usize)> {
    match *b.get(i)? {
        // Compact JSON (what the API writes) has no blanks.
        c if c > b' ' => Some((c, i)),
        _ => {
            let at = blanks_end(b, i);
            Some((*b.get(at)?, at))
        }
    }
}

/// After a skipped object's key (`c`, at `at`: its quote) and its colon; `watched`: a key
/// `type` (or any key with an escape, which may spell it) fails.
#[inline(always)]
fn key_end<const LENIENT: bool>(b: &[u8], c: u8, at: usize, watched: bool) -> Option<usize> {
    if c != b'"' {
        return None;
    }
    let end = special_at(b, at + 1);
    let end = match *b.get(end)? {
        b'"' if !watched || b.get(at + 1..end)? != b"type" => end,
        _ if !watched => escaped_string_end::<LENIENT>(b, end)?.0,
        _ => return None,
    };
    match token(b, end + 1)? {
        (b':', at) => Some(at + 1),
        _ => None,
    }
}

/// After the blanks at `i`.
#[inline(always)]
fn blank_end(b: &[u8], i: usize) -> usize {
    // Compact JSON (what the API writes) has none.
    if b.get(i).is_some_and(|&c| c > b' ') {
        return i;
    }
    blanks_end(b, i)
}

/// [`blank_end`] at a blank.
#[cold]
#[inline(never)]
fn blanks_end(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// The closing quote of the string whose content starts at `i`, and whether it has escapes.
#[inline(always)]
fn string_end<const LENIENT: bool>(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let end = special_at(b, i);
    match *b.get(end)? {
        b'"' => Some((end, false)),
        _ => escaped_string_end::<LENIENT>(b, end),
    }
}

/// [`string_end`] without whether it has escapes.
#[inline(always)]
fn string_close<const LENIENT: bool>(b: &[u8], i: usize) -> Option<usize> {
    string_end::<LENIENT>(b, i).map(|(end, _)| end)
}

/// [`string_end`] from `at`, a backslash or a control byte.
#[cold]
#[inline(never)]
fn escaped_string_end<const LENIENT: bool>(b: &[u8], mut at: usize) -> Option<(usize, bool)> {
    loop {
        match *b.get(at)? {
            b'"' => return Some((at, true)),
            b'\\' => at = escape_end::<LENIENT>(b, at + 1)?,
            _ => return None,
        }
        at = special_at(b, at);
    }
}

/// After the escape sequence whose backslash is before `i`. A surrogate (`\uD800`–`\uDFFF`,
/// paired or not) is accepted only when `LENIENT`, as serde accepts it in what it skips: in a
/// string it decodes serde refuses a lone one, so a projected item holding one anywhere goes to
/// the complete decoder, which says what the item is.
fn escape_end<const LENIENT: bool>(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 1),
        b'u' => {
            let hex = b.get(i + 1..i + 5)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            // `D800`–`DFFF`: a `d` (either case), then a hex digit past `7`.
            let surrogate = hex[0].eq_ignore_ascii_case(&b'd') && !matches!(hex[1], b'0'..=b'7');
            (LENIENT || !surrogate).then_some(i + 5)
        }
        _ => None,
    }
}

/// After the number or literal at `i`, validated as JSON (out of line: a page has few).
#[inline(never)]
fn scalar_end<const LENIENT: bool>(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b't' => literal_end(b, i, b"true"),
        b'f' => literal_end(b, i, b"false"),
        b'n' => literal_end(b, i, b"null"),
        _ => number_end::<LENIENT>(b, i),
    }
}

/// After the number at `i`, validated as JSON. Unless `LENIENT` (what serde accepts in a value
/// it skips), a number serde may find out of range when it decodes it (an exponent, or more
/// than 300 characters) fails, so that the complete decoder says what it is.
#[inline]
fn number_end<const LENIENT: bool>(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    let digits = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    // At least one digit.
    let digit = |i: usize| {
        b.get(i)
            .is_some_and(u8::is_ascii_digit)
            .then(|| digits(i + 1))
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match *b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i + 1),
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = digit(i + 1)?;
    }
    if !LENIENT && i - start > 300 {
        return None;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        if !LENIENT {
            return None;
        }
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = digit(i)?;
    }
    Some(i)
}

/// After `word` at `i`.
#[inline(always)]
fn literal_end(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    let end = i + word.len();
    (b.get(i..end)? == word).then_some(end)
}

/// The index of the first quote, backslash or control byte at or after `i` (`b.len()` when
/// there is none), sixteen bytes at a time as two words (a string is scanned inside the page,
/// so almost always sixteen bytes remain: the last few go byte by byte).
#[inline(always)]
fn special_at(b: &[u8], i: usize) -> usize {
    let Some(mut rest) = b.get(i..) else {
        return b.len();
    };
    while let Some((chunk, tail)) = rest.split_first_chunk::<16>() {
        let (lo, hi) = chunk.split_at(8);
        let lo = special_bytes(u64::from_le_bytes(lo.try_into().unwrap_or_default()));
        let hi = special_bytes(u64::from_le_bytes(hi.try_into().unwrap_or_default()));
        if lo | hi != 0 {
            // The lowest flagged byte is a true one (a false flag only ever sits above a true
            // one, where a borrow ran into it).
            let at = b.len() - rest.len();
            return match lo {
                0 => at + 8 + (hi.trailing_zeros() / 8) as usize,
                _ => at + (lo.trailing_zeros() / 8) as usize,
            };
        }
        rest = tail;
    }
    special_tail(b, b.len() - rest.len())
}

/// [`special_at`] over the last bytes of `b`, from `i`.
#[cold]
#[inline(never)]
fn special_tail(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map_or(b.len(), |n| i + n)
}

/// The high bit of each byte of `w` below 0x20 or equal to '"' or '\\' (above a flagged byte a
/// flag may be false). `w ^ 0x02` maps '"' to 0x20 and the control bytes among themselves, so
/// one "below 0x21" test finds both; bytes >= 0x80 are excluded by `!w` (the xors keep the
/// high bit).
#[inline(always)]
fn special_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote_or_control = (w ^ (ONES * 0x02)).wrapping_sub(ONES * 0x21);
    let backslash = (w ^ (ONES * u64::from(b'\\'))).wrapping_sub(ONES);
    (quote_or_control | backslash) & !w & HIGH
}

/// A string's decoded text: a range of the page when it has no escapes, else a copy.
fn text_of(page: &Page, s: Str) -> Option<Text> {
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
fn opt_str(page: &Page, s: Option<Str>) -> Option<std::borrow::Cow<'_, str>> {
    match s {
        None => Some("".into()),
        Some(s) if !s.escaped => page.get(s.start..s.end).map(Into::into),
        Some(s) => text_of(page, s).map(|t| t.as_str().to_owned().into()),
    }
}

/// A text field: "" when absent.
fn opt_text(page: &Page, s: Option<Str>) -> Option<Text> {
    match s {
        None => Some(Text::empty()),
        Some(s) => text_of(page, s),
    }
}

/// A time field: canonical and parsed ("" when absent, an error when it is not RFC 3339).
fn time_of(
    page: &Page,
    name: &str,
    s: Option<Str>,
) -> Option<Result<Time, crate::cel::value::EvalError>> {
    let Some(s) = s else {
        return Some(Ok(Time::empty()));
    };
    if !s.escaped {
        return Some(canonical_time(name, page.get(s.start..s.end)?, page));
    }
    let text = text_of(page, s)?;
    Some(canonical_time(name, text.as_str(), &EMPTY_PAGE))
}

/// The complete decoding of a projected resource's text.
fn decode_resource(raw: &RawText) -> Resource {
    let (page, range) = raw.parts();
    Resource::from_page(page, range)
}

/// The complete decoding of a projected condition's text (always an object: it was scanned).
fn decode_condition(raw: &RawText) -> Condition {
    match serde_json::from_str::<Json>(raw.get()) {
        Ok(Json::Object(obj)) => Condition::from_json(&obj),
        _ => Condition::from_json(&serde_json::Map::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::{same_bytes, special_at};

    #[test]
    fn keys_compare_as_bytes() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(same_bytes(&a, &a.clone()));
            if n > 0 {
                assert!(!same_bytes(&a, &a[..n - 1]));
            }
            for at in 0..n {
                let mut b = a.clone();
                b[at] ^= 0x20;
                assert!(!same_bytes(&a, &b), "{n} {at}");
            }
        }
    }

    #[test]
    fn the_scan_finds_the_first_special_byte() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        // Every byte among fillers (the bytes next to the specials' values among them).
        for special_byte in 0..=255u8 {
            for filler in [
                b'a', b' ', 0x21, 0x23, 0x5b, 0x5d, 0x5e, 0x7f, 0x80, 0x82, 0xa0, 0xff, 0xa2, 0xdc,
            ] {
                // Both words of a step, the next step and the byte-by-byte tail, from two
                // starts.
                for len in 0..40 {
                    for at in 0..=len {
                        let mut b = vec![filler; len];
                        if at < len {
                            b[at] = special_byte;
                        }
                        for start in [0, 3] {
                            let expected = naive(b.get(start..).unwrap_or_default())
                                .map_or(len, |n| start + n);
                            assert_eq!(special_at(&b, start), expected, "{b:?}");
                        }
                    }
                }
            }
        }
    }
}
