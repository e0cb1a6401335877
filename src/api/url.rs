//! Request URLs: the list and probe paths, form-style query escaping, and the TSL search string
//! built from the resource selector.
//!
//! Invariant: query values are escaped exactly as Go's `url.Values.Encode` does (space as `+`,
//! everything but ASCII alphanumerics and `-_.~` as `%XX`; [`query_escape`]), so the API sees the same bytes from
//! this sentinel as from the Go one.

use crate::cel::time::Timestamp;
use crate::common::go::query_escape;
use crate::tsl::{Column, Literal, MAX_SEARCH_LEN, Op, Tsl};

/// The TSL search expression for a label selector: each `(label, value)` becomes
/// `labels.<label>='<value>'` with single quotes in the value doubled, entries with an empty
/// label are dropped, and the terms are sorted and joined with ` and `. `None` when no entry is
/// left, in which case the request carries no `search` parameter.
pub fn search_from_selector<I, K, V>(selector: I) -> Option<String>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut terms: Vec<String> = selector
        .into_iter()
        .filter(|(label, _)| !label.as_ref().is_empty())
        .map(|(label, value)| {
            format!(
                "labels.{}='{}'",
                label.as_ref(),
                value.as_ref().replace('\'', "''")
            )
        })
        .collect();
    if terms.is_empty() {
        return None;
    }
    terms.sort();
    Some(terms.join(" and "))
}

/// `{base}/api/hyperfleet/{version}/{resource_type}`, the collection URL without a query.
pub(crate) fn collection_url(base_url: &str, version: &str, resource_type: &str) -> String {
    format!(
        "{}/api/hyperfleet/{}/{}",
        base_url.trim_end_matches('/'),
        query_escape(version),
        query_escape(resource_type)
    )
}

/// The URL of one list page: `?page={page}&size={size}[&search={search}][&fields={fields}]`.
pub(crate) fn page_url(
    collection: &str,
    page: u32,
    size: u32,
    search: Option<&str>,
    fields: Option<&str>,
) -> String {
    let mut url = format!("{collection}?page={page}&size={size}");
    if let Some(search) = search {
        url.push_str("&search=");
        url.push_str(&query_escape(search));
    }
    if let Some(fields) = fields {
        url.push_str("&fields=");
        url.push_str(&query_escape(fields));
    }
    url
}

/// The URL of a page listed by id: `?page=1&size={size}&search=…[&fields=…]&order=id`, the
/// search being `search` ANDed with `id > '{after}'` (after the first page).
pub(crate) fn by_id_url(
    collection: &str,
    size: u32,
    search: Option<&str>,
    after: Option<&str>,
    fields: Option<&str>,
) -> String {
    let after = after.map(|id| Tsl::Compare(id_column(), Op::Gt, Literal::Str(id.into())));
    let search = match (search, after.and_then(|t| t.text_at(Timestamp::UNIX_EPOCH))) {
        (Some(s), Some(after)) => Some(format!("({s}) and {after}")),
        (None, after) => after,
        (s, None) => s.map(str::to_string),
    };
    let mut url = page_url(collection, 1, size, search.as_deref(), fields);
    url.push_str("&order=id");
    url
}

/// The text a listing by id adds to its search for an id of the API's (a UUID): `() and id >
/// '…'`. A listing after a longer id whose search would not fit the API's bound goes on by
/// page number.
pub const BY_ID_SEARCH_SLACK: usize = "() and id > ''".len() + 36;

/// Whether the search [`by_id_url`] makes of `search` after `after` fits the API's bound.
pub(crate) fn by_id_fits(search: Option<&str>, after: &str) -> bool {
    let escaped = after.len() + after.bytes().filter(|b| matches!(b, b'\'' | b'\\')).count();
    search.map_or(0, |s| s.len() + "() and ".len()) + "id > ''".len() + escaped <= MAX_SEARCH_LEN
}

/// `search` ANDed with `id in [...]` over the first of `ids` that fit the API's search length
/// (and at most `most` of them, one at least), and how many that is.
pub(crate) fn id_in_search(search: Option<&str>, ids: &[String], most: usize) -> (String, usize) {
    let text = |n: usize| {
        let literals = ids[..n].iter().map(|id| Literal::Str(id.clone())).collect();
        let in_ids = Tsl::In(id_column(), literals)
            .text_at(Timestamp::UNIX_EPOCH)
            .unwrap_or_default();
        match search {
            Some(s) => format!("({s}) and {in_ids}"),
            None => in_ids,
        }
    };
    // The most that fit (the length grows with n): a binary search over 1..=most.
    let (mut fits, mut over) = (1, ids.len().min(most).max(1) + 1);
    while over - fits > 1 {
        let mid = (fits + over) / 2;
        if text(mid).len() <= MAX_SEARCH_LEN {
            fits = mid;
        } else {
            over = mid;
        }
    }
    (text(fits), fits)
}

