//! The read analysis: what an expression reads of a resource, as a [`Projection`] the page
//! decoder decodes (computed once, when the rules compile).
//!
//! Invariant: a projection that misses a read changes only the work, never a result: a field
//! outside it is decoded from the resource's JSON text on first read.

use super::projection::Projection;
use super::schema::{condition_field, resource_field};
use crate::cel::typed::{Builtin, TExpr, TExprKind as K, Var};
use crate::cel::value::Value;

impl Projection {
    /// Adds what `e` reads of the resource: `resource.<field>`, `condition("<constant>")` and
    /// `condition("<constant>").<field>` are named; `resource` used as a whole value needs
    /// everything, `condition(<computed>)` every condition. `resource[<computed>]` and
    /// `has(resource.<field>)` add nothing: they read through the resource's accessors, which
    /// decode what is outside the projection from the JSON text. A projection that misses a
    /// read changes only the work, never a result.
    pub fn add_reads(&mut self, e: &TExpr) {
        let constant_condition = |e: &TExpr| match &e.kind {
            K::Call(Builtin::Condition, args) => match args.as_slice() {
                [arg] => match &arg.kind {
                    K::Const(Value::String(name)) => Some(Some(name.clone())),
                    _ => Some(None),
                },
                _ => None,
            },
            _ => None,
        };
        match &e.kind {
            K::Var(Var::Resource) => *self = Projection::all(),
            // `resource[k]`: one field by a computed name, read through the resource's
            // accessors (decoded from the JSON text when outside the projection).
            K::Index(target, key) if matches!(target.kind, K::Var(Var::Resource)) => {
                self.add_reads(key)
            }
            K::Select(target, field) | K::Has(target, field)
                if matches!(target.kind, K::Var(Var::Resource)) =>
            {
                if matches!(e.kind, K::Select(..))
                    && let Some(def) = resource_field(&field.name)
                {
                    self.add_field(def.field);
                }
            }
            K::Select(target, field) | K::Has(target, field)
                if constant_condition(target).is_some() =>
            {
                let name = constant_condition(target).flatten();
                self.add_condition(name.as_deref());
                self.add_condition_field(condition_field(&field.name).map(|d| d.field));
                // The argument, when computed, reads too.
                self.add_children(target);
            }
            K::Call(Builtin::Condition, _) => {
                let name = constant_condition(e).flatten();
                self.add_condition(name.as_deref());
                self.add_condition_field(None);
                self.add_children(e);
            }
            _ => self.add_children(e),
        }
    }

    fn add_children(&mut self, e: &TExpr) {
        e.children().for_each(|c| self.add_reads(c));
    }
}
