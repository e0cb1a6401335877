//! The API's walk over the syntax tree (hyperfleet-api `pkg/db/sql_tsl.go` `TSLToSQL`): the
//! same checks in the same order with the same reasons, and, where the SQL it would emit has a
//! meaning [`Tsl`] can state, that [`Tsl`].
//!
//! The walk keeps the API's context as it does: `in_not` below a `not`, and the condition
//! subfield named last, which a comparison checks its value against and then clears (it can
//! outlive the column that set it, as in the API). What the API would accept but [`Tsl`]
//! cannot state is noted and refused only once the whole walk succeeded, so a search the API
//! refuses gets the API's reason.

use super::{BinOp, Node, TslError, UnOp};
use crate::cel::time::{Timestamp, canonical_rfc3339, parse_timestamp};
use crate::tsl::{Column, ConditionColumn, Literal, Op, TimeColumn, TimeLit, Tsl};

/// The walk of `node`: its [`Tsl`], the API's refusal, or a refusal saying what the fake API
/// does not support.
pub(super) fn walk(node: &Node) -> Result<Tsl, TslError> {
    let mut walker = Walker::default();
    let mut ctx = Ctx::default();
    let walked = walker.walk(node, &mut ctx)?;
    if walker.invalid_column {
        return Err(TslError::new("invalid field in search or order query"));
    }
    if let Some(reason) = walker.unsupported {
        return Err(TslError::new(format!(
            "{reason} is not supported by sentinel's fake API"
        )));
    }
    match walked.shape {
        Shape::Pred(tsl) => Ok(tsl),
        _ => Err(TslError::new(
            "a search that is not a condition is not supported by sentinel's fake API",
        )),
    }
}

/// The first SQL argument a walked node binds, which the API's condition checks look at.
#[derive(Clone, Debug)]
enum Arg {
    Str(String),
    Num(f64),
    Other,
}

/// A literal as the walk sees it.
#[derive(Clone, Debug)]
enum Lit {
    Str(String),
    Num(f64),
    Bool,
    Date(String),
    /// An RFC 3339 text: the instant when it is in range, and Go's `RFC3339Nano` text of it
    /// (the text as written when Go cannot parse it).
    Stamp(Option<Timestamp>, String),
}

#[derive(Clone, Debug)]
enum Shape {
    Column(Column),
    Lit(Lit),
    Pred(Tsl),
    Null,
    /// SQL the fake API gives no meaning to (already noted as unsupported).
    Other,
}

#[derive(Clone, Debug)]
struct Walked {
    shape: Shape,
    arg: Option<Arg>,
}

impl Walked {
    fn other(arg: Option<Arg>) -> Walked {
        Walked {
            shape: Shape::Other,
            arg,
        }
    }
}

/// The condition subfield a column named last (`walkContext.conditionSubfield`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Sub {
    Status,
    Column(ConditionColumn),
}

#[derive(Default)]
struct Ctx {
    in_not: bool,
    sub: Option<Sub>,
}

#[derive(Default)]
struct Walker {
    invalid_column: bool,
    unsupported: Option<String>,
}

const CONDITION_PREFIX: &str = "status.conditions.";
const COMPARE_HINT: &str = "use comparison operators (=, !=, <, <=, >, >=)";

fn bad<T>(reason: impl Into<String>) -> Result<T, TslError> {
    Err(TslError::new(reason))
}

fn is_condition_node(node: Option<&Node>) -> bool {
    matches!(node, Some(Node::Ident(name)) if name.starts_with(CONDITION_PREFIX))
}

/// `^[a-z0-9_]+$`
fn is_jsonb_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// `^[A-Z][a-zA-Z0-9]*$`
fn is_condition_type(ty: &str) -> bool {
    let mut bytes = ty.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_uppercase()) && bytes.all(|b| b.is_ascii_alphanumeric())
}

impl Walker {
    fn unsupported(&mut self, what: impl Into<String>) -> Walked {
        self.unsupported.get_or_insert_with(|| what.into());
        Walked::other(None)
    }

