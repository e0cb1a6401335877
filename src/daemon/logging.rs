//! Logging in the Go sentinel's formats: JSON lines with `timestamp` (RFC 3339 UTC), `level`,
//! `message`, `component`, `version`, `hostname`, then `error`, `decision_reason`, `topic`,
//! `subset` where set and any other fields under `extra`; or the text format
//! `{timestamp} {LEVEL} [{component}] [{version}] [{hostname}] {message} key=value…`.
//!
//! A field whose name has a dot (`checks.broker`) is nested under `extra` (`"checks":
//! {"broker": …}`), as Go's map-valued extras are. In text lines control characters of the
//! message and of every value are escaped (`\n`, `\u{1b}`), so a resource id cannot forge a
//! log line or drive a terminal; JSON escapes them by itself.
//!
//! A line written while an OpenTelemetry span is current (tracing on) carries `trace_id` and
//! `span_id`: in JSON after `extra`, as Go's field order has it; in text before the other fields.
//!
//! Invariant: the named fields are never duplicated under `extra`.

use std::fmt::{self, Write as _};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// How logs are written.
#[derive(Clone, Debug)]
pub struct LogSettings {
    /// The least severe level written.
    pub level: Level,
    /// JSON lines (default) or text.
    pub json: bool,
    /// Standard error instead of standard output.
    pub stderr: bool,
    /// The `version` field.
    pub version: String,
}

/// The event formatter.
#[derive(Clone, Debug)]
pub struct GoFormat {
    json: bool,
    version: String,
    hostname: String,
}

impl GoFormat {
    /// A formatter for JSON (`json`) or text lines.
    pub fn new(json: bool, version: &str) -> GoFormat {
        GoFormat {
            json,
            version: version.to_string(),
            hostname: hostname(),
        }
    }
}

/// The host name as Go's `os.Hostname` finds it: `/proc/sys/kernel/hostname`, else the
/// kernel's `uname` node name (never empty in a container, where `/proc` may be masked and
/// `$HOSTNAME` unset); `$HOSTNAME` only if both say nothing.
fn hostname() -> String {
    let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    let uname = || {
        rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned()
    };
    first_hostname([proc, Some(uname()), std::env::var("HOSTNAME").ok()])
}

/// The first non-blank candidate, trimmed; `""` if none.
fn first_hostname(candidates: impl IntoIterator<Item = Option<String>>) -> String {
    candidates
        .into_iter()
        .flatten()
        .map(|s| s.trim().to_string())
        .find(|s| !s.is_empty())
        .unwrap_or_default()
}

/// Installs the global subscriber. Calling it twice is harmless (the first wins).
pub fn init(settings: &LogSettings) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let format = GoFormat::new(settings.json, &settings.version);
    let direct = Direct {
        format: format.clone(),
        stderr: settings.stderr,
        info: settings.level >= Level::INFO,
    };
    let layer = tracing_subscriber::fmt::layer().event_format(format);
    let registry = tracing_subscriber::registry();
    let installed = if settings.stderr {
        let layer = layer.with_writer(std::io::stderr);
        registry
            .with(layer.with_filter(filter(settings.level)))
            .try_init()
    } else {
        let layer = layer.with_writer(std::io::stdout);
        registry
            .with(layer.with_filter(filter(settings.level)))
            .try_init()
    };
    if installed.is_ok() {
        let _ = DIRECT.set(direct);
    }
}

/// The `decision_reason` of a `Published event` line.
const PUBLISHED_REASON: &str = "message decision matched";

/// The logger [`init`] installed, for the lines written without `tracing` ([`published`]).
static DIRECT: std::sync::OnceLock<Direct> = std::sync::OnceLock::new();

struct Direct {
    format: GoFormat,
    stderr: bool,
    /// Whether INFO lines are written.
    info: bool,
}

/// The `Published event resource_id=<id>` line (INFO, with `decision_reason`, `topic` and
/// `subset`, under the current span) of one topic and resource type: the one line written per
/// event. When [`init`]'s logger is the one in use, its bytes are the bytes `info!` would give
/// it, made without `tracing`'s dispatch and field visitors: the parts around the id, built once
/// by the same formatter (`GoFormat::published_parts`), then per line the time, the id and the
/// span ids. Under any other subscriber (a test's own) it goes through `info!`.
#[derive(Debug)]
pub struct PublishedLog {
    topic: String,
    subset: String,
    to: PublishedTo,
}

#[derive(Debug)]
enum PublishedTo {
    /// Not [`init`]'s logger: through `info!`.
    Tracing,
    /// INFO is not written.
    Off,
    /// Straight to the output.
    Direct { parts: PublishedParts, stderr: bool },
}

