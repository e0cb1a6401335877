//! Request URLs: the list and probe paths, form-style query escaping, and the TSL search string
//! built from the resource selector.
//!
//! Invariant: query values are escaped exactly as Go's `url.Values.Encode` does (space as `+`,
//! everything but ASCII alphanumerics and `-_.~` as `%XX`; [`query_escape`]), so the API sees the same bytes from
//! this sentinel as from the Go one.

use crate::common::go::query_escape;

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
    }
}