    fn walk(&mut self, node: &Node, ctx: &mut Ctx) -> Result<Walked, TslError> {
        let lit = |lit: Lit, arg: Arg| Walked {
            shape: Shape::Lit(lit),
            arg: Some(arg),
        };
        Ok(match node {
            Node::Ident(name) => self.column(name, ctx)?,
            Node::Str(s) => lit(Lit::Str(s.clone()), Arg::Str(s.clone())),
            Node::Num(f) => lit(Lit::Num(*f), Arg::Num(*f)),
            Node::Bool(_) => lit(Lit::Bool, Arg::Other),
            Node::Date(s) => lit(Lit::Date(s.clone()), Arg::Str(s.clone())),
            Node::Stamp(s) => {
                // Go's `time.Parse(time.RFC3339, …)` then `Format(time.RFC3339Nano)`; the text
                // as written when it does not parse.
                let text = canonical_rfc3339(s).unwrap_or_else(|_| s.clone());
                let at = parse_timestamp(s).ok();
                lit(Lit::Stamp(at, text.clone()), Arg::Str(text))
            }
            Node::Null => Walked {
                shape: Shape::Null,
                arg: None,
            },
            Node::Array(items) => {
                let mut walked = Vec::with_capacity(items.len());
                for item in items {
                    walked.push(self.walk(item, ctx)?);
                }
                Walked::other(walked.into_iter().find_map(|w| w.arg))
            }
            Node::Binary(op @ (BinOp::And | BinOp::Or), _, _) => self.logical(*op, node, ctx)?,
            Node::Binary(BinOp::In, left, right) => self.within(left, right, ctx)?,
            Node::Binary(BinOp::Between, left, right) => self.between(left, right, ctx)?,
            Node::Binary(BinOp::Is, left, _) => {
                let column = self.walk(left, ctx)?;
                ctx.sub = None;
                match column.shape {
                    Shape::Column(c) => pred(Tsl::IsNull(c, false), column.arg),
                    _ => self.unsupported("IS NULL on anything but a column"),
                }
            }
            Node::Binary(BinOp::Like | BinOp::ILike, left, right) => {
                if is_condition_node(Some(left)) {
                    return bad(format!(
                        "LIKE/ILIKE is not supported for condition queries; {COMPARE_HINT}"
                    ));
                }
                self.walk(left, ctx)?;
                self.walk(right, ctx)?;
                self.unsupported("LIKE/ILIKE")
            }
            Node::Unary(UnOp::Not, inner) => {
                let mut inner_ctx = Ctx {
                    in_not: true,
                    sub: None,
                };
                let walked = self.walk(inner, &mut inner_ctx)?;
                match walked.shape {
                    Shape::Pred(Tsl::IsNull(c, false)) => pred(Tsl::IsNull(c, true), walked.arg),
                    Shape::Pred(p) => pred(Tsl::Not(Box::new(p)), walked.arg),
                    _ => self.unsupported("NOT of anything but a condition"),
                }
            }
            Node::Unary(UnOp::Neg, inner) => {
                let walked = self.walk(inner, ctx)?;
                match walked.shape {
                    Shape::Lit(Lit::Num(f)) => Walked {
                        shape: Shape::Lit(Lit::Num(-f)),
                        arg: walked.arg,
                    },
                    _ => self.unsupported("unary minus on anything but a number"),
                }
            }
            Node::Binary(op, left, right) => {
                let op = comparison_op(*op).ok_or(op_name(*op));
                self.comparison(op, Some(left), Some(right), ctx)?
            }
            Node::Unary(op, inner) => {
                let name = match op {
                    UnOp::Len => "LEN",
                    UnOp::Any => "ANY",
                    UnOp::All => "ALL",
                    _ => "SUM",
                };
                self.comparison(Err(name), None, Some(inner), ctx)?
            }
        })
    }

    /// A chain of one `and` or one `or`, walked left to right as the API's recursion does.
    fn logical(&mut self, op: BinOp, node: &Node, ctx: &mut Ctx) -> Result<Walked, TslError> {
        let mut rights = Vec::new();
        let mut spine = node;
        while let Node::Binary(inner, left, right) = spine {
            if *inner != op {
                break;
            }
            rights.push(right.as_ref());
            spine = left;
        }
        rights.push(spine);
        let mut parts = Vec::with_capacity(rights.len());
        let mut arg = None;
        let mut all_preds = true;
        for part in rights.into_iter().rev() {
            let walked = self.walk(part, ctx)?;
            arg = arg.or(walked.arg);
            match walked.shape {
                Shape::Pred(Tsl::And(inner)) if op == BinOp::And => parts.extend(inner),
                Shape::Pred(p) => parts.push(p),
                _ => all_preds = false,
            }
        }
        if !all_preds {
            self.unsupported("AND/OR of anything but conditions");
            return Ok(Walked::other(arg));
        }
        let tsl = if op == BinOp::And {
            Tsl::And(parts)
        } else {
            Tsl::Or(parts)
        };
        Ok(pred(tsl, arg))
    }

