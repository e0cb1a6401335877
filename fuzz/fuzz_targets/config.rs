//! Config bytes → the config loader on that text → `Rules::compile`, as `sentinel check` does;
//! the same bytes as a broker.yaml → the broker config parser, as `serve` reads it; the same
//! bytes as `NAME=value` lines → the `OTEL_*` environment reader (its `OTEL_BSP_*` sizes within
//! their caps) and the OTLP exporter's (endpoints, headers, timeout); each line as `BROKER_RABBITMQ_URL` → the broker config's URL checks (vhost,
//! `frame_max`), and as a URL to mask, whose password no masked copy may hold; each line as
//! `HYPERFLEET_SERVER_FILTERS` (a search, or a list of them as a YAML flow sequence) → the
//! config loader. Nothing may panic, hang or blow up, whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::broker::config as broker_config;
use sentinel::daemon::config::{ConfigFlags, load_str};
use sentinel::rules::Rules;
use sentinel::telemetry::otlp::{OtlpConfig, Protocol};
use sentinel::telemetry::{MAX_QUEUE_SIZE, TraceSettings};

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
    let settings = TraceSettings::from_env(&env);
    for protocol in [Protocol::HttpProtobuf, Protocol::Grpc] {
        let mut warnings = Vec::new();
        let _ = OtlpConfig::from_env(protocol, &env, &mut warnings);
    }
    assert!(settings.batch.max_queue_size <= MAX_QUEUE_SIZE);
    assert!(settings.batch.max_export_batch_size <= settings.batch.max_queue_size);
    for line in text.lines().take(64) {
        amqp_url(line);
        server_filters(line);
    }
});

/// `line` as `HYPERFLEET_SERVER_FILTERS` over a minimal config.
fn server_filters(line: &str) {
    const MINIMAL: &str = "resource_type: clusters\nclients:\n  hyperfleet_api:\n    base_url: \
                           http://api:8000\n  broker:\n    topic: t\n";
    let env = |name: &str| (name == "HYPERFLEET_SERVER_FILTERS").then(|| line.to_string());
    if let Ok(config) = load_str(MINIMAL, "fuzz.yaml", &ConfigFlags::default(), &env) {
        let _ = config.server_filters.to_string();
    }
}

/// `line` as the broker URL from the environment, and as a URL to mask.
fn amqp_url(line: &str) {
    let env = |name: &str| match name {
        "BROKER_TYPE" => Some("rabbitmq".to_string()),
        "BROKER_RABBITMQ_URL" => Some(line.to_string()),
        _ => None,
    };
    if let Err(e) = broker_config::parse("environment", "", &env) {
        let text = e.to_string();
        let masked = sentinel::common::redact::mask_url(line);
        // A password the mask hides never shows in the error.
        if masked != line
            && let Some(password) = password(line, &masked)
        {
            assert!(!text.contains(password), "the password in {text:?}");
        }
    }
    let masked = sentinel::common::redact::mask_url_in(line, line);
    if let Some(password) = password(line, &sentinel::common::redact::mask_url(line)) {
        assert!(!masked.contains(password), "{masked:?} holds {password:?}");
    }
}

/// The text `mask_url` replaced by `****`, when it is long enough to search for (a one-letter
/// password is in most texts).
fn password<'a>(url: &'a str, masked: &str) -> Option<&'a str> {
    let star = masked.find(":****")?;
    let tail = &masked[star + 5..];
    let end = url.len().checked_sub(tail.len())?;
    let start = url.get(..star).map(str::len)?;
    let password = url.get(start..end)?;
    let password = password
        .trim_start_matches(':')
        .trim_start_matches("%3A")
        .trim_start_matches("%3a");
    (password.len() >= 4).then_some(password)
}
