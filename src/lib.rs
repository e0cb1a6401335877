//! HyperFleet Sentinel: polls the HyperFleet API, decides per resource with compiled CEL rules
//! whether it needs reconciling, and publishes CloudEvents to a broker.
//!
//! Module map:
//! - [`cel`]: the CEL compiler (lexer, parser, checker, interpreter, JIT). No I/O.
//! - [`cmd`]: the subcommands behind the `sentinel` binary.
//! - [`resource`]: a HyperFleet resource decoded once into the fields rules read.
//! - [`decision`]: message_decision params + result → publish or skip.
//! - [`message_data`]: the CloudEvent `data` object built per published resource.
//! - [`rules`]: everything a config compiles to (decision + message_data).
//! - [`sentinel`]: the daemon: config, API client, broker, loop, metrics, health.
//! - [`sim`]: an embedded HyperFleet (fake API, simulated adapters, their broker queues) for
//!   tests and `simulate`.

pub mod cel;
pub mod cmd;
pub mod decision;
pub mod message_data;
pub mod resource;
pub mod rules;
pub mod sentinel;
pub mod sim;
