//! Text storage: the shared text a page's values are ranges of ([`SharedText`]), a decoded
//! string ([`Text`], borrowed as [`TextRef`]), a value's JSON text ([`JsonText`]) and a decoded
//! time ([`Time`]).
//!
//! Invariant: decoding a string or a JSON text copies nothing unless the string had escapes: a
//! [`Text`] or [`JsonText`] is a range of the [`SharedText`] it came in, which it keeps alive.

use crate::cel::time::{
    CANONICAL_MAX, Timestamp, canonical_rfc3339_parsed_in, parsed_if_canonical_utc,
};
use crate::cel::value::{ErrorKind, EvalError, Value};
use std::sync::{Arc, LazyLock};

/// The shared text decoded strings and JSON texts are ranges of: a list page's body, taken over
/// from the response without a copy (`String::from_utf8` of the bytes read), or a text of its
/// own.
pub type SharedText = Arc<String>;

/// A decoded string: a range of a shared text (usually the list page it came in, so decoding a
/// string copies and allocates nothing), or a string of its own (an escaped string, a time in
/// another spelling than its canonical one), read as a CEL value without a copy.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Range {
        src: SharedText,
        start: usize,
        end: usize,
    },
    Own(Arc<str>),
    /// The empty text: what an absent field holds, made and dropped without touching a count.
    Empty,
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
    pub fn range(src: &SharedText, start: usize, end: usize) -> Option<Text> {
        src.get(start..end)?;
        Some(Text(Repr::Range {
            src: src.clone(),
            start,
            end,
        }))
    }

    /// `s` as a range of `src` when it is a slice of it (no copy), else a text of its own.
    pub fn within(src: &SharedText, s: &str) -> Text {
        let start = (s.as_ptr() as usize).wrapping_sub(src.as_ptr() as usize);
        match Text::range(src, start, start.wrapping_add(s.len())) {
            Some(t) if t.as_str().as_ptr() == s.as_ptr() => t,
            _ => Text::owned(s),
        }
    }

    /// The empty text.
    pub fn empty() -> Text {
        Text(Repr::Empty)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Range { src, start, end } => src.get(*start..*end).unwrap_or(""),
            Repr::Own(s) => s,
            Repr::Empty => "",
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
            Repr::Empty => TextRef::whole(&EMPTY),
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

    /// The time field `name` read from `text`: canonical RFC 3339 with its parsed value, or the
    /// error reading it gives. The text is `text` itself (a range of `src` when it is a slice
    /// of it) when it is already canonical, the usual case; else a copy of the canonical form.
    pub fn canonical(name: &str, text: &str, src: &SharedText) -> Result<Time, EvalError> {
        if let Some(at) = parsed_if_canonical_utc(text) {
            return Ok(Time {
                text: Text::within(src, text),
                at,
            });
        }
        let mut buf = [0u8; CANONICAL_MAX];
        let (canonical, at) = canonical_rfc3339_parsed_in(text, &mut buf).map_err(|e| {
            EvalError::new(
                ErrorKind::BadResource,
                format!("invalid field '{name}': {e}"),
            )
        })?;
        let text = match canonical == text {
            true => Text::within(src, text),
            false => Text::owned(canonical),
        };
        Ok(Time { text, at })
    }
}

/// A time reads as its canonical text.
impl std::ops::Deref for Time {
    type Target = str;
    fn deref(&self) -> &str {
        self.text.as_str()
    }
}

/// The JSON text of one value (a resource, a condition): a range of a shared text, the body of
/// the list page it came in (so decoding a page copies no item), or a text of its own.
#[derive(Clone)]
pub struct JsonText {
    text: SharedText,
    start: usize,
    end: usize,
}

impl JsonText {
    /// A whole text.
    pub fn whole(text: SharedText) -> JsonText {
        JsonText {
            start: 0,
            end: text.len(),
            text,
        }
    }

    /// A copy of `text`.
    pub fn owned(text: &str) -> JsonText {
        JsonText::whole(Arc::new(text.to_owned()))
    }

    /// The range `start..end` of `text`; `None` when it is not within it on character
    /// boundaries.
    pub fn range(text: &SharedText, start: usize, end: usize) -> Option<JsonText> {
        text.get(start..end)?;
        Some(JsonText {
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
    pub fn parts(&self) -> (&SharedText, std::ops::Range<usize>) {
        (&self.text, self.start..self.end)
    }
}

/// The empty string every absent text field shares.
pub static EMPTY: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from(""));
/// The empty [`SharedText`].
pub static EMPTY_TEXT: LazyLock<SharedText> = LazyLock::new(|| Arc::new(String::new()));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_ranges_of_their_source_or_copies() {
        let page: SharedText = Arc::new(r#"{"a":"True","b":"x\u0041"}"#.to_string());
        let inside = Text::within(&page, &page[6..10]);
        let range = |t: &Text| match &t.0 {
            Repr::Range { src, start, .. } => Some((src.clone(), *start)),
            Repr::Own(_) | Repr::Empty => None,
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
        let wide: SharedText = Arc::new("é".to_string());
        assert!(Text::range(&wide, 0, 1).is_none());
        assert!(Text::range(&wide, 0, 3).is_none());
    }
}
