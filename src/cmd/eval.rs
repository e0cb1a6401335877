//! `sentinel eval`: decides for resources read as JSON and prints one JSON line per resource.
//!
//! Input is one resource object, a list page `{"items": [...]}`, or JSON lines of either, read
//! as a stream: memory does not grow with the number of resources.

use super::CmdError;
use crate::cel::host::{Resource, SharedText, TOO_LARGE_REASON};
use crate::cel::json::{DurationStyle, to_json};
use crate::cel::time::Timestamp;
use crate::rules::decision::{Compiled, Engine, Scratch};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map as JsonMap, Value as Json};
use std::cell::Cell;
use std::io::{BufRead, Read, Write};
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

/// Reads resources from `input` (named `origin` in errors), decides each with `program` at
/// `now`, and writes one JSON line per resource to `out`.
pub fn run(
    program: &Compiled,
    now: Timestamp,
    input: impl BufRead,
    origin: &str,
    mut out: impl Write,
) -> Result<usize, CmdError> {
    let mut count = 0;
    let mut scratch = Scratch::default();
    let mut line = Vec::with_capacity(512);
    for_each_resource(input, origin, |resource| {
        let resource = Arc::new(resource);
        line.clear();
        let report = if resource.too_large().is_some() {
            too_large_report(&resource)
        } else {
            let decision = program.explain(&resource, now, &mut scratch);
            report(program.program(), &resource, &decision, &scratch.slots)
        };
        serde_json::to_writer(&mut line, &report).map_err(|e| CmdError::Write(e.into()))?;
        line.push(b'\n');
        out.write_all(&line)?;
        count += 1;
        Ok(())
    })?;
    out.flush()?;
    Ok(count)
}

/// The largest JSON value (one resource, or one list page) `eval` and `bench` read, in bytes
/// (64 MiB). A longer value is refused once this many of its bytes are read, before it is read
/// whole: reading a value takes up to about three times its size (the buffer growing, then its
/// text), so memory stays bounded whatever the input. A resource within it but over the
/// daemon's own per-resource limit is decided as `serve` decides it: skipped, too large.
pub const MAX_INPUT_VALUE_BYTES: usize = 64 << 20;

/// Calls `f` with each resource of `input` (named `origin` in errors): one resource object, a
/// list page `{"items": [...]}`, or JSON lines of either, read as a stream of JSON texts (no
/// JSON tree), each decoded as the daemon decodes a page's items.
pub fn for_each_resource(
    input: impl Read,
    origin: &str,
    mut f: impl FnMut(Resource) -> Result<(), CmdError>,
) -> Result<(), CmdError> {
    let left = Rc::new(Cell::new(MAX_INPUT_VALUE_BYTES));
    let reader = Bounded {
        inner: input,
        left: left.clone(),
    };
    let mut stream = serde_json::Deserializer::from_reader(reader).into_iter::<Box<RawValue>>();
    for n in 1.. {
        left.set(MAX_INPUT_VALUE_BYTES);
        let Some(item) = stream.next() else {
            break;
        };
        let raw = item.map_err(|e| {
            let message = if left.get() == 0 && e.is_io() {
                format!(
                    "value {n} is longer than {MAX_INPUT_VALUE_BYTES} bytes, the most eval reads \
                     as one resource or list page"
                )
            } else {
                format!("invalid JSON in value {n}: {}", json_error_text(&e))
            };
            // An I/O error has no line (0): the origin alone.
            let origin = match e.line() {
                0 => origin.to_string(),
                line => format!("{origin}:{line}:{}", e.column()),
            };
            CmdError::Input { origin, message }
        })?;
        let text: SharedText = Arc::new(String::from(Box::<str>::from(raw)));
        for range in resources_in(&text) {
            f(Resource::from_page(&text, range))?;
        }
    }
    Ok(())
}

/// Where the resources of one JSON value lie in its text: the items of a list page (an object
/// without `id` whose `items` is an array), else the value itself.
fn resources_in(text: &str) -> Vec<Range<usize>> {
    #[derive(Deserialize)]
    struct Shape<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        items: Option<&'a RawValue>,
    }
    let whole = std::iter::once(0..text.len()).collect();
    let Ok(Shape {
        id: None,
        items: Some(items),
    }) = serde_json::from_str::<Shape<'_>>(text)
    else {
        return whole;
    };
    let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(items.get()) else {
        return whole;
    };
    // Each item is a slice of `text`: its range is where its bytes lie.
    let base = text.as_ptr() as usize;
    items
        .iter()
        .map(|item| {
            let start = item.get().as_ptr() as usize - base;
            start..start + item.get().len()
        })
        .collect()
}

