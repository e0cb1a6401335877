//! Where an expression of a config is: the one spelling of its place, for diagnostics, the
//! server filter's blockers, `sentinel check` and `sentinel ir`.
//!
//! Invariant: an origin is formatted only by its `Display` (and [`Origin::short`]) and never
//! parsed back; config order is its `Ord` (the params by index, then the result, then the
//! `message_data` leaves).

use std::fmt;
use std::sync::Arc;

/// The place of one expression in a config.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// `message_decision.params[index] "name"`.
    Param {
        /// Its index among the params.
        index: usize,
        /// Its name.
        name: Arc<str>,
    },
    /// `message_decision.result`.
    Result,
    /// A `message_data` leaf, by its dotted path (`message_data.region`).
    MessageData(String),
}

impl Origin {
    /// The param's name, for a param.
    pub fn param(&self) -> Option<&str> {
        match self {
            Origin::Param { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The param's index, for a param.
    pub fn param_index(&self) -> Option<usize> {
        match self {
            Origin::Param { index, .. } => Some(*index),
            _ => None,
        }
    }

    /// The place within its section: `params[3] "is_new_resource"`, `result`, or the
    /// `message_data` path.
    pub fn short(&self) -> Short<'_> {
        Short(self)
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, section: bool) -> fmt::Result {
        let prefix = if section { "message_decision." } else { "" };
        match self {
            Origin::Param { index, name } => write!(f, "{prefix}params[{index}] \"{name}\""),
            Origin::Result => write!(f, "{prefix}result"),
            Origin::MessageData(path) => f.write_str(path),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, true)
    }
}

/// [`Origin::short`]'s text.
pub struct Short<'a>(&'a Origin);

impl fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write(f, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_print_and_order_as_the_config_does() {
        let param = |index, name: &str| Origin::Param {
            index,
            name: Arc::from(name),
        };
        let mut origins = [
            Origin::MessageData("message_data.a".into()),
            Origin::Result,
            param(10, "a"),
            param(2, "z"),
        ];
        origins.sort();
        let text: Vec<String> = origins.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "message_decision.params[2] \"z\"",
                "message_decision.params[10] \"a\"",
                "message_decision.result",
                "message_data.a"
            ]
        );
        assert_eq!(param(2, "z").short().to_string(), "params[2] \"z\"");
        assert_eq!(Origin::Result.short().to_string(), "result");
        assert_eq!(param(2, "z").param(), Some("z"));
        assert_eq!(Origin::Result.param_index(), None);
    }
}
