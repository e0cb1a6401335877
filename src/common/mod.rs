//! What the daemon's rooms share: the bounds on the files they read, the redaction of secrets in
//! URLs, Go's text formats (booleans, durations, query escaping), the YAML walk, regular-file
//! reading and the hot paths' text formatting.
//!
//! Invariant: nothing here knows the config, the API, a broker or telemetry; each of those rooms
//! may import this one.

pub mod file;
pub mod go;
pub mod limits;
pub mod redact;
pub mod textfmt;
pub mod yaml;
