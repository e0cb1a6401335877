//! The handle the poll loop and the API client start spans with ([`Tracing`]), the API GET's
//! client span ([`HttpSpan`]), the propagation headers as Go's propagators write them, and the
//! ids log lines carry ([`current_ids`]).
//!
//! Takes the provider's tracer, the propagators and the sink of the per-resource spans; gives
//! spans as `Context`s. Invariant: with tracing off ([`Tracing::off`], the default) no span,
//! context or attribute is ever built: every entry point checks the one `Option` first and
//! returns `None`.

use super::sink::Sink;
use super::spans::{self, CycleSpans, Destination};
use crate::common::textfmt::hex_into;
use opentelemetry::propagation::{Injector, TextMapPropagator as _};
use opentelemetry::trace::{
    SpanContext, SpanKind, Status, TraceContextExt as _, TraceFlags, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::BaggagePropagator;
use opentelemetry_sdk::trace::SdkTracer;
use std::borrow::Cow;
use std::sync::Arc;

use super::env::PropagatorKind;

/// A W3C trace context: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace id.
    pub trace_id: [u8; 16],
    /// The span id.
    pub span_id: [u8; 8],
    /// The trace flags (`01` sampled).
    pub flags: u8,
}

impl TraceParent {
    /// The header / extension text, written into `out` without allocating.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"00-");
        hex_into(out, &self.trace_id);
        out.push(b'-');
        hex_into(out, &self.span_id);
        out.push(b'-');
        hex_into(out, &[self.flags]);
    }
}

/// The handle spans are started with: off (the default) or a tracer and the propagators. Cheap
/// to clone.
#[derive(Clone, Default)]
pub struct Tracing(Option<Arc<Active>>);

struct Active {
    tracer: SdkTracer,
    /// `OTEL_PROPAGATORS`, in order.
    propagators: Vec<PropagatorKind>,
    sink: Sink,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Tracing(on)"
        } else {
            "Tracing(off)"
        })
    }
}

impl Tracing {
    /// Tracing on: spans from `tracer`, headers for `propagators`, resource spans to `sink`.
    pub(crate) fn on(tracer: SdkTracer, propagators: Vec<PropagatorKind>, sink: Sink) -> Tracing {
        Tracing(Some(Arc::new(Active {
            tracer,
            propagators,
            sink,
        })))
    }

    /// Tracing off: every method returns `None` and builds nothing.
    pub fn off() -> Tracing {
        Tracing(None)
    }