/// A reader that fails once `left` bytes have been read, until the caller refills `left`.
struct Bounded<R> {
    inner: R,
    left: Rc<Cell<usize>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.left.get();
        if left == 0 {
            return Err(std::io::Error::other("input value too long"));
        }
        let n = buf.len().min(left);
        let read = self.inner.read(&mut buf[..n])?;
        self.left.set(left - read);
        Ok(read)
    }
}

/// A resource over the daemon's per-resource limit, skipped as `serve` skips it, unevaluated.
fn too_large_report(resource: &Resource) -> Json {
    let id = match resource.id() {
        Ok(id) => Json::String(id.as_str().to_string()),
        Err(_) => Json::Null,
    };
    serde_json::json!({
        "id": id,
        "decision": "skip",
        "reason": TOO_LARGE_REASON,
        "params": {},
    })
}

fn report(
    program: &crate::rules::decision::Program,
    resource: &Resource,
    decision: &crate::rules::decision::Decision,
    slots: &[crate::cel::value::EvalResult],
) -> Json {
    let mut params = JsonMap::with_capacity(slots.len());
    for (p, v) in program.params.iter().zip(slots) {
        let value = match v {
            Ok(v) => to_json(v, DurationStyle::Seconds),
            Err(e) => Json::Object(JsonMap::from_iter([(
                "error".to_string(),
                Json::String(e.message.clone()),
            )])),
        };
        params.insert(p.name.to_string(), value);
    }
    let id = resource.json_field("id").unwrap_or(Json::Null);
    let mut obj = JsonMap::with_capacity(4);
    obj.insert("id".into(), id);
    obj.insert(
        "decision".into(),
        Json::String(if decision.publish { "publish" } else { "skip" }.into()),
    );
    obj.insert("reason".into(), Json::String(decision.reason.to_string()));
    obj.insert("params".into(), Json::Object(params));
    Json::Object(obj)
}

/// Options of `sentinel eval`.
#[derive(clap::Args, Debug, Clone)]
pub struct EvalArgs {
    /// Config file whose message_decision to use (the whole file must validate); without it the
    /// default rules apply.
    #[arg(short, long)]
    pub config: Option<std::path::PathBuf>,
    /// The evaluation time, RFC 3339 (default: the current time).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Which engine decides: the interpreter or native code (the output is the same).
    #[arg(long, default_value_t = Engine::Jit)]
    pub engine: Engine,
    /// Resources as JSON: a file, or `-` / nothing for standard input. One resource object, a
    /// list page `{"items": [...]}`, or JSON lines of either; each value at most 64 MiB, and a
    /// resource over 1 MiB is skipped as `serve` skips it.
    #[arg(value_name = "FILE|-")]
    pub input: Option<std::path::PathBuf>,
}

/// Runs `sentinel eval` with its options on the process's stdin/stdout.
pub fn main(args: &EvalArgs) -> Result<(), CmdError> {
    let rules = super::check::load_rules(args.config.as_deref())?;
    let now = super::now_arg(args.now.as_deref())?;
    let program = if rules.decision.engine() == args.engine {
        rules.decision
    } else {
        Compiled::new(rules.decision.program().clone(), args.engine)?
    };
    let stdout = std::io::stdout().lock();
    let out = std::io::BufWriter::new(stdout);
    match args.input.as_deref() {
        None => run(&program, now, std::io::stdin().lock(), "<stdin>", out),
        Some(p) if p.as_os_str() == "-" => {
            run(&program, now, std::io::stdin().lock(), "<stdin>", out)
        }
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|source| CmdError::Read {
                path: path.into(),
                source,
            })?;
            run(
                &program,
                now,
                std::io::BufReader::new(file),
                &path.display().to_string(),
                out,
            )
        }
    }
    .map(|_| ())
}

/// serde_json's message without its ` at line L column C` suffix (the origin says where).
fn json_error_text(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
