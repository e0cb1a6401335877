//! Fault injection and request recording for the fake API.
//!
//! [`Faults`] is a script of [`FaultRule`]s consulted for every request: the first rule that
//! matches and has uses left fires and uses one up. [`Recorder`] keeps the last requests as they
//! arrived (method, raw path and query, headers) so tests can assert what a client sent.
//!
//! Invariant: a rule fires at most as many times as it was given, and rules are tried in the
//! order they were added.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// What the fake API does to a request instead of (or before) answering it normally.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Answer with this HTTP status and a problem+json body.
    Status(u16),
    /// Answer with this HTTP status, a problem+json body and this `Retry-After` header value.
    RetryAfter(u16, String),
    /// Answer 200 with this body as `application/json` (an envelope the API should not send).
    Body(String),
    /// Wait this long, then answer normally (longer than the client timeout: a timeout).
    Delay(Duration),
    /// Answer 200 with these bytes as they are and `Content-Encoding: gzip` (the compression
    /// layer leaves an encoded answer alone), whether or not the client asked: a gzip stream
    /// made elsewhere, such as a proxy's concatenated members, or not a gzip stream at all.
    Gzipped(Vec<u8>),
    /// Answer 200 with a truncated, unparseable JSON body.
    MalformedJson,
    /// Hold the request until a request for list page `page` has arrived, then answer normally;
    /// answer 409 if none arrives within [`HOLD_LIMIT`]. Proves a client has several requests in
    /// flight at once, without timing assumptions.
    HoldUntilPage(u32),
}

/// How long [`Fault::HoldUntilPage`] waits for the page it waits for.
pub const HOLD_LIMIT: Duration = Duration::from_secs(10);

/// A fault with the requests it applies to and how many times it may fire.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    /// The fault.
    pub fault: Fault,
    /// Only requests whose `page` query parameter is this (a request without one never matches).
    pub page: Option<u32>,
    /// Only requests whose path starts with this.
    pub path_prefix: Option<String>,
    /// Uses left; `None` fires forever.
    pub remaining: Option<u32>,
}

impl FaultRule {
    /// A rule firing once, on the next request.
    pub fn new(fault: Fault) -> FaultRule {
        FaultRule {
            fault,
            page: None,
            path_prefix: None,
            remaining: Some(1),
        }
    }

    /// Restricts the rule to requests for list page `page`.
    pub fn on_page(self, page: u32) -> FaultRule {
        FaultRule {
            page: Some(page),
            ..self
        }
    }

    /// Restricts the rule to paths starting with `prefix`.
    pub fn on_path(self, prefix: &str) -> FaultRule {
        FaultRule {
            path_prefix: Some(prefix.to_string()),
            ..self
        }
    }

    /// Lets the rule fire `times` times.
    pub fn times(self, times: u32) -> FaultRule {
        FaultRule {
            remaining: Some(times),
            ..self
        }
    }

    /// Lets the rule fire on every matching request.
    pub fn always(self) -> FaultRule {
        FaultRule {
            remaining: None,
            ..self
        }
    }

    fn matches(&self, path: &str, page: Option<u32>) -> bool {
        self.remaining != Some(0)
            && self.page.is_none_or(|p| page == Some(p))
            && self
                .path_prefix
                .as_deref()
                .is_none_or(|prefix| path.starts_with(prefix))
    }
}

impl From<Fault> for FaultRule {
    fn from(fault: Fault) -> FaultRule {
        FaultRule::new(fault)
    }
}

/// The fault script.
#[derive(Debug, Default)]
pub struct Faults {
    rules: Mutex<Vec<FaultRule>>,
}

