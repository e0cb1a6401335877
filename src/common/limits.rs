//! The bounds every file the sentinel reads is held to, shared by the config, broker.yaml and
//! token readers so that one number means one thing.

/// The largest config file (and broker.yaml, and token file) accepted, in bytes (1 MiB).
pub const MAX_CONFIG_BYTES: usize = 1 << 20;

/// The deepest nesting of YAML flow collections (`[...]`, `{...}`) accepted.
pub const MAX_YAML_DEPTH: usize = 64;

/// How many problems a config or broker.yaml error lists before saying how many more there are.
pub const MAX_REPORTED_PROBLEMS: usize = 100;