    fn column(&mut self, name: &str, ctx: &mut Ctx) -> Result<Walked, TslError> {
        let column = |c: Column, arg: Option<Arg>| Walked {
            shape: Shape::Column(c),
            arg,
        };
        if let Some(key) = name.strip_prefix("labels.") {
            if ctx.in_not {
                return bad("NOT operator is not supported with label queries");
            }
            if key.is_empty() {
                return bad("label key cannot be empty");
            }
            return Ok(column(
                Column::Label(key.into()),
                Some(Arg::Str(key.into())),
            ));
        }
        if let Some(full) = name.strip_prefix(CONDITION_PREFIX) {
            if ctx.in_not {
                return bad("NOT operator is not supported with condition queries");
            }
            let (ty, sub) = condition_column(full)?;
            ctx.sub = Some(sub);
            let c = match sub {
                Sub::Status => Column::ConditionStatus(ty.into()),
                Sub::Column(sub) => Column::Condition(ty.into(), sub),
            };
            return Ok(column(c, Some(Arg::Str(ty.into()))));
        }
        if let Some(path) = name.strip_prefix("spec.") {
            for part in path.split('.') {
                if part.is_empty() {
                    return bad("spec field segment cannot be empty");
                }
                if !is_jsonb_key(part) {
                    return bad(format!(
                        "spec field segment '{part}' is invalid: must contain only lowercase \
                         letters, digits, and underscores"
                    ));
                }
            }
            return Ok(self.unsupported("a spec field"));
        }
        let trimmed = name.trim();
        let parts: Vec<&str> = trimmed.split('.').collect();
        if !parts.iter().all(|p| is_jsonb_key(p)) {
            return bad(format!("{name} is not a valid field name"));
        }
        if let [single] = parts[..] {
            return Ok(match single {
                "generation" => column(Column::Generation, None),
                "created_time" => column(Column::Time(TimeColumn::Created), None),
                "updated_time" => column(Column::Time(TimeColumn::Updated), None),
                "deleted_time" => column(Column::Time(TimeColumn::Deleted), None),
                "id" | "kind" | "name" | "href" | "created_by" | "updated_by" | "deleted_by"
                | "owner_id" | "owner_href" | "owner_kind" => {
                    column(Column::Text(single.into()), None)
                }
                "spec" | "tenancy" => self.unsupported("a JSON column"),
                _ => {
                    self.invalid_column = true;
                    Walked::other(None)
                }
            });
        }
        // `<relation>.<column>`: the model's relations join; anything else is refused.
        match parts[0] {
            "label" | "labels" | "condition" | "conditions" | "reference" | "references" => {
                Ok(self.unsupported("a column of a related table"))
            }
            other => bad(format!("{other} is not a related resource of Resource")),
        }
    }

    /// `walkComparison`: `op` is the SQL operator, or the name of one it refuses.
    fn comparison(
        &mut self,
        op: Result<Op, &'static str>,
        left: Option<&Node>,
        right: Option<&Node>,
        ctx: &mut Ctx,
    ) -> Result<Walked, TslError> {
        validate_typed_side(left, right)?;
        validate_typed_side(right, left)?;
        let l = match left {
            Some(node) => self.walk(node, ctx)?,
            None => Walked::other(None),
        };
        let r = match right {
            Some(node) => self.walk(node, ctx)?,
            None => Walked::other(None),
        };
        let sql_op = match op {
            Ok(op) => op,
            Err(name) => return bad(format!("unsupported comparison operator: {name}")),
        };
        if let Some(sub) = ctx.sub {
            let value = if is_condition_node(right) { &l } else { &r };
            validate_condition(sql_op, sub, value.arg.as_ref())?;
            ctx.sub = None;
        }
        let arg = l.arg.clone().or_else(|| r.arg.clone());
        let tsl = match (l.shape, r.shape) {
            (Shape::Column(c), Shape::Lit(lit)) => compare(c, sql_op, lit),
            (Shape::Lit(lit), Shape::Column(c)) => compare(c, sql_op.flipped(), lit),
            (Shape::Column(_), Shape::Column(_)) => Err("a column compared with a column"),
            _ => Err("a comparison that is not a column against a literal"),
        };
        Ok(match tsl {
            Ok(tsl) => pred(tsl, arg),
            Err(what) => self.unsupported(what),
        })
    }