impl Faults {
    /// Appends a rule.
    pub fn push(&self, rule: impl Into<FaultRule>) {
        self.lock().push(rule.into());
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The fault for a request to `path` (with the `page` query parameter, if any), using up one
    /// fire of the rule that supplies it.
    pub fn take(&self, path: &str, page: Option<u32>) -> Option<Fault> {
        let mut rules = self.lock();
        let rule = rules.iter_mut().find(|r| r.matches(path, page))?;
        if let Some(n) = &mut rule.remaining {
            *n -= 1;
        }
        let fault = rule.fault.clone();
        rules.retain(|r| r.remaining != Some(0));
        Some(fault)
    }

    fn lock(&self) -> MutexGuard<'_, Vec<FaultRule>> {
        // The rules are plain data updated in one step; a poisoned lock still holds valid rules.
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request as the fake API received it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// The method, e.g. `GET`.
    pub method: String,
    /// The path and query exactly as sent, e.g. `/api/hyperfleet/v1/clusters?page=1&size=100`.
    pub uri: String,
    /// The headers, names lowercase, values lossily decoded.
    pub headers: Vec<(String, String)>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.uri.split_once('?').map_or(&self.uri, |(path, _)| path)
    }

    /// The raw query string, `""` when there is none.
    pub fn query(&self) -> &str {
        self.uri.split_once('?').map_or("", |(_, query)| query)
    }

    /// The `page` query parameter, if present and a number.
    pub fn page(&self) -> Option<u32> {
        page_param(self.query())
    }
}

/// The `page` parameter of a raw query string, if present and a number.
pub fn page_param(query: &str) -> Option<u32> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("page="))
        .and_then(|p| p.parse().ok())
}

/// The last requests received, oldest first, at most `capacity` of them.
#[derive(Debug)]
pub struct Recorder {
    requests: Mutex<VecDeque<RecordedRequest>>,
    capacity: usize,
}

impl Recorder {
    /// A recorder keeping the last `capacity` requests.
    pub fn new(capacity: usize) -> Recorder {
        Recorder {
            requests: Mutex::new(VecDeque::new()),
            capacity,
        }
    }

    /// How many requests it keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Records a request, forgetting the oldest beyond capacity.
    pub fn record(&self, request: RecordedRequest) {
        if self.capacity == 0 {
            return;
        }
        let mut requests = self.lock();
        if requests.len() == self.capacity {
            requests.pop_front();
        }
        requests.push_back(request);
    }

    /// A copy of the recorded requests, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().iter().cloned().collect()
    }

    /// Whether a request for list page `page` has been recorded.
    pub fn saw_page(&self, page: u32) -> bool {
        self.lock().iter().any(|r| r.page() == Some(page))
    }

    /// Forgets every recorded request.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<RecordedRequest>> {
        // Each update is a single push or pop; a poisoned lock still holds a valid queue.
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_fire_in_order_and_run_out() {
        let faults = Faults::default();
        faults.push(FaultRule::new(Fault::Status(503)).on_page(2).times(2));
        faults.push(Fault::Status(500));
        assert_eq!(faults.take("/x", Some(2)), Some(Fault::Status(503)));
        assert_eq!(faults.take("/x", Some(1)), Some(Fault::Status(500)));
        assert_eq!(faults.take("/x", Some(1)), None);
        assert_eq!(faults.take("/x", None), None);
        assert_eq!(faults.take("/x", Some(2)), Some(Fault::Status(503)));
        assert_eq!(faults.take("/x", Some(2)), None);
    }

    #[test]
    fn path_rules_and_permanent_rules() {
        let faults = Faults::default();
        faults.push(FaultRule::new(Fault::MalformedJson).on_path("/a").always());
        for _ in 0..3 {
            assert_eq!(faults.take("/a/b", None), Some(Fault::MalformedJson));
        }
        assert_eq!(faults.take("/b", None), None);
        faults.clear();
        assert_eq!(faults.take("/a", None), None);
    }

    #[test]
    fn recorder_keeps_the_last_requests() {
        let recorder = Recorder::new(2);
        for page in 1..=3 {
            let uri = format!("/c?page={page}&size=1");
            recorder.record(RecordedRequest {
                method: "GET".into(),
                uri,
                headers: vec![],
            });
        }
        let pages: Vec<_> = recorder
            .requests()
            .iter()
            .map(RecordedRequest::page)
            .collect();
        assert_eq!(pages, [Some(2), Some(3)]);
        assert_eq!(recorder.requests()[0].path(), "/c");
    }
}