    /// Whether spans are started at all.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Starts an internal span `name` under `parent` (a root span for `None`) and returns the
    /// context holding it; `None` when tracing is off (then `attributes` is never called).
    pub fn start(
        &self,
        name: impl Into<Cow<'static, str>>,
        parent: Option<&Context>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Option<Context> {
        self.start_kind(name, SpanKind::Internal, parent, attributes)
    }

    /// [`Tracing::start`] with a span kind.
    pub fn start_kind(
        &self,
        name: impl Into<Cow<'static, str>>,
        kind: SpanKind,
        parent: Option<&Context>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> Option<Context> {
        let active = self.0.as_ref()?;
        let root = Context::new();
        let parent = parent.unwrap_or(&root);
        let parent_span = parent.span();
        let up = parent_span.span_context();
        if up.is_valid() && !up.is_sampled() {
            // Every sampler `OTEL_TRACES_SAMPLER` names decides a child as its parent (see
            // `spans`): the SDK would make a non-recording span with a fresh id and the
            // parent's trace, flags and state, after building its attributes and asking the
            // sampler. Made here without either.
            let context = SpanContext::new(
                up.trace_id(),
                spans::fresh_span_id(),
                up.trace_flags(),
                false,
                up.trace_state().clone(),
            );
            return Some(parent.with_remote_span_context(context));
        }
        let span = active
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_attributes(attributes())
            .start_with_context(&active.tracer, parent);
        Some(parent.with_span(span))
    }

    /// The per-resource spans of the cycle whose poll span `poll` holds; `None` when tracing
    /// is off or `poll` holds no valid span.
    pub fn cycle_spans(&self, poll: &Context, to: &Destination<'_>) -> Option<CycleSpans> {
        let active = self.0.as_ref()?;
        let span = poll.span();
        CycleSpans::new(span.span_context(), &active.sink, to)
    }

    /// Writes the propagation headers of `cx` into `headers`, as Go's propagators do: for
    /// `tracecontext`, `traceparent` (flags other than sampled cleared) and, when not empty,
    /// `tracestate`; for `baggage`, `baggage` when there is any.
    pub fn inject(&self, cx: &Context, headers: &mut reqwest::header::HeaderMap) {
        let Some(active) = &self.0 else { return };
        for kind in &active.propagators {
            match kind {
                PropagatorKind::TraceContext => {
                    let span = cx.span();
                    let sc = span.span_context();
                    if !sc.is_valid() {
                        continue;
                    }
                    let mut text = Vec::with_capacity(55);
                    TraceParent {
                        trace_id: sc.trace_id().to_bytes(),
                        span_id: sc.span_id().to_bytes(),
                        flags: sc.trace_flags().to_u8() & TraceFlags::SAMPLED.to_u8(),
                    }
                    .write(&mut text);
                    if let Ok(value) = reqwest::header::HeaderValue::from_bytes(&text) {
                        headers.insert(
                            reqwest::header::HeaderName::from_static("traceparent"),
                            value,
                        );
                    }
                    let state = sc.trace_state().header();
                    if !state.is_empty() {
                        HeaderInjector(headers).set("tracestate", state);
                    }
                }
                PropagatorKind::Baggage => {
                    BaggagePropagator::new().inject_context(cx, &mut HeaderInjector(headers));
                }
            }
        }
    }
}

/// The client span of one API GET (named `HTTP GET`, as Go's otelhttp transport names it), child
/// of the current context's span; inert when tracing is off. Ends when dropped.
pub struct HttpSpan<'a> {
    tracing: &'a Tracing,
    cx: Option<Context>,
}

impl<'a> HttpSpan<'a> {
    /// Starts the span for a GET of `url` (credentials in the URL are not recorded).
    pub fn start(tracing: &'a Tracing, url: &str) -> HttpSpan<'a> {
        let cx = tracing.0.as_ref().and_then(|_| {
            let parent = Context::current();
            tracing.start_kind("HTTP GET", SpanKind::Client, Some(&parent), || {
                let mut attrs = vec![KeyValue::new("http.request.method", "GET")];
                if let Ok(mut parsed) = reqwest::Url::parse(url) {
                    let _ = parsed.set_password(None);
                    let _ = parsed.set_username("");
                    if let Some(host) = parsed.host_str() {
                        attrs.push(KeyValue::new("server.address", host.to_string()));
                    }
                    if let Some(port) = parsed.port_or_known_default() {
                        attrs.push(KeyValue::new("server.port", i64::from(port)));
                    }
                    attrs.push(KeyValue::new("url.full", parsed.to_string()));
                }
                attrs
            })
        });
        HttpSpan { tracing, cx }
    }

    /// Adds the propagation headers of this span to the request.
    pub fn inject(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.cx {
            None => request,
            Some(cx) => {
                let mut headers = reqwest::header::HeaderMap::new();
                self.tracing.inject(cx, &mut headers);
                request.headers(headers)
            }
        }
    }

    /// Records the response status (`None`: no response, a transport error). A status of 400 or
    /// more, or no response, marks the span failed.
    pub fn answered(&self, status: Option<u16>) {
        let Some(cx) = &self.cx else { return };
        let span = cx.span();
        match status {
            Some(code) => {
                span.set_attribute(KeyValue::new("http.response.status_code", i64::from(code)));
                if code >= 400 {
                    span.set_attribute(KeyValue::new("error.type", code.to_string()));
                    span.set_status(Status::error(""));
                }
            }
            None => {
                span.set_attribute(KeyValue::new("error.type", "transport"));
                span.set_status(Status::error("request failed"));
            }
        }
    }
}

impl Drop for HttpSpan<'_> {
    fn drop(&mut self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

struct HeaderInjector<'a>(&'a mut reqwest::header::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(key.as_bytes()),
            reqwest::header::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Marks the span of `cx` failed with `description`.
pub fn fail(cx: &Context, description: &'static str) {
    cx.span().set_status(Status::error(description));
}

/// Ends the span of `cx`.
pub fn end(cx: &Context) {
    cx.span().end();
}

/// The W3C `traceparent` of the span of `cx` (`00-<trace>-<span>-<flags>`), when its span
/// context is valid.
pub fn traceparent(cx: &Context) -> Option<TraceParent> {
    let span = cx.span();
    let sc: &SpanContext = span.span_context();
    sc.is_valid().then(|| TraceParent {
        trace_id: sc.trace_id().to_bytes(),
        span_id: sc.span_id().to_bytes(),
        flags: sc.trace_flags().to_u8(),
    })
}

/// The trace and span id of the current resource span (`CycleSpans::enter`), else of the
/// current context's span, when valid (for log lines).
pub fn current_ids() -> Option<([u8; 16], [u8; 8])> {
    if let Some(ids) = spans::current() {
        return Some(ids);
    }
    Context::map_current(|cx| {
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid()
            .then(|| (sc.trace_id().to_bytes(), sc.span_id().to_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::env::{SamplerKind, TraceSettings};
    use crate::telemetry::with_exporter;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{SpanData, SpanExporter};
    use std::time::Duration;

    fn settings(vars: &[(&str, &str)]) -> TraceSettings {
        let map: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TraceSettings::from_env(&|name| map.get(name).cloned())
    }

    /// An exporter dropping what it is given.
    #[derive(Debug)]
    struct Drop;

    impl SpanExporter for Drop {
        async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
            Ok(())
        }
    }

    /// Under every sampler, a child of an unsampled cycle (its poll span, a root the same
    /// sampler decided) is what the SDK would make, a non-recording span with the parent's
    /// trace, flags and state and a fresh id, made without building its attributes.
    #[test]
    fn children_of_unsampled_roots_are_the_sdks_without_the_sdk() {
        use SamplerKind::*;
        for kind in [
            AlwaysOn,
            AlwaysOff,
            TraceIdRatio(0.5),
            ParentBasedAlwaysOn,
            ParentBasedAlwaysOff,
            ParentBasedTraceIdRatio(0.5),
        ] {
            let mut s = settings(&[]);
            s.sampler = kind;
            let telemetry = with_exporter(Drop, &s, "1.0");
            let tracing = telemetry.tracing();
            let active = tracing.0.as_ref().expect("on");
            let mut unsampled = 0;
            for _ in 0..64 {
                let poll = tracing.start("sentinel.poll", None, Vec::new).expect("on");
                let up = poll.span().span_context().clone();
                // What the SDK makes of the child.
                let sdk = active
                    .tracer
                    .span_builder("HTTP GET")
                    .with_kind(SpanKind::Client)
                    .start_with_context(&active.tracer, &poll);
                let sdk = opentelemetry::trace::Span::span_context(&sdk).clone();
                if up.is_sampled() {
                    continue;
                }
                unsampled += 1;
                assert!(!sdk.is_sampled(), "{kind:?}: the SDK samples the child");
                let mut called = false;
                let ours = tracing
                    .start_kind("HTTP GET", SpanKind::Client, Some(&poll), || {
                        called = true;
                        Vec::new()
                    })
                    .expect("on");
                assert!(!called, "{kind:?}: attributes built for an unsampled span");
                let ours = ours.span().span_context().clone();
                assert_eq!(ours.trace_id(), sdk.trace_id());
                assert_eq!(ours.trace_flags(), sdk.trace_flags());
                assert_eq!(ours.is_remote(), sdk.is_remote());
                assert_eq!(ours.trace_state(), sdk.trace_state());
                assert!(ours.is_valid());
                assert_ne!(ours.span_id(), up.span_id());
            }
            let expect_some = !matches!(kind, AlwaysOn | ParentBasedAlwaysOn);
            assert_eq!(unsampled > 0, expect_some, "{kind:?}");
            let _ = telemetry.shutdown(Duration::from_secs(1));
        }
    }

    /// The propagation headers are Go's: `traceparent` with only the sampled flag,
    /// `tracestate` only when there is one, `baggage` only when there is some.
    #[test]
    fn injected_headers_are_gos() {
        use opentelemetry::baggage::BaggageExt as _;
        use opentelemetry::trace::{SpanId, TraceId, TraceState};
        let telemetry = with_exporter(Drop, &settings(&[]), "1.0");
        let tracing = telemetry.tracing();
        let context = |flags: u8, state: TraceState| {
            Context::new().with_remote_span_context(SpanContext::new(
                TraceId::from(0x0af7651916cd43dd8448eb211c80319c),
                SpanId::from(0xb7ad6b7169203331),
                TraceFlags::new(flags),
                false,
                state,
            ))
        };
        let headers = |cx: &Context| {
            let mut map = reqwest::header::HeaderMap::new();
            tracing.inject(cx, &mut map);
            let mut pairs: Vec<(String, String)> = map
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_string()))
                .collect();
            pairs.sort();
            pairs
        };
        let tp = |flags: &str| {
            (
                "traceparent".to_string(),
                format!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-{flags}"),
            )
        };
        assert_eq!(headers(&context(0, TraceState::NONE)), [tp("00")]);
        assert_eq!(headers(&context(0xff, TraceState::NONE)), [tp("01")]);
        let state = TraceState::from_key_value([("k", "v")]).expect("state");
        assert_eq!(
            headers(&context(1, state)),
            [tp("01"), ("tracestate".into(), "k=v".into())]
        );
        let bag = context(1, TraceState::NONE).with_baggage([KeyValue::new("b", "1 2")]);
        assert_eq!(
            headers(&bag),
            [("baggage".into(), "b=1%202".into()), tp("01")]
        );
        assert!(headers(&Context::new()).is_empty());
        let none = with_exporter(Drop, &settings(&[("OTEL_PROPAGATORS", "none")]), "1.0");
        let mut map = reqwest::header::HeaderMap::new();
        none.tracing().inject(&bag, &mut map);
        assert!(map.is_empty());
        let _ = telemetry.shutdown(Duration::from_secs(1));
        let _ = none.shutdown(Duration::from_secs(1));
    }

    #[test]
    fn off_builds_nothing() {
        let off = Tracing::off();
        assert!(!off.is_on());
        let mut called = false;
        assert!(
            off.start("x", None, || {
                called = true;
                Vec::new()
            })
            .is_none()
        );
        assert!(!called, "attributes are not built when tracing is off");
    }
}
