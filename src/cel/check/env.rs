//! The checker's environment: the variables an expression may name, and the options a
//! config's expressions are checked with.

use crate::cel::typed::Var;
use crate::cel::types::Type;
use std::collections::HashMap;

/// A declared variable of an environment.
#[derive(Clone, Debug)]
pub struct VarDecl {
    /// Its name in CEL source.
    pub name: String,
    /// Its static type.
    pub ty: Type,
    /// How the evaluators find its value.
    pub var: Var,
}

/// What an expression may refer to.
///
/// Name lookups are hashed, so checking a decision with thousands of params stays linear: one
/// `Env` grows by [`Env::push`] as the params compile instead of being rebuilt per param.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Variables in scope (lookup goes through `index`; add with [`Env::push`]).
    vars: Vec<VarDecl>,
    /// Each variable's position in `vars` by name (the last declared wins).
    index: HashMap<String, usize>,
    /// Whether `condition(name)` is available.
    pub condition: bool,
    /// Params declared after the one being checked (not in scope, named in diagnostics), in
    /// reverse authored order so that the next param's name is popped off the end.
    pub later_params: Vec<String>,
    /// The name of the param being checked, for diagnostics.
    pub current: Option<String>,
    /// The resource's known field names (the HyperFleet schema): `resource.<other>` is a
    /// warning with a suggestion. Empty: no schema, no warnings.
    pub resource_fields: &'static [&'static str],
    /// Whether a constant call that always fails (`duration("30x")`) is a load-time error
    /// where every evaluation reaches it and a warning elsewhere (configs), rather than only a
    /// runtime error where it is evaluated (conformance tests).
    pub const_errors: bool,
}

impl Env {
    /// Adds a variable (hiding any earlier one of the same name).
    pub fn push(&mut self, decl: VarDecl) {
        self.index.insert(decl.name.clone(), self.vars.len());
        self.vars.push(decl);
    }

    /// The variable named `name`, if declared.
    pub fn var(&self, name: &str) -> Option<&VarDecl> {
        self.index.get(name).map(|&i| &self.vars[i])
    }

    /// Every declared variable, in declaration order.
    pub fn vars(&self) -> &[VarDecl] {
        &self.vars
    }

    /// This environment as a config's expressions see it: `resource` has the fields
    /// `resource_fields` (others warn) and constant calls that always fail are errors.
    pub fn for_config(mut self, resource_fields: &'static [&'static str]) -> Env {
        self.resource_fields = resource_fields;
        self.const_errors = true;
        self
    }

    fn from_vars(vars: Vec<VarDecl>) -> Env {
        let mut env = Env::default();
        for d in vars {
            env.push(d);
        }
        env
    }

    /// The environment of a message_decision param or result: `resource`, `now`,
    /// `condition(name)` and the params declared before it with their inferred types.
    pub fn decision(earlier: &[(String, Type)]) -> Env {
        let mut vars = vec![
            VarDecl {
                name: "resource".into(),
                ty: Type::Resource,
                var: Var::Resource,
            },
            VarDecl {
                name: "now".into(),
                ty: Type::Timestamp,
                var: Var::Now,
            },
        ];
        vars.extend(earlier.iter().enumerate().map(|(i, (name, ty))| VarDecl {
            name: name.clone(),
            ty: ty.clone(),
            var: Var::Slot(i),
        }));
        Env {
            condition: true,
            ..Env::from_vars(vars)
        }
    }

    /// The environment of a message_data expression: `resource` and `reason`.
    pub fn message_data() -> Env {
        let vars = vec![
            VarDecl {
                name: "resource".into(),
                ty: Type::Resource,
                var: Var::Resource,
            },
            VarDecl {
                name: "reason".into(),
                ty: Type::String,
                var: Var::Reason,
            },
        ];
        Env::from_vars(vars)
    }

    /// An environment of declared variables bound to slots in order (standalone expressions,
    /// conformance tests).
    pub fn with_slots(decls: &[(String, Type)]) -> Env {
        let vars = decls
            .iter()
            .enumerate()
            .map(|(i, (name, ty))| VarDecl {
                name: name.clone(),
                ty: ty.clone(),
                var: Var::Slot(i),
            })
            .collect();
        Env::from_vars(vars)
    }
}