    fn within(&mut self, left: &Node, right: &Node, ctx: &mut Ctx) -> Result<Walked, TslError> {
        if is_condition_node(Some(left)) {
            return bad(format!(
                "IN is not supported for condition queries; {COMPARE_HINT}"
            ));
        }
        if let (Node::Ident(field), Node::Array(items)) = (left, right)
            && let Some(want) = typed_field(field)
        {
            for item in items {
                validate_typed_node(field, want, Some(item))?;
            }
        }
        let l = self.walk(left, ctx)?;
        let Node::Array(items) = right else {
            return bad("expected array on right side of IN");
        };
        let mut literals = Vec::with_capacity(items.len());
        let mut failed = None;
        for item in items {
            let walked = self.walk(item, ctx)?;
            match (&l.shape, walked.shape) {
                (Shape::Column(c), Shape::Lit(lit)) => match literal_for(c, lit) {
                    Ok(lit) => literals.push(lit),
                    Err(what) => failed = failed.or(Some(what)),
                },
                _ => failed = failed.or(Some("IN with anything but a column and literals")),
            }
        }
        if items.is_empty() {
            failed = failed.or(Some("IN with an empty list"));
        }
        Ok(match (l.shape, failed) {
            (Shape::Column(c), None) => pred(Tsl::In(c, literals), l.arg),
            (_, failed) => self.unsupported(failed.unwrap_or("IN on anything but a column")),
        })
    }

    fn between(&mut self, left: &Node, right: &Node, ctx: &mut Ctx) -> Result<Walked, TslError> {
        if is_condition_node(Some(left)) {
            return bad(format!(
                "BETWEEN is not supported for condition queries; {COMPARE_HINT}"
            ));
        }
        let l = self.walk(left, ctx)?;
        let Node::Array(bounds) = right else {
            return bad("BETWEEN requires exactly 2 values");
        };
        let [low, high] = &bounds[..] else {
            return bad("BETWEEN requires exactly 2 values");
        };
        let low = self.walk(low, ctx)?;
        let high = self.walk(high, ctx)?;
        let tsl = match (l.shape, low.shape, high.shape) {
            (Shape::Column(c), Shape::Lit(low), Shape::Lit(high)) => {
                compare(c.clone(), Op::Ge, low)
                    .and_then(|ge| Ok(Tsl::And(vec![ge, compare(c, Op::Le, high)?])))
            }
            _ => Err("BETWEEN on anything but a column and literals"),
        };
        Ok(match tsl {
            Ok(tsl) => pred(tsl, l.arg),
            Err(what) => self.unsupported(what),
        })
    }
}

fn pred(tsl: Tsl, arg: Option<Arg>) -> Walked {
    Walked {
        shape: Shape::Pred(tsl),
        arg,
    }
}

/// `condition type / subfield` of `status.conditions.<rest>`, checked as the API checks them.
fn condition_column(full: &str) -> Result<(&str, Sub), TslError> {
    if full.is_empty() {
        return bad("condition type cannot be empty");
    }
    let parts: Vec<&str> = full.split('.').collect();
    if parts.len() > 2 {
        return bad(
            "invalid condition format: expected status.conditions.<Type> or \
             status.conditions.<Type>.<subfield>",
        );
    }
    let ty = parts[0];
    if !is_condition_type(ty) {
        return bad(format!(
            "condition type '{ty}' is invalid: must be PascalCase (e.g., Reconciled, Available)"
        ));
    }
    let sub = match parts.get(1) {
        None => Sub::Status,
        Some(&"last_updated_time") => Sub::Column(ConditionColumn::LastUpdatedTime),
        Some(&"last_transition_time") => Sub::Column(ConditionColumn::LastTransitionTime),
        Some(&"observed_generation") => Sub::Column(ConditionColumn::ObservedGeneration),
        Some(other) => {
            return bad(format!(
                "condition subfield '{other}' is not supported; use last_updated_time, \
                 last_transition_time, or observed_generation"
            ));
        }
    };
    Ok((ty, sub))
}

#[derive(Clone, Copy, PartialEq)]
enum Want {
    Integer,
    Timestamp,
}

fn typed_field(field: &str) -> Option<Want> {
    match field {
        "generation" => Some(Want::Integer),
        "created_time" | "updated_time" | "deleted_time" => Some(Want::Timestamp),
        _ => None,
    }
}

