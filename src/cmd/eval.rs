//! `sentinel eval`: decides for resources read as JSON and prints one JSON line per resource.
//!
//! Input is one resource object, a list page `{"items": [...]}`, or JSON lines of either, read
//! as a stream: memory does not grow with the number of resources.

use super::CmdError;
use crate::cel::json::{DurationStyle, to_json};
use crate::cel::time::Timestamp;
use crate::resource::Resource;
use crate::rules::decision::{Compiled, Engine, Scratch};
use serde_json::{Map as JsonMap, Value as Json};
use std::io::{BufRead, Write};
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
    for_each_resource(input, origin, |json| {
        let resource = Arc::new(Resource::from_json(json));
        let decision = program.explain(&resource, now, &mut scratch);
        line.clear();
        let report = report(program.program(), &resource, &decision, &scratch.slots);
        serde_json::to_writer(&mut line, &report).map_err(|e| CmdError::Write(e.into()))?;
        line.push(b'\n');
        out.write_all(&line)?;
        count += 1;
        Ok(())
    })?;
    out.flush()?;
    Ok(count)
}

/// Calls `f` with each resource of `input` (named `origin` in errors): one resource object, a
/// list page `{"items": [...]}`, or JSON lines of either, read as a stream.
pub fn for_each_resource(
    input: impl BufRead,
    origin: &str,
    mut f: impl FnMut(Json) -> Result<(), CmdError>,
) -> Result<(), CmdError> {
    let stream = serde_json::Deserializer::from_reader(input).into_iter::<Json>();
    for (i, item) in stream.enumerate() {
        let item = item.map_err(|e| CmdError::Input {
            origin: format!("{origin}:{}:{}", e.line(), e.column()),
            message: format!("invalid JSON in value {}: {}", i + 1, json_error_text(&e)),
        })?;
        match item {
            Json::Object(mut obj)
                if !obj.contains_key("id") && obj.get("items").is_some_and(Json::is_array) =>
            {
                if let Some(Json::Array(items)) = obj.remove("items") {
                    items.into_iter().try_for_each(&mut f)?;
                }
            }
            other => f(other)?,
        }
    }
    Ok(())
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
    /// Resources as JSON: a file, or `-` / nothing for standard input.
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
