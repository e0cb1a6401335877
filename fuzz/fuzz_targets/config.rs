//! Config bytes → the config loader on that text → `Rules::compile`, as `sentinel check` does;
//! the same bytes as a broker.yaml → the broker config parser, as `serve` reads it; the same
//! bytes as `NAME=value` lines → the `OTEL_*` environment reader. Nothing may panic, hang or
//! blow up, whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::rules::Rules;
use sentinel::daemon::broker::config as broker_config;
use sentinel::daemon::config::{ConfigFlags, load_str};
use sentinel::daemon::telemetry::TraceSettings;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = load_str(text, "fuzz.yaml", &ConfigFlags::default(), &|_| None) {
        let _ = Rules::compile(&config);
    }
    if let Ok(broker) = broker_config::parse("broker.yaml", text, &|_| None) {
        let _ = broker.masked();
    }
    let env = |name: &str| {
        text.lines()
            .filter_map(|line| line.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    };
    let _ = TraceSettings::from_env(&env);
});