/// `validateTypedSide`: a typed column's other side must be a literal of its kind.
fn validate_typed_side(ident: Option<&Node>, value: Option<&Node>) -> Result<(), TslError> {
    match ident {
        Some(Node::Ident(field)) => match typed_field(field) {
            Some(want) => validate_typed_node(field, want, value),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

fn validate_typed_node(field: &str, want: Want, value: Option<&Node>) -> Result<(), TslError> {
    let ok = match value {
        None => return bad(format!("missing value for field '{field}'")),
        Some(Node::Null) => true,
        Some(Node::Num(_)) => want == Want::Integer,
        Some(Node::Stamp(_) | Node::Date(_)) => want == Want::Timestamp,
        Some(_) => false,
    };
    if ok {
        return Ok(());
    }
    let hint = match want {
        Want::Integer => "an integer",
        Want::Timestamp => "an RFC3339 timestamp (e.g. 2026-01-01T00:00:00Z)",
    };
    bad(format!("field '{field}' expects {hint}"))
}

/// `validateConditionComparison` on the value side's first argument.
fn validate_condition(op: Op, sub: Sub, arg: Option<&Arg>) -> Result<(), TslError> {
    let Some(arg) = arg else { return Ok(()) };
    match sub {
        Sub::Status => {
            if op != Op::Eq {
                return bad("only equality operator (=) is supported for condition status queries");
            }
            if let Arg::Str(s) = arg
                && !matches!(s.as_str(), "True" | "False" | "Unknown")
            {
                return bad(format!(
                    "condition status '{s}' is invalid: must be True, False, or Unknown"
                ));
            }
        }
        Sub::Column(ConditionColumn::ObservedGeneration) => {
            if let Arg::Num(f) = arg {
                if *f != f.trunc() {
                    return bad(format!(
                        "expected integer value for condition subfield 'observed_generation', \
                         got {}",
                        go_float(*f)
                    ));
                }
                if *f < f64::from(i32::MIN) || *f > f64::from(i32::MAX) {
                    return bad(format!(
                        "value {} is out of 32-bit integer range for condition subfield \
                         'observed_generation'",
                        go_float(*f)
                    ));
                }
            }
        }
        Sub::Column(_) => {
            if let Arg::Str(s) = arg
                && canonical_rfc3339(s).is_err()
            {
                return bad(
                    "invalid timestamp for condition subfield: expected RFC3339 format \
                     (e.g., 2026-01-01T00:00:00Z)",
                );
            }
        }
    }
    Ok(())
}

/// Go's `%v` of a float64 (`strconv`'s shortest `%g`): exponent form below 1e-4 or from 1e6 up.
fn go_float(f: f64) -> String {
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{f}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

fn comparison_op(op: BinOp) -> Option<Op> {
    Some(match op {
        BinOp::Eq => Op::Eq,
        BinOp::Ne => Op::Ne,
        BinOp::Lt => Op::Lt,
        BinOp::Le => Op::Le,
        BinOp::Gt => Op::Gt,
        BinOp::Ge => Op::Ge,
        _ => return None,
    })
}

/// The name Go's `Operator.String` gives an operator the comparison refuses.
fn op_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Req => "REQ",
        BinOp::Rne => "RNE",
        BinOp::Add => "ADD",
        BinOp::Sub => "SUB",
        BinOp::Mul => "MUL",
        BinOp::Div => "DIV",
        BinOp::Mod => "MOD",
        _ => "UNKNOWN",
    }
}

/// `column <op> literal` when the column's SQL type takes the literal.
fn compare(column: Column, op: Op, lit: Lit) -> Result<Tsl, &'static str> {
    let literal = literal_for(&column, lit)?;
    Ok(Tsl::Compare(column, op, literal))
}

/// The literal as `column` compares with it, or what the fake API does not support.
fn literal_for(column: &Column, lit: Lit) -> Result<Literal, &'static str> {
    const MISMATCH: &str = "a literal of a type the column does not take";
    match column {
        Column::Label(_) | Column::ConditionStatus(_) | Column::Text(_) => match lit {
            Lit::Str(s) | Lit::Date(s) | Lit::Stamp(_, s) => Ok(Literal::Str(s)),
            _ => Err(MISMATCH),
        },
        Column::Generation | Column::Condition(_, ConditionColumn::ObservedGeneration) => match lit
        {
            Lit::Num(f) if f.is_finite() => Ok(Literal::Num(f)),
            _ => Err(MISMATCH),
        },
        Column::Time(_) | Column::Condition(_, _) => match lit {
            Lit::Stamp(Some(at), _) => Ok(Literal::Time(TimeLit::At(at))),
            Lit::Date(d) => parse_timestamp(&format!("{d}T00:00:00Z"))
                .map(|at| Literal::Time(TimeLit::At(at)))
                .map_err(|_| MISMATCH),
            _ => Err(MISMATCH),
        },
    }
}
