//! Looking for a resource the rules publish that a search leaves out: `sentinel check` on an
//! operator's own `server_filters`, and the soundness tests of the derived filter.
//!
//! The resources are built from the boundary values of every constant the rules and the search
//! mention (each cutoff and each integer, one second and half a second either side; each label
//! value; each condition type present with every status, or absent), combined at random with a
//! fixed seed, so a run is repeatable.

use super::super::decision::Program;
use crate::cel::host::Resource;
use crate::cel::time::{Timestamp, format_timestamp_utc};
use crate::cel::typed::{Builtin, TExpr, TExprKind};
use crate::cel::value::Value;
use crate::tsl::{Column, Literal, TimeLit, Tsl};
use serde_json::{Value as Json, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// A resource the rules publish at `now` and the search does not list.
#[derive(Clone, Debug)]
pub struct Counterexample {
    /// The resource, as the API would serve it.
    pub resource: Json,
}

/// The constants a probe combines.
#[derive(Debug, Default)]
struct Boundaries {
    condition_types: BTreeSet<String>,
    label_keys: BTreeSet<String>,
    strings: BTreeSet<String>,
    ints: BTreeSet<i64>,
    /// Nanoseconds from `now` (durations) and absolute instants (timestamps).
    offsets: BTreeSet<i128>,
    instants: BTreeSet<i128>,
}

impl Boundaries {
    fn of_expr(&mut self, e: &TExpr) {
        match &e.kind {
            TExprKind::Const(v) => self.of_value(v),
            TExprKind::Call(Builtin::Condition, args) => {
                if let Some(TExprKind::Const(Value::String(ty))) = args.first().map(|a| &a.kind) {
                    self.condition_types.insert(ty.to_string());
                }
            }
            TExprKind::Select(inner, field) => {
                if let TExprKind::Select(_, labels) = &inner.kind
                    && &*labels.name == "labels"
                {
                    self.label_keys.insert(field.name.to_string());
                }
            }
            TExprKind::Index(inner, key) => {
                if let (TExprKind::Select(_, labels), TExprKind::Const(Value::String(k))) =
                    (&inner.kind, &key.kind)
                    && &*labels.name == "labels"
                {
                    self.label_keys.insert(k.to_string());
                }
            }
            _ => {}
        }
        for child in e.children() {
            self.of_expr(child);
        }
    }

    fn of_value(&mut self, v: &Value) {
        match v {
            Value::String(s) => {
                self.strings.insert(s.to_string());
            }
            Value::Int(n) => {
                self.ints.insert(*n);
            }
            Value::Duration(d) => {
                self.offsets.insert(-d.nanos());
                self.offsets.insert(d.nanos());
            }
            Value::Timestamp(t) => {
                self.instants.insert(t.nanos());
            }
            Value::List(items) => items.iter().for_each(|i| self.of_value(i)),
            _ => {}
        }
    }

    fn of_search(&mut self, t: &Tsl, now: Timestamp) {
        match t {
            Tsl::True | Tsl::False => {}
            Tsl::And(parts) | Tsl::Or(parts) => parts.iter().for_each(|p| self.of_search(p, now)),
            Tsl::Not(inner) => self.of_search(inner, now),
            Tsl::Compare(c, _, l) => {
                self.of_column(c);
                self.of_literal(l, now);
            }
            Tsl::IsNull(c, _) => self.of_column(c),
            Tsl::In(c, ls) => {
                self.of_column(c);
                ls.iter().for_each(|l| self.of_literal(l, now));
            }
        }
    }

    fn of_column(&mut self, c: &Column) {
        match c {
            Column::Label(k) => {
                self.label_keys.insert(k.clone());
            }
            Column::ConditionStatus(ty) | Column::Condition(ty, _) => {
                self.condition_types.insert(ty.clone());
            }
            _ => {}
        }
    }

    fn of_literal(&mut self, l: &Literal, now: Timestamp) {
        match l {
            Literal::Str(s) => {
                self.strings.insert(s.clone());
            }
            Literal::Num(n) if n.fract() == 0.0 && n.abs() < 9e15 => {
                self.ints.insert(*n as i64);
            }
            Literal::Num(_) => {}
            Literal::Time(t @ TimeLit::Cutoff { .. }) => {
                self.instants.insert(t.at(now).nanos());
            }
            Literal::Time(TimeLit::At(at)) => {
                self.instants.insert(at.nanos());
            }
        }
    }

    /// The times to try: around `now`, each cutoff and each instant.
    fn times(&self, now: Timestamp) -> Vec<String> {
        const SEC: i128 = 1_000_000_000;
        let mut at: BTreeSet<i128> = BTreeSet::new();
        let base = now.nanos();
        let mut around = |t: i128| {
            for d in [-SEC, -SEC / 2, 0, SEC / 2, SEC] {
                at.insert(t + d);
            }
        };
        around(base);
        around(base - 3600 * SEC);
        around(base - 86_400 * 365 * SEC);
        for o in &self.offsets {
            around(base + o);
        }
        for i in &self.instants {
            around(*i);
        }
        at.into_iter()
            .filter_map(|n| Timestamp::from_nanos(n).ok())
            .map(format_timestamp_utc)
            .collect()
    }

    fn integers(&self) -> Vec<i64> {
        let mut out: BTreeSet<i64> = [0, 1, 2, 3].into();
        for n in &self.ints {
            for d in [-1, 0, 1] {
                if let Some(v) = n
                    .checked_add(d)
                    .filter(|v| (0..=i64::from(i32::MAX)).contains(v))
                {
                    out.insert(v);
                }
            }
        }
        out.into_iter().collect()
    }
}

/// Up to `tries` resources built from the boundary values of `program` and `search` at `now`,
/// the first the rules publish and the search does not keep.
pub fn counterexample(
    program: &Program,
    search: &Tsl,
    now: Timestamp,
    tries: usize,
    seed: u64,
) -> Option<Counterexample> {
    let mut b = Boundaries::default();
    for p in &program.params {
        b.of_expr(&p.expr);
    }
    b.of_expr(&program.result);
    b.of_search(search, now);
    let times = b.times(now);
    let ints = b.integers();
    let statuses = ["True", "False", "Unknown"];
    let mut values: Vec<String> = b.strings.iter().cloned().collect();
    values.push("other".into());
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut slots = Vec::new();
    for i in 0..tries {
        let pick_time = |rng: &mut fastrand::Rng| times[rng.usize(..times.len())].clone();
        let generation = ints[rng.usize(..ints.len())].max(1);
        let mut labels = serde_json::Map::new();
        for key in &b.label_keys {
            if rng.bool() {
                labels.insert(key.clone(), json!(values[rng.usize(..values.len())]));
            }
        }
        let mut conditions = Vec::new();
        for ty in &b.condition_types {
            if rng.u8(..4) == 0 {
                continue;
            }
            conditions.push(json!({
                "type": ty,
                "status": statuses[rng.usize(..3)],
                "reason": "Probe",
                "message": "",
                "created_time": pick_time(&mut rng),
                "last_updated_time": pick_time(&mut rng),
                "last_transition_time": pick_time(&mut rng),
                "observed_generation": ints[rng.usize(..ints.len())],
            }));
        }
        let resource = json!({
            "id": format!("probe-{i}"),
            "kind": "Cluster",
            "name": format!("probe-{i}"),
            "href": format!("/api/hyperfleet/v1/clusters/probe-{i}"),
            "generation": generation,
            "created_time": pick_time(&mut rng),
            "updated_time": pick_time(&mut rng),
            "created_by": "probe@example.com",
            "updated_by": "probe@example.com",
            "labels": labels,
            "spec": {},
            "status": {"conditions": conditions},
        });
        let record = Arc::new(Resource::from_json(resource.clone()));
        if program.interpret(&record, now, &mut slots).publish
            && search.eval(record.as_ref(), now) != Some(true)
        {
            return Some(Counterexample { resource });
        }
    }
    None
}
