//! The fake API's `search` parameter: the subset of TSL (Tree Search Language) the sentinel
//! sends, label equality terms `labels.<key>='<value>'` joined by `and`.
//!
//! Invariant: a search either parses completely or is rejected; nothing is silently ignored, so a
//! sentinel sending a malformed search sees a 400 as it would from the real API.

use serde_json::Value as Json;

/// A parsed search: all terms must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Search {
    /// The terms, in the order written.
    pub terms: Vec<Term>,
}

/// One search term.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    /// `labels.<key>='<value>'`: the resource has label `key` with exactly `value`.
    LabelEquals {
        /// The label key.
        key: String,
        /// The value, with `''` unescaped to `'`.
        value: String,
    },
}

/// Why a search string was rejected.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("invalid search at byte {offset}: {reason}")]
pub struct SearchError {
    /// Where in the search string parsing failed.
    pub offset: usize,
    /// What was expected there.
    pub reason: &'static str,
}

impl Search {
    /// Whether `resource` satisfies every term.
    pub fn matches(&self, resource: &Json) -> bool {
        self.matches_labels(resource.get("labels"))
    }

    /// Whether a resource with `labels` (its `labels` object, if any) satisfies every term.
    pub fn matches_labels(&self, labels: Option<&Json>) -> bool {
        self.terms.iter().all(|term| match term {
            Term::LabelEquals { key, value } => {
                labels
                    .and_then(|labels| labels.get(key))
                    .and_then(Json::as_str)
                    == Some(value.as_str())
            }
        })
    }
}

/// Parses a search string; blank means no filter.
pub fn parse_search(text: &str) -> Result<Search, SearchError> {
    let mut cursor = Cursor { text, pos: 0 };
    let mut terms = Vec::new();
    cursor.skip_spaces();
    if cursor.at_end() {
        return Ok(Search { terms });
    }
    loop {
        terms.push(cursor.label_term()?);
        cursor.skip_spaces();
        if cursor.at_end() {
            return Ok(Search { terms });
        }
        cursor.keyword_and()?;
    }
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn at_end(&self) -> bool {
        self.pos == self.text.len()
    }

    fn fail<T>(&self, reason: &'static str) -> Result<T, SearchError> {
        Err(SearchError {
            offset: self.pos,
            reason,
        })
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, prefix: &str) -> bool {
        let found = self.rest().starts_with(prefix);
        if found {
            self.pos += prefix.len();
        }
        found
    }

    /// `labels.<key> = '<value>'`.
    fn label_term(&mut self) -> Result<Term, SearchError> {
        if !self.eat("labels.") {
            return self.fail("expected a term of the form labels.<key>='<value>'");
        }
        let key_len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
            .unwrap_or(self.rest().len());
        if key_len == 0 {
            return self.fail("expected a label key");
        }
        let key = self.rest()[..key_len].to_string();
        self.pos += key_len;
        self.skip_spaces();
        if !self.eat("=") {
            return self.fail("expected '=' after the label key");
        }
        self.skip_spaces();
        let value = self.quoted()?;
        Ok(Term::LabelEquals { key, value })
    }

    /// A single-quoted string in which `''` stands for `'`.
    fn quoted(&mut self) -> Result<String, SearchError> {
        if !self.eat("'") {
            return self.fail("expected a single-quoted value");
        }
        let mut value = String::new();
        loop {
            let Some(end) = self.rest().find('\'') else {
                return self.fail("unterminated quoted value");
            };
            value.push_str(&self.rest()[..end]);
            self.pos += end + 1;
            if !self.eat("'") {
                return Ok(value);
            }
            value.push('\'');
        }
    }

    /// `and` (any case) followed by at least one space.
    fn keyword_and(&mut self) -> Result<(), SearchError> {
        let rest = self.rest();
        let is_and = rest.len() > 3
            && rest.is_char_boundary(3)
            && rest[..3].eq_ignore_ascii_case("and")
            && rest[3..].starts_with(char::is_whitespace);
        if !is_and {
            return self.fail("expected 'and' between terms");
        }
        self.pos += 3;
        self.skip_spaces();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn label(key: &str, value: &str) -> Term {
        Term::LabelEquals {
            key: key.into(),
            value: value.into(),
        }
    }

    #[test]
    fn parses_label_terms_joined_by_and() {
        let search = parse_search("labels.env='it''s' and labels.shard = 'a b'").unwrap();
        assert_eq!(search.terms, [label("env", "it's"), label("shard", "a b")]);
        assert_eq!(parse_search("  ").unwrap(), Search::default());
        assert_eq!(
            parse_search("labels.x='' AND labels.y='1'")
                .unwrap()
                .terms
                .len(),
            2
        );
    }

    #[test]
    fn rejects_what_it_does_not_understand() {
        for bad in [
            "name='x'",
            "labels.='x'",
            "labels.a='x",
            "labels.a=x",
            "labels.a='x' or labels.b='y'",
            "labels.a='x' and",
            "labels.a='x'andlabels.b='y'",
        ] {
            assert!(parse_search(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn matches_on_exact_label_values() {
        let search = parse_search("labels.env='prod' and labels.team='a'").unwrap();
        assert!(search.matches(&json!({"labels": {"env": "prod", "team": "a", "x": "y"}})));
        assert!(!search.matches(&json!({"labels": {"env": "prod"}})));
        assert!(!search.matches(&json!({"labels": {"env": "prod", "team": 1}})));
        assert!(!search.matches(&json!({})));
        assert!(Search::default().matches(&json!({})));
    }
}