fn id_column() -> Column {
    Column::Text("id".into())
}

/// The connectivity probe's URL: a search no resource matches, one item at most.
pub(crate) fn probe_url(collection: &str) -> String {
    let search = search_from_selector([("non_existing_label", "value")]).unwrap_or_default();
    format!("{collection}?search={}&size=1", query_escape(&search))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_terms_are_quoted_sorted_and_joined() {
        let selector = [("shard", "b"), ("", "dropped"), ("env", "it's")];
        assert_eq!(
            search_from_selector(selector).as_deref(),
            Some("labels.env='it''s' and labels.shard='b'")
        );
        assert_eq!(search_from_selector(Vec::<(String, String)>::new()), None);
        assert_eq!(search_from_selector([("", "x")]), None);
    }

    #[test]
    fn urls_have_the_documented_shape() {
        let collection = collection_url("http://h:1/", "v1", "clusters");
        assert_eq!(collection, "http://h:1/api/hyperfleet/v1/clusters");
        assert_eq!(
            page_url(&collection, 2, 50, Some("labels.a='b'"), None),
            "http://h:1/api/hyperfleet/v1/clusters?page=2&size=50&search=labels.a%3D%27b%27"
        );
        assert_eq!(
            probe_url(&collection),
            "http://h:1/api/hyperfleet/v1/clusters\
             ?search=labels.non_existing_label%3D%27value%27&size=1"
        );
        assert_eq!(
            by_id_url(
                &collection,
                5,
                Some("a = 'x' or b = 1"),
                Some("c'1"),
                Some("id")
            ),
            "http://h:1/api/hyperfleet/v1/clusters?page=1&size=5\
             &search=%28a+%3D+%27x%27+or+b+%3D+1%29+and+id+%3E+%27c%5C%271%27&fields=id&order=id"
        );
        assert!(by_id_url(&collection, 5, None, None, None).ends_with("?page=1&size=5&order=id"));
    }

    #[test]
    fn id_searches_fit_the_api_bound() {
        let ids: Vec<String> = (0..100).map(|i| format!("{i:048}")).collect();
        let (search, n) = id_in_search(Some("generation = 1"), &ids, 100);
        assert!(
            search.len() <= MAX_SEARCH_LEN && n < 100,
            "{n} {}",
            search.len()
        );
        // One more does not fit.
        assert_eq!(
            id_in_search(Some("generation = 1"), &ids[..n + 1], 100).1,
            n
        );
        assert!(
            search.starts_with("(generation = 1) and id in ['000"),
            "{search}"
        );
        assert_eq!(id_in_search(None, &ids[..3], 2).1, 2);
        // One id always goes, whatever its length (the API says what it makes of it).
        let long = vec!["x".repeat(5000)];
        assert_eq!(id_in_search(None, &long, 100).1, 1);
        // The slack covers the API's ids; whether a longer one fits is said exactly.
        let uuid = "0190f2a4-7b1c-7d3e-8f00-123456789abc";
        let url = by_id_url("", 1, Some("x = 1"), Some(uuid), None);
        let search = url
            .split("search=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap();
        let search = search
            .replace("%28", "(")
            .replace("%29", ")")
            .replace('+', " ");
        let search = search
            .replace("%3D", "=")
            .replace("%3E", ">")
            .replace("%27", "'");
        assert_eq!(search.len(), "x = 1".len() + BY_ID_SEARCH_SLACK, "{search}");
        let quotes = "'\\".repeat(2000);
        assert!(by_id_fits(Some("x = 1"), uuid));
        assert!(!by_id_fits(Some("x = 1"), &quotes));
        let text = Tsl::Compare(id_column(), Op::Gt, Literal::Str(quotes[..1500].into()));
        let len = format!(
            "(x = 1) and {}",
            text.text_at(Timestamp::UNIX_EPOCH).unwrap()
        )
        .len();
        assert_eq!(
            by_id_fits(Some("x = 1"), &quotes[..1500]),
            len <= MAX_SEARCH_LEN
        );
    }
}