/// A `Published event` line but its time, id and span ids.
#[derive(Debug)]
struct PublishedParts {
    json: bool,
    /// From after the time through `resource_id=`.
    head: String,
    /// After the id (and the span ids of a text line); without its closing `}` in JSON.
    tail: String,
}

impl PublishedLog {
    /// The line for events of `subset` resources to `topic`, as the installed logger writes it.
    pub fn new(topic: &str, subset: &str) -> PublishedLog {
        let to = match DIRECT.get() {
            None => PublishedTo::Tracing,
            Some(d) if !d.info => PublishedTo::Off,
            Some(d) => PublishedTo::Direct {
                parts: d.format.published_parts(topic, subset),
                stderr: d.stderr,
            },
        };
        PublishedLog {
            topic: topic.to_string(),
            subset: subset.to_string(),
            to,
        }
    }

    /// Logs the line of resource `id`.
    pub fn log(&self, id: &str) {
        use std::io::Write as _;
        let (parts, stderr) = match &self.to {
            PublishedTo::Direct { parts, stderr } => (parts, *stderr),
            PublishedTo::Off => return,
            PublishedTo::Tracing => {
                tracing::info!(
                    decision_reason = PUBLISHED_REASON,
                    topic = self.topic.as_str(),
                    subset = self.subset.as_str(),
                    "Published event resource_id={id}"
                );
                return;
            }
        };
        let write = |scratch: &mut Scratch| {
            let line = parts.line(scratch, id, crate::telemetry::current_ids());
            // One write per line, as the fmt layer's (stdout through its lock and buffer).
            let _ = if stderr {
                std::io::stderr().write_all(line)
            } else {
                std::io::stdout().lock().write_all(line)
            };
        };
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => write(&mut scratch),
            Err(_) => write(&mut Scratch::default()),
        });
    }
}

impl PublishedParts {
    /// The line of `id` under the span `ids`, stamped now, in `scratch`.
    fn line<'s>(
        &self,
        scratch: &'s mut Scratch,
        id: &str,
        ids: Option<([u8; 16], [u8; 8])>,
    ) -> &'s [u8] {
        let out = &mut scratch.time;
        out.clear();
        if self.json {
            out.extend_from_slice(br#"{"timestamp":""#);
        }
        crate::common::textfmt::rfc3339_utc(out, std::time::SystemTime::now());
        out.extend_from_slice(self.head.as_bytes());
        // Escaped alone as within the message: both formats escape character by character.
        if self.json {
            if crate::common::textfmt::json_plain(id) {
                out.extend_from_slice(id.as_bytes());
            } else {
                let quoted = serde_json::to_string(id).unwrap_or_default();
                out.extend_from_slice(&quoted.as_bytes()[1..quoted.len() - 1]);
            }
            out.extend_from_slice(self.tail.as_bytes());
            if let Some((trace_id, span_id)) = ids {
                out.extend_from_slice(br#","trace_id":""#);
                crate::common::textfmt::hex_into(out, &trace_id);
                out.extend_from_slice(br#"","span_id":""#);
                crate::common::textfmt::hex_into(out, &span_id);
                out.push(b'"');
            }
            out.extend_from_slice(b"}\n");
        } else {
            if crate::common::textfmt::printable_ascii(id) {
                out.extend_from_slice(id.as_bytes());
            } else {
                let text = &mut scratch.text;
                text.clear();
                push_escaped(text, id);
                out.extend_from_slice(text.as_bytes());
            }
            if let Some((trace_id, span_id)) = ids {
                out.extend_from_slice(b" trace_id=");
                crate::common::textfmt::hex_into(out, &trace_id);
                out.extend_from_slice(b" span_id=");
                crate::common::textfmt::hex_into(out, &span_id);
            }
            out.extend_from_slice(self.tail.as_bytes());
            out.push(b'\n');
        }
        out
    }
}

/// Runs `f` with Go's default logger as the thread's logger: JSON lines at info level on
/// standard output. The Go sentinel logs its configuration loading (`Loading configuration
/// from …`, `Configuration loaded successfully: …`) with that logger, before the configured one
/// exists, whatever `log.format` and `log.output` the file then asks for.
pub fn with_startup_logger<T>(version: &str, f: impl FnOnce() -> T) -> T {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt;
    let layer = tracing_subscriber::fmt::layer()
        .event_format(GoFormat::new(true, version))
        .with_writer(std::io::stdout)
        .with_filter(filter(Level::INFO));
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), f)
}

