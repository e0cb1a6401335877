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

use super::{Condition, Projection, RawText, Resource, Text, Time, canonical_time};
use crate::cel::host::{
    CONDITION_SCHEMA, ConditionField, EMPTY, EMPTY_MAP, FieldDef, MAX_RESOURCE_BYTES, Partial,
    RESOURCE_SCHEMA, ResourceField,
};
use crate::cel::value::{Map, Value};
use serde_json::Value as Json;
use std::sync::{Arc, OnceLock};

/// The items and total of a page, or `None` when the complete decoder must decide.
pub(crate) fn scan_page(page: &Arc<str>, p: &Arc<Projection>) -> Option<(Vec<Resource>, i64)> {
    let mut s = Scan {
        b: page.as_bytes(),
        i: 0,
        keys: Vec::new(),
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
            _ => s.skip(0)?,
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
}

/// A string value: its content's byte range in the page and whether it has escapes.
#[derive(Clone, Copy)]
struct Str {
    start: usize,
    end: usize,
    escaped: bool,
}

/// The deepest nesting skipped (deeper: the complete decoder decides).
const MAX_DEPTH: usize = 100;

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
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
        }
    }

    /// An object key and its colon; a key with escapes is left to the complete decoder.
    fn key(&mut self) -> Option<&'a [u8]> {
        let s = self.string()?;
        if s.escaped {
            return None;
        }
        self.ws();
        self.eat(b':')?;
        Some(&self.b[s.start..s.end])
    }

    /// A string (at its opening quote), validated as JSON.
    fn string(&mut self) -> Option<Str> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            // Find the next quote, backslash or control byte.
            self.i += special(&self.b[self.i..])?;
            match self.next()? {
                b'"' => {
                    return Some(Str {
                        start,
                        end: self.i - 1,
                        escaped,
                    });
                }
                b'\\' => {
                    escaped = true;
                    match self.next()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hex = self.b.get(self.i..self.i + 4)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i += 4;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// A number, validated as JSON; its text.
    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digit()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.digit()?;
        }
        Some(&self.b[start..self.i])
    }

    fn digit(&mut self) -> Option<()> {
        self.next()?.is_ascii_digit().then_some(())?;
        self.digits();
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// An integer that fits `i64` (no fraction, no exponent), as Go reads an `int64` field.
    fn int(&mut self) -> Option<i64> {
        let text = self.number()?;
        std::str::from_utf8(text).ok()?.parse().ok()
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then_some(())?;
        self.i = end;
        Some(())
    }

    /// `null` (consumed: `true`) or anything else (not consumed).
    fn null(&mut self) -> Option<bool> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| true),
            _ => Some(false),
        }
    }

    /// Skips one value, validating it.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => {
                self.i += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.skip(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number().map(drop),
        }
    }

    /// Calls `f` on each key of an object (at `{`) with the scanner at its value, which `f`
    /// consumes.
    fn object(&mut self, mut f: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.ws();
            f(self, key)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// The items of the page (after `[`), through the closing `]`.
    fn items(&mut self, page: &Arc<str>, p: &Arc<Projection>) -> Option<Vec<Resource>> {
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
                    self.i = start;
                    self.skip(0)?;
                    Resource::from_page(page, start..self.i)
                }
            };
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
    fn resource(&mut self, page: &Arc<str>, p: &Arc<Projection>) -> Option<Resource> {
        use ResourceField as F;
        let start = self.i;
        let mut seen = 0u32;
        let mut texts: [Option<Str>; 6] = Default::default();
        let mut generation = 0;
        let mut labels = None;
        let mut conditions = Vec::new();
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
        self.object(|s, key| {
            let Some(def) = lookup(&RESOURCE_SCHEMA, key)
                .filter(|d| d.ty.is_decoded() && wanted & (1 << d.field as u32) != 0)
            else {
                return s.skip(0);
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
        let id = match id {
            None => EMPTY.clone(),
            Some(id) => text_of(page, id)?.borrow().to_arc(),
        };
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
    fn labels(&mut self, page: &Arc<str>) -> Option<Arc<Map>> {
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
    fn status(
        &mut self,
        page: &Arc<str>,
        p: &Projection,
        out: &mut Vec<Arc<Condition>>,
    ) -> Option<()> {
        let mut seen = false;
        self.object(|s, key| {
            if key != b"conditions" {
                return s.skip(0);
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
    /// built for one that is not.
    fn condition(&mut self, page: &Arc<str>, p: &Projection) -> Option<Option<Condition>> {
        use ConditionField as F;
        let start = self.i;
        let decoded = p.condition_fields | 1 << F::Type as u32;
        let mut seen = 0u32;
        let mut texts: [Option<Str>; 7] = Default::default();
        let mut generation = 0;
        self.object(|s, key| {
            let Some(def) = lookup(&CONDITION_SCHEMA, key) else {
                return s.skip(0);
            };
            let bit = 1 << def.field as u32;
            if decoded & bit == 0 {
                return s.skip(0);
            }
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
                f => texts[f as usize] = s.text()?,
            }
            Some(())
        })?;
        let [ty, status, reason, message, created, updated, transition] = texts;
        let ty = opt_text(page, ty)?;
        let keep = match &p.condition_types {
            None => true,
            Some(types) => types.iter().any(|t| **t == *ty.as_str()),
        };
        if !keep {
            return Some(None);
        }
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

/// The schema entry whose name or alias is `key` (length and first byte first: most keys
/// are rejected without a comparison).
fn lookup<F, const N: usize>(
    schema: &'static [FieldDef<F>; N],
    key: &[u8],
) -> Option<&'static FieldDef<F>> {
    let same = |name: &str| {
        let name = name.as_bytes();
        name.len() == key.len() && name.first() == key.first() && name == key
    };
    schema
        .iter()
        .find(|d| same(d.name) || d.aliases.iter().any(|a| same(a)))
}

/// The index of the first quote, backslash or control byte of `b`, eight bytes at a time (a
/// string is scanned inside the page, so almost always eight bytes remain: the last few go
/// byte by byte).
fn special(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = special_bytes(u64::from_le_bytes(word));
        if found != 0 {
            // The lowest flagged byte is a true one (a false flag only ever sits above a true
            // one, where a borrow ran into it).
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|n| i + n)
}

/// The high bit of each byte of `w` below 0x20 or equal to '"' or '\\' (bytes >= 0x80 are
/// excluded by `!w`; above a flagged byte a flag may be false).
fn special_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    (w.wrapping_sub(ONES * 0x20) | quote.wrapping_sub(ONES) | backslash.wrapping_sub(ONES))
        & !w
        & HIGH
}

/// A string's decoded text: a range of the page when it has no escapes, else a copy.
fn text_of(page: &Arc<str>, s: Str) -> Option<Text> {
    if !s.escaped {
        return Text::range(page, s.start, s.end);
    }
    let quoted = page.get(s.start - 1..s.end + 1)?;
    serde_json::from_str::<String>(quoted)
        .ok()
        .map(|t| Text::whole(Arc::from(t)))
}

/// A text field: "" when absent.
fn opt_text(page: &Arc<str>, s: Option<Str>) -> Option<Text> {
    match s {
        None => Some(Text::empty()),
        Some(s) => text_of(page, s),
    }
}

/// A time field: canonical and parsed ("" when absent, an error when it is not RFC 3339).
fn time_of(
    page: &Arc<str>,
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
    Some(canonical_time(name, text.as_str(), &EMPTY))
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
    use super::special;

    #[test]
    fn the_word_scan_finds_the_first_special_byte() {
        let naive = |b: &[u8]| b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
        for special_byte in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
            for filler in [b'a', b' ', 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0xa2, 0xdc] {
                for len in 0..20 {
                    for at in 0..=len {
                        let mut b = vec![filler; len];
                        if at < len {
                            b[at] = special_byte;
                        }
                        assert_eq!(special(&b), naive(&b), "{b:?}");
                    }
                }
            }
        }
    }
}