/// The configured level for the sentinel's own records; every other crate (reqwest, hyper,
/// rustls, lapin, Cranelift, …) shows only from warn up, so debug level shows what the sentinel
/// does rather than every TLS record and AMQP frame.
fn filter(level: Level) -> tracing_subscriber::filter::Targets {
    use tracing_subscriber::filter::LevelFilter;
    let level = LevelFilter::from_level(level);
    tracing_subscriber::filter::Targets::new()
        .with_default(level.min(LevelFilter::WARN))
        .with_target(env!("CARGO_CRATE_NAME"), level)
}

/// Appends `text` with its control characters escaped (`\n`, `\r`, `\t`, else `\u{…}`).
fn push_escaped(out: &mut String, text: &str) {
    // Printable ASCII (the common case) is checked byte by byte; only text with other bytes is
    // decoded to look for control characters (C1 controls are two-byte sequences).
    if crate::common::textfmt::printable_ascii(text) || !text.chars().any(char::is_control) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

#[derive(Clone, Default)]
struct Fields {
    message: String,
    error: Option<String>,
    decision_reason: Option<String>,
    topic: Option<String>,
    subset: Option<String>,
    extra: Vec<(&'static str, serde_json::Value)>,
    /// The current span's trace and span id, hex.
    trace: Option<(String, String)>,
    /// The frames of an ERROR line's `stack_trace` (empty on other levels).
    stack: Vec<String>,
    /// Cleared strings of earlier lines, reused for the optional fields ([`Fields::reset`]).
    spare: Vec<String>,
}

/// A thread's fields and line buffers, reused line after line: a line allocates nothing once
/// its thread has written one of its shape.
#[derive(Default)]
struct Scratch {
    fields: Fields,
    time: Vec<u8>,
    text: String,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// An ERROR line's `stack_trace`, as Go's logger adds one to every error-level line: the error
/// site, `<module> <file>:<line>` (Go: `<function>() <file>:<line>`), taken from the log
/// call's own metadata. One frame, not Go's up to 15: the image's binary is stripped (no symbols
/// to name callers with), and the callers of an async fn are the executor's poll frames, which
/// say nothing about the error.
fn stack_trace(meta: &tracing::Metadata<'_>) -> Vec<String> {
    let module = meta.module_path().unwrap_or(meta.target());
    match (meta.file(), meta.line()) {
        (Some(file), Some(line)) => vec![format!("{module} {file}:{line}")],
        _ => vec![module.to_string()],
    }
}

/// The `extra` object of a line's other fields: a dotted name (`checks.broker`) nests under
/// its first part, as Go's map-valued extras do.
fn extra_object(
    fields: &[(&'static str, serde_json::Value)],
) -> serde_json::Map<String, serde_json::Value> {
    let mut extra = serde_json::Map::new();
    for (key, value) in fields.iter().cloned() {
        match key.split_once('.') {
            Some((outer, inner)) => {
                let nested = extra
                    .entry(outer)
                    .or_insert_with(|| serde_json::Value::Object(Default::default()));
                if let serde_json::Value::Object(nested) = nested {
                    nested.insert(inner.to_string(), value);
                }
            }
            None => {
                extra.insert(key.to_string(), value);
            }
        }
    }
    extra
}

/// `bytes` as lowercase hex into `out`.
fn hex_to(out: &mut String, bytes: &[u8]) {
    let mut text = [0u8; 32];
    out.push_str(crate::common::textfmt::hex(&mut text, bytes));
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match self.named(field.name()) {
            Some(slot) => slot.push_str(value),
            None => self
                .extra
                .push((field.name(), serde_json::Value::String(value.to_string()))),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_value(field, &value, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.record_value(field, &value, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.record_value(field, &value, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.record_value(field, &value, value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match self.named(field.name()) {
            Some(slot) => {
                let _ = write!(slot, "{value:?}");
            }
            None => {
                // Sized for a usual value at once: `format!` would grow it from nothing, a
                // reallocation per doubling.
                let mut text = String::with_capacity(64);
                let _ = write!(text, "{value:?}");
                self.extra
                    .push((field.name(), serde_json::Value::String(text)));
            }
        }
    }
}

impl Fields {
    /// A number or bool: its text for a named field, its JSON value under `extra`.
    fn record_value(&mut self, field: &Field, text: &dyn fmt::Display, json: serde_json::Value) {
        match self.named(field.name()) {
            Some(slot) => {
                let _ = write!(slot, "{text}");
            }
            None => self.extra.push((field.name(), json)),
        }
    }

    /// The (emptied) string of a named field, set from now on; `None` for the others.
    fn named(&mut self, name: &'static str) -> Option<&mut String> {
        let slot = match name {
            "message" => {
                self.message.clear();
                return Some(&mut self.message);
            }
            "error" => &mut self.error,
            "decision_reason" => &mut self.decision_reason,
            "topic" => &mut self.topic,
            "subset" => &mut self.subset,
            _ => return None,
        };
        let text = match slot.take() {
            Some(mut text) => {
                text.clear();
                text
            }
            None => self.spare.pop().unwrap_or_default(),
        };
        Some(slot.insert(text))
    }

    /// Empties the fields for the next line, keeping their strings' memory.
    fn reset(&mut self) {
        self.message.clear();
        for slot in [
            &mut self.error,
            &mut self.decision_reason,
            &mut self.topic,
            &mut self.subset,
        ] {
            if let Some(mut text) = slot.take() {
                text.clear();
                self.spare.push(text);
            }
        }
        if let Some((mut t, mut s)) = self.trace.take() {
            t.clear();
            s.clear();
            self.spare.push(t);
            self.spare.push(s);
        }
        self.extra.clear();
        self.stack.clear();
    }

    /// Sets the trace and span id, hex.
    fn set_trace(&mut self, ids: Option<([u8; 16], [u8; 8])>) {
        if let Some((trace_id, span_id)) = ids {
            let mut t = self.spare.pop().unwrap_or_default();
            let mut s = self.spare.pop().unwrap_or_default();
            hex_to(&mut t, &trace_id);
            hex_to(&mut s, &span_id);
            self.trace = Some((t, s));
        }
    }
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        _ => "debug",
    }
}

impl<S, N> FormatEvent<S, N> for GoFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => self.format_into(&mut scratch, &mut writer, event),
            // A line logged while formatting one (from a value's Debug): fresh buffers.
            Err(_) => self.format_into(&mut Scratch::default(), &mut writer, event),
        })
    }
}

impl GoFormat {
    fn format_into(
        &self,
        scratch: &mut Scratch,
        writer: &mut Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let Scratch {
            fields: f,
            time,
            text,
        } = scratch;
        f.reset();
        event.record(f);
        f.set_trace(crate::telemetry::current_ids());
        let level = level_name(event.metadata().level());
        if *event.metadata().level() == Level::ERROR {
            f.stack = stack_trace(event.metadata());
        }
        self.line(time, text, level, f);
        writer.write_str(text)
    }

    /// The parts of a `Published event` line around its time and id: the line of an empty id
    /// with an empty time, as [`GoFormat::line`] writes it, cut after `resource_id=`.
    fn published_parts(&self, topic: &str, subset: &str) -> PublishedParts {
        const MESSAGE: &str = "Published event resource_id=";
        let f = Fields {
            message: MESSAGE.to_string(),
            decision_reason: Some(PUBLISHED_REASON.to_string()),
            topic: Some(topic.to_string()),
            subset: Some(subset.to_string()),
            ..Fields::default()
        };
        let mut line = String::new();
        if self.json {
            self.write_json_line(&mut line, "", "info", &f);
        } else {
            self.write_text_line(&mut line, "", "info", &f);
        }
        let line = match self.json {
            true => line
                .strip_prefix(r#"{"timestamp":""#)
                .and_then(|l| l.strip_suffix('}'))
                .unwrap_or_default(),
            false => &line,
        };
        let cut = line.find(MESSAGE).map_or(0, |at| at + MESSAGE.len());
        PublishedParts {
            json: self.json,
            head: line[..cut].to_string(),
            tail: line[cut..].to_string(),
        }
    }

    /// The line of `f` at `level`, stamped now, into `text` (through `time`).
    fn line(&self, time: &mut Vec<u8>, text: &mut String, level: &str, f: &Fields) {
        time.clear();
        crate::common::textfmt::rfc3339_utc(time, std::time::SystemTime::now());
        let timestamp = std::str::from_utf8(time).unwrap_or_default();
        text.clear();
        if self.json {
            self.write_json_line(text, timestamp, level, f);
        } else {
            self.write_text_line(text, timestamp, level, f);
        }
        text.push('\n');
    }

    /// A JSON line, written field by field in Go's order (the bytes serde_json gives a map of
    /// them, without building one: only `extra`, when there is one, goes through a map).
    #[cfg(test)]
    fn json_line(&self, timestamp: &str, level: &str, f: Fields) -> String {
        let mut out = String::new();
        self.write_json_line(&mut out, timestamp, level, &f);
        out
    }

    /// [`GoFormat::json_line`] into `out` (empty).
    fn write_json_line(&self, out: &mut String, timestamp: &str, level: &str, f: &Fields) {
        // The keys are constants with nothing to escape.
        let field = |out: &mut String, key: &str, value: &str| {
            out.push(if out.is_empty() { '{' } else { ',' });
            out.push('"');
            out.push_str(key);
            out.push_str("\":");
            crate::common::textfmt::json_str(out, value);
        };
        field(out, "timestamp", timestamp);
        field(out, "level", level);
        field(out, "message", &f.message);
        field(out, "component", "sentinel");
        field(out, "version", &self.version);
        field(out, "hostname", &self.hostname);
        // Go logs an error-level line with `error` set to the message when no error was given.
        let error = f
            .error
            .as_deref()
            .or_else(|| (level == "error").then_some(f.message.as_str()));
        for (key, value) in [
            ("error", error),
            ("decision_reason", f.decision_reason.as_deref()),
            ("topic", f.topic.as_deref()),
            ("subset", f.subset.as_deref()),
        ] {
            if let Some(v) = value {
                field(out, key, v);
            }
        }
        if !f.extra.is_empty() {
            out.push_str(r#","extra":"#);
            out.push_str(&serde_json::to_string(&extra_object(&f.extra)).unwrap_or_default());
        }
        if let Some((trace_id, span_id)) = &f.trace {
            field(out, "trace_id", trace_id);
            field(out, "span_id", span_id);
        }
        if !f.stack.is_empty() {
            out.push_str(r#","stack_trace":"#);
            out.push_str(&serde_json::to_string(&f.stack).unwrap_or_default());
        }
        out.push('}');
    }

    #[cfg(test)]
    fn text_line(&self, timestamp: &str, level: &str, f: Fields) -> String {
        let mut line = String::new();
        self.write_text_line(&mut line, timestamp, level, &f);
        line
    }

    /// The text line (Go's layout) into `line` (empty).
    fn write_text_line(&self, line: &mut String, timestamp: &str, level: &str, f: &Fields) {
        let level = match level {
            "error" => "ERROR",
            "warn" => "WARN",
            "info" => "INFO",
            _ => "DEBUG",
        };
        for part in [timestamp, " ", level, " [sentinel] [", &self.version, "] ["] {
            line.push_str(part);
        }
        line.push_str(&self.hostname);
        line.push_str("] ");
        push_escaped(line, &f.message);
        if let Some((trace_id, span_id)) = &f.trace {
            for part in [" trace_id=", trace_id, " span_id=", span_id] {
                line.push_str(part);
            }
        }
        for (key, value) in [
            ("decision_reason", &f.decision_reason),
            ("topic", &f.topic),
            ("subset", &f.subset),
        ] {
            if let Some(v) = value {
                line.push(' ');
                line.push_str(key);
                line.push('=');
                push_escaped(line, v);
            }
        }
        for (k, v) in &f.extra {
            let _ = write!(line, " {k}=");
            match v {
                serde_json::Value::String(s) => push_escaped(line, s),
                other => push_escaped(line, &other.to_string()),
            }
        }
        if let Some(e) = f.error.as_ref().filter(|e| **e != f.message) {
            line.push_str(" error=\"");
            push_escaped(line, e);
            line.push('"');
        }
        // Go writes the frames indented below the line, one per line.
        for frame in &f.stack {
            line.push_str("\n    ");
            push_escaped(line, frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_carry_the_error_site_as_stack_trace() {
        let frame = "sentinel::daemon::runtime src/daemon/runtime.rs:369".to_string();
        let f = Fields {
            message: "Trigger failed: failed to fetch resources".into(),
            error: Some("api down".into()),
            stack: vec![frame.clone()],
            ..Fields::default()
        };
        let json = GoFormat {
            json: true,
            version: "1.0".into(),
            hostname: "h".into(),
        };
        let line = json.json_line("2025-01-01T00:00:00Z", "error", f.clone());
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(v["stack_trace"], serde_json::json!([frame]));
        let text = GoFormat {
            json: false,
            ..json
        };
        assert_eq!(
            text.text_line("2025-01-01T00:00:00Z", "error", f),
            format!(
                "2025-01-01T00:00:00Z ERROR [sentinel] [1.0] [h] Trigger failed: failed to fetch \
                 resources error=\"api down\"\n    {frame}"
            )
        );
    }

    /// The frame comes from the log call itself: this file and the line of the `error!`.
    #[test]
    fn the_stack_frame_is_the_log_call_site() {
        struct Capture(std::sync::Mutex<Vec<Vec<String>>>);
        impl tracing::Subscriber for Capture {
            fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
                true
            }
            fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
                tracing::span::Id::from_u64(1)
            }
            fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
            fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
            fn event(&self, event: &Event<'_>) {
                self.0.lock().unwrap().push(stack_trace(event.metadata()));
            }
            fn enter(&self, _: &tracing::span::Id) {}
            fn exit(&self, _: &tracing::span::Id) {}
        }
        let capture = std::sync::Arc::new(Capture(Default::default()));
        let line = line!() + 2;
        tracing::subscriber::with_default(capture.clone(), || {
            tracing::error!("boom");
        });
        let frames = capture.0.lock().unwrap().clone();
        assert_eq!(
            frames,
            [vec![format!(
                "sentinel::daemon::logging::tests src/daemon/logging.rs:{line}"
            )]]
        );
    }

    #[test]
    fn hostname_falls_back_to_uname() {
        let uname = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        assert!(!uname.is_empty());
        // No /proc and no $HOSTNAME: the uname node name, as Go's os.Hostname.
        assert_eq!(first_hostname([None, Some(uname.clone()), None]), uname);
        assert_eq!(
            first_hostname([Some("pod-1\n".into()), Some(uname.clone()), None]),
            "pod-1"
        );
        assert_eq!(
            first_hostname([Some(" \n".into()), Some(String::new()), Some("h".into())]),
            "h"
        );
        assert_eq!(first_hostname([None, None, None]), "");
        assert!(!hostname().is_empty());
    }

    #[test]
    fn other_crates_log_only_warnings() {
        let f = filter(Level::DEBUG);
        assert!(f.would_enable("sentinel::daemon::runtime", &Level::DEBUG));
        assert!(f.would_enable("sentinel", &Level::DEBUG));
        for noisy in [
            "lapin::channel",
            "reqwest::connect",
            "hyper_util::client",
            "rustls::conn",
        ] {
            assert!(!f.would_enable(noisy, &Level::DEBUG), "{noisy}");
            assert!(!f.would_enable(noisy, &Level::INFO), "{noisy}");
            assert!(f.would_enable(noisy, &Level::WARN), "{noisy}");
        }
        assert!(!f.would_enable("cranelift_jit::backend", &Level::INFO));
        assert!(f.would_enable("cranelift_jit::backend", &Level::WARN));
        assert!(!filter(Level::ERROR).would_enable("cranelift_codegen", &Level::WARN));
        assert!(!filter(Level::ERROR).would_enable("sentinel::cmd", &Level::WARN));
    }

    #[test]
    fn text_lines_escape_control_characters() {
        let g = GoFormat {
            json: false,
            version: "1.0".into(),
            hostname: "h".into(),
        };
        let forged = Fields {
            message: "Published event resource_id=c1\n2025-01-01T00:00:00Z INFO fake \u{1b}[31m"
                .into(),
            topic: Some("t\r".into()),
            extra: vec![("id", "a\tb\u{7}".into())],
            error: Some("bad\nthing".into()),
            ..Fields::default()
        };
        let line = g.text_line("2025-01-01T00:00:00Z", "error", forged);
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert_eq!(
            line,
            r#"2025-01-01T00:00:00Z ERROR [sentinel] [1.0] [h] Published event resource_id=c1\n2025-01-01T00:00:00Z INFO fake \u{1b}[31m topic=t\r id=a\tb\u{7} error="bad\nthing""#
        );
    }

    #[test]
    fn dotted_fields_nest_under_extra() {
        let g = GoFormat {
            json: true,
            version: "1.0".into(),
            hostname: "h".into(),
        };
        let f = Fields {
            message: "Readyz check failed".into(),
            extra: vec![
                ("checks.broker", "down".into()),
                ("checks.sentinel_poll", "ok".into()),
            ],
            ..Fields::default()
        };
        let line = g.json_line("2025-01-01T00:00:00Z", "warn", f);
        assert!(
            line.ends_with(r#""extra":{"checks":{"broker":"down","sentinel_poll":"ok"}}}"#),
            "{line}"
        );
    }

    fn fields() -> Fields {
        Fields {
            message: "Published event resource_id=c1".into(),
            decision_reason: Some("message decision matched".into()),
            topic: Some("clusters".into()),
            subset: Some("clusters".into()),
            extra: vec![("count", 3.into())],
            ..Fields::default()
        }
    }

    #[test]
    fn json_lines_have_the_go_keys_in_order() {
        let g = GoFormat {
            json: true,
            version: "1.0".into(),
            hostname: "h".into(),
        };
        let line = g.json_line("2025-01-01T00:00:00Z", "info", fields());
        assert_eq!(
            line,
            r#"{"timestamp":"2025-01-01T00:00:00Z","level":"info","message":"Published event resource_id=c1","component":"sentinel","version":"1.0","hostname":"h","decision_reason":"message decision matched","topic":"clusters","subset":"clusters","extra":{"count":3}}"#
        );
    }

    /// The JSON line as a map of its fields, serialized (what `json_line` writes directly).
    fn json_line_through_a_map(g: &GoFormat, timestamp: &str, level: &str, f: Fields) -> String {
        let s = |v: &str| serde_json::Value::String(v.to_string());
        let mut obj = serde_json::Map::new();
        for (k, v) in [
            ("timestamp", timestamp),
            ("level", level),
            ("message", &f.message),
            ("component", "sentinel"),
            ("version", &g.version),
            ("hostname", &g.hostname),
        ] {
            obj.insert(k.into(), s(v));
        }
        let error = f
            .error
            .clone()
            .or_else(|| (level == "error").then(|| f.message.clone()));
        for (k, v) in [
            ("error", error),
            ("decision_reason", f.decision_reason.clone()),
            ("topic", f.topic.clone()),
            ("subset", f.subset.clone()),
        ] {
            if let Some(v) = v {
                obj.insert(k.into(), s(&v));
            }
        }
        if !f.extra.is_empty() {
            obj.insert(
                "extra".into(),
                serde_json::Value::Object(extra_object(&f.extra)),
            );
        }
        if let Some((t, sp)) = &f.trace {
            obj.insert("trace_id".into(), s(t));
            obj.insert("span_id".into(), s(sp));
        }
        if !f.stack.is_empty() {
            obj.insert("stack_trace".into(), f.stack.clone().into());
        }
        serde_json::Value::Object(obj).to_string()
    }

    #[test]
    fn json_lines_are_the_bytes_of_their_fields_as_a_map() {
        let g = GoFormat {
            json: true,
            version: "1.0\"x".into(),
            hostname: "h\u{1}<&>".into(),
        };
        let odd = "a\"b\\c\n\u{7f}\u{85}é\u{2028}<>&\t";
        let cases = [
            fields(),
            Fields::default(),
            Fields {
                message: odd.into(),
                error: Some(odd.into()),
                decision_reason: Some(String::new()),
                extra: vec![
                    ("checks.broker", "ok".into()),
                    ("checks.api", 2.5.into()),
                    ("n", (-1).into()),
                    (".x", true.into()),
                    ("y.", serde_json::Value::Null),
                ],
                trace: Some(("00ff".into(), "ab".into())),
                stack: vec!["sentinel::daemon::runtime src/daemon/runtime.rs:1".into()],
                ..Fields::default()
            },
            Fields {
                message: "failed".into(),
                topic: Some(odd.into()),
                subset: Some("s".into()),
                ..Fields::default()
            },
        ];
        for f in cases {
            for level in ["info", "error", "warn", "debug"] {
                let want = json_line_through_a_map(&g, "2025-01-01T00:00:00.5Z", level, f.clone());
                let got = g.json_line("2025-01-01T00:00:00.5Z", level, f.clone());
                assert_eq!(got, want);
                serde_json::from_str::<serde_json::Value>(&got).expect("valid JSON");
            }
        }
    }

    #[test]
    fn escaping_looks_past_ascii_for_c1_controls() {
        let mut out = String::new();
        push_escaped(&mut out, "plain ascii ~");
        push_escaped(&mut out, "é ü");
        push_escaped(&mut out, "a\u{85}b\u{7f}");
        assert_eq!(out, "plain ascii ~é üa\\u{85}b\\u{7f}");
    }

    #[test]
    fn text_lines_match_the_go_layout() {
        let g = GoFormat {
            json: false,
            version: "1.0".into(),
            hostname: "h".into(),
        };
        let line = g.text_line("2025-01-01T00:00:00Z", "info", fields());
        assert_eq!(
            line,
            "2025-01-01T00:00:00Z INFO [sentinel] [1.0] [h] Published event resource_id=c1 decision_reason=message decision matched topic=clusters subset=clusters count=3"
        );
    }

    // ---- trace ids ----

    fn traced() -> Fields {
        Fields {
            trace: Some((
                "0af7651916cd43dd8448eb211c80319c".into(),
                "b7ad6b7169203331".into(),
            )),
            ..fields()
        }
    }

    #[test]
    fn json_lines_carry_trace_ids_after_extra() {
        let g = GoFormat {
            json: true,
            version: "1.0".into(),
            hostname: "h".into(),
        };
        let line = g.json_line("2025-01-01T00:00:00Z", "info", traced());
        assert!(
            line.ends_with(r#""extra":{"count":3},"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"}"#),
            "{line}"
        );
    }

    #[test]
    fn text_lines_carry_trace_ids_before_the_fields() {
        let g = GoFormat {
            json: false,
            version: "1.0".into(),
            hostname: "h".into(),
        };
        let line = g.text_line("2025-01-01T00:00:00Z", "info", traced());
        assert_eq!(
            line,
            "2025-01-01T00:00:00Z INFO [sentinel] [1.0] [h] Published event resource_id=c1 trace_id=0af7651916cd43dd8448eb211c80319c span_id=b7ad6b7169203331 decision_reason=message decision matched topic=clusters subset=clusters count=3"
        );
    }

    #[test]
    fn no_span_no_trace_fields() {
        assert_eq!(crate::telemetry::current_ids(), None);
    }

    /// A writer keeping what the fmt layer writes.
    #[derive(Clone, Default)]
    struct Out(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Out {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The `Published event` line made without `tracing` is the line `info!` makes, in both
    /// formats, with and without a current span, for ids with and without characters to escape.
    #[test]
    fn published_lines_are_the_info_lines() {
        use tracing_subscriber::layer::SubscriberExt as _;
        // The timestamp is the line's own: compared without it.
        let untimed = |line: &str| -> String {
            match line.strip_prefix(r#"{"timestamp":""#) {
                Some(rest) => rest.split_once('"').map(|(_, r)| r.to_string()),
                None => line.split_once(' ').map(|(_, r)| r.to_string()),
            }
            .unwrap_or_default()
        };
        for json in [true, false] {
            let format = GoFormat::new(json, "1.0");
            for (topic, subset) in [("t", "clusters"), ("t\t\"q\u{7f}", "é\n")] {
                let parts = format.published_parts(topic, subset);
                for id in ["c1", "", "a\nb\"\\\u{1b}[31m é\u{85}"] {
                    for ids in [None, Some(([7; 16], [9; 8]))] {
                        let out = Out::default();
                        let writer = out.clone();
                        let layer = tracing_subscriber::fmt::layer()
                            .event_format(format.clone())
                            .with_writer(move || writer.clone());
                        let registry = tracing_subscriber::registry().with(layer);
                        tracing::subscriber::with_default(registry, || {
                            let _span = ids.map(|(t, s)| crate::telemetry::spans::enter_ids(t, s));
                            tracing::error!(error = "e", topic = "x", n = 1, "before");
                            // Not `init`'s logger: through `info!`.
                            PublishedLog::new(topic, subset).log(id);
                        });
                        let text =
                            String::from_utf8(out.0.lock().expect("lock").clone()).expect("UTF-8");
                        let via_tracing = text.lines().last().expect("a line");
                        let mut scratch = Scratch::default();
                        let direct = String::from_utf8(parts.line(&mut scratch, id, ids).to_vec())
                            .expect("UTF-8");
                        assert!(direct.ends_with('\n'), "{direct}");
                        assert_eq!(
                            untimed(direct.trim_end()),
                            untimed(via_tracing),
                            "{json} {id:?} {ids:?}"
                        );
                        assert_eq!(direct.lines().count(), 1, "{direct}");
                    }
                }
            }
        }
    }

    /// A thread's fields and buffers are reused line after line: nothing of a line is left in
    /// the next one.
    #[test]
    fn lines_reuse_nothing_of_the_line_before() {
        use tracing_subscriber::layer::SubscriberExt as _;
        for json in [true, false] {
            let out = Out::default();
            let writer = out.clone();
            let layer = tracing_subscriber::fmt::layer()
                .event_format(GoFormat::new(json, "1.0"))
                .with_writer(move || writer.clone());
            tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
                tracing::error!(error = "e1", topic = "t1", subset = %"s1", n = 3, "first line");
                tracing::info!("second");
                tracing::warn!(decision_reason = "r", "third");
            });
            let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("UTF-8");
            // The ERROR line's stack frame follows it, indented, in text lines.
            let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("    ")).collect();
            assert!(
                lines[0].contains("first line") && lines[0].contains("t1"),
                "{text}"
            );
            assert!(lines[1].contains("second"), "{text}");
            for old in ["e1", "t1", "s1", "first", "extra", "n=3", "stack"] {
                assert!(
                    !lines[1].replace("1.0", "").contains(old),
                    "{old} in {}",
                    lines[1]
                );
            }
            assert!(
                lines.iter().any(|l| l.contains("third") && l.contains("r")),
                "{text}"
            );
            assert!(!lines.last().is_some_and(|l| l.contains("t1")), "{text}");
        }
    }
}
