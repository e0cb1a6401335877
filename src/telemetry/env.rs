//! The `OTEL_*` environment, read once: which exporter, the sampler, the propagators, the
//! resource, the batch processor's bounds (`batch`) and the OTLP exporter's own
//! variables ([`super::otlp::OtlpConfig`]).
//!
//! Takes a lookup ([`Env`], the process environment in `serve`); gives [`TraceSettings`].
//! Invariant: reading is a pure function of the lookup, and a bad value is a warning and the
//! default, never an error.

use opentelemetry_sdk::trace::Sampler;

use super::batch::BatchSettings;
use super::otlp::{ConfigError, OtlpConfig, Protocol};

/// How the settings read a variable: its value, `None` when unset (the process environment's
/// `std::env::var(name).ok()`).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `service.name` when `OTEL_SERVICE_NAME` is unset or empty.
pub const DEFAULT_SERVICE_NAME: &str = "hyperfleet-sentinel";

/// Where spans go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExporterKind {
    /// One JSON object per span per line on standard output (no `OTEL_EXPORTER_OTLP_ENDPOINT`).
    Stdout,
    /// OTLP over gRPC (`OTEL_EXPORTER_OTLP_PROTOCOL` `grpc`, empty or unknown).
    OtlpGrpc,
    /// OTLP over HTTP with protobuf bodies (`http` or `http/protobuf`).
    OtlpHttp,
}

/// The sampler `OTEL_TRACES_SAMPLER` (+ `_ARG`) names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SamplerKind {
    /// `always_on`.
    AlwaysOn,
    /// `always_off`.
    AlwaysOff,
    /// `traceidratio` with its ratio.
    TraceIdRatio(f64),
    /// `parentbased_always_on`.
    ParentBasedAlwaysOn,
    /// `parentbased_always_off`.
    ParentBasedAlwaysOff,
    /// `parentbased_traceidratio` (the default) with its ratio.
    ParentBasedTraceIdRatio(f64),
}

impl SamplerKind {
    /// The SDK sampler.
    pub fn sampler(self) -> Sampler {
        let parent = |root: Sampler| Sampler::ParentBased(Box::new(root));
        match self {
            SamplerKind::AlwaysOn => Sampler::AlwaysOn,
            SamplerKind::AlwaysOff => Sampler::AlwaysOff,
            SamplerKind::TraceIdRatio(r) => Sampler::TraceIdRatioBased(r),
            SamplerKind::ParentBasedAlwaysOn => parent(Sampler::AlwaysOn),
            SamplerKind::ParentBasedAlwaysOff => parent(Sampler::AlwaysOff),
            SamplerKind::ParentBasedTraceIdRatio(r) => parent(Sampler::TraceIdRatioBased(r)),
        }
    }
}

/// A propagator `OTEL_PROPAGATORS` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagatorKind {
    /// W3C `traceparent` / `tracestate`.
    TraceContext,
    /// W3C `baggage`.
    Baggage,
}

/// Everything the `OTEL_*` environment decides, plus the warnings for values it ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceSettings {
    /// The exporter.
    pub exporter: ExporterKind,
    /// The sampler.
    pub sampler: SamplerKind,
    /// The propagators, in order (empty for `none`).
    pub propagators: Vec<PropagatorKind>,
    /// `service.name`.
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, decoded, in order (`service.name` among them is overridden).
    pub resource: Vec<(String, String)>,
    /// `OTEL_BSP_*`, validated and capped.
    pub batch: BatchSettings,
    /// The endpoint variables as set (`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`): an
    /// error that echoes one has its password masked with them.
    pub endpoints: Vec<String>,
    /// The OTLP exporter's own variables (`None` for the stdout exporter), or why they are
    /// not usable.
    pub otlp: Option<Result<OtlpConfig, ConfigError>>,
    /// One line per ignored value (logged as WARN by the caller).
    pub warnings: Vec<String>,
}

const DEFAULT_RATIO: f64 = 1.0;

impl TraceSettings {
    /// Reads the settings through `env` (the process environment in `serve`). Bad values are
    /// warnings and the defaults, never errors.
    pub fn from_env(env: Env<'_>) -> TraceSettings {
        let var = |name: &str| env(name).map(|v| v.trim().to_string());
        let mut warnings = Vec::new();
        let exporter = exporter_kind(&var, &mut warnings);
        let sampler = sampler_kind(&var, &mut warnings);
        let propagators = propagators(var("OTEL_PROPAGATORS"), &mut warnings);
        let service_name = var("OTEL_SERVICE_NAME")
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_string());
        let resource = resource_attributes(&var("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default());
        let batch = BatchSettings::from_env(&var, &mut warnings);
        let protocol = match exporter {
            ExporterKind::Stdout => None,
            ExporterKind::OtlpGrpc => Some(Protocol::Grpc),
            ExporterKind::OtlpHttp => Some(Protocol::HttpProtobuf),
        };
        let otlp = protocol.map(|p| OtlpConfig::from_env(p, env, &mut warnings));
        let endpoints = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .into_iter()
        .filter_map(|name| env(name).filter(|e| !e.is_empty()))
        .collect();
        TraceSettings {
            exporter,
            sampler,
            propagators,
            service_name,
            resource,
            batch,
            endpoints,
            otlp,
            warnings,
        }
    }
}

/// The exporter: stdout without `OTEL_EXPORTER_OTLP_ENDPOINT`, else by
/// `OTEL_EXPORTER_OTLP_PROTOCOL` (an unknown one a warning and gRPC).
fn exporter_kind(var: &dyn Fn(&str) -> Option<String>, warnings: &mut Vec<String>) -> ExporterKind {
    if var("OTEL_EXPORTER_OTLP_ENDPOINT").is_none_or(|e| e.is_empty()) {
        return ExporterKind::Stdout;
    }
    let protocol = var("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_default();
    match protocol.to_lowercase().as_str() {
        "http" | "http/protobuf" => ExporterKind::OtlpHttp,
        "grpc" | "" => ExporterKind::OtlpGrpc,
        _ => {
            warnings.push(format!(
                "Unrecognized OTEL_EXPORTER_OTLP_PROTOCOL {protocol:?}, using default grpc"
            ));
            ExporterKind::OtlpGrpc
        }
    }
}

/// `OTEL_TRACES_SAMPLER` with its argument where it takes one.
fn sampler_kind(var: &dyn Fn(&str) -> Option<String>, warnings: &mut Vec<String>) -> SamplerKind {
    let mut ratio = || match var("OTEL_TRACES_SAMPLER_ARG").filter(|a| !a.is_empty()) {
        None => DEFAULT_RATIO,
        Some(arg) => match arg.parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => r,
            _ => {
                warnings.push(format!(
                    "Invalid OTEL_TRACES_SAMPLER_ARG value={arg:?}, using default: {DEFAULT_RATIO}"
                ));
                DEFAULT_RATIO
            }
        },
    };
    let name = var("OTEL_TRACES_SAMPLER")
        .unwrap_or_default()
        .to_lowercase();
    match name.as_str() {
        "always_on" => SamplerKind::AlwaysOn,
        "always_off" => SamplerKind::AlwaysOff,
        "traceidratio" => SamplerKind::TraceIdRatio(ratio()),
        "parentbased_always_on" => SamplerKind::ParentBasedAlwaysOn,
        "parentbased_always_off" => SamplerKind::ParentBasedAlwaysOff,
        "parentbased_traceidratio" | "" => SamplerKind::ParentBasedTraceIdRatio(ratio()),
        _ => {
            let ratio = ratio();
            warnings.push(format!("Unrecognized sampler {name:?}, using default"));
            SamplerKind::ParentBasedTraceIdRatio(ratio)
        }
    }
}

const DEFAULT_PROPAGATORS: [PropagatorKind; 2] =
    [PropagatorKind::TraceContext, PropagatorKind::Baggage];

/// `OTEL_PROPAGATORS`: a comma-separated list of `tracecontext`, `baggage` or `none`; unset or
/// empty is `tracecontext,baggage`; a name this sentinel does not implement is a warning and the
/// default.
fn propagators(value: Option<String>, warnings: &mut Vec<String>) -> Vec<PropagatorKind> {
    let value = value.unwrap_or_default();
    if value.is_empty() {
        return DEFAULT_PROPAGATORS.to_vec();
    }
    let mut out = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let kind = match name.to_lowercase().as_str() {
            "tracecontext" => PropagatorKind::TraceContext,
            "baggage" => PropagatorKind::Baggage,
            "none" => continue,
            _ => {
                warnings.push(format!(
                    "Unsupported OTEL_PROPAGATORS entry {name:?}, using default tracecontext,baggage"
                ));
                return DEFAULT_PROPAGATORS.to_vec();
            }
        };
        if !out.contains(&kind) {
            out.push(kind);
        }
    }
    out
}

/// `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs separated by commas, percent-decoded; a pair
/// without `=` or with an empty key is ignored, as the SDKs do.
fn resource_attributes(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| (percent_decode(key), percent_decode(value.trim())))
        })
        .collect()
}

/// `%XX` escapes decoded (others kept as written), invalid UTF-8 replaced.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> TraceSettings {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TraceSettings::from_env(&|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_without_environment() {
        let s = settings(&[]);
        assert_eq!(s.exporter, ExporterKind::Stdout);
        assert_eq!(s.sampler, SamplerKind::ParentBasedTraceIdRatio(1.0));
        assert_eq!(
            s.propagators,
            [PropagatorKind::TraceContext, PropagatorKind::Baggage]
        );
        assert_eq!(s.service_name, "hyperfleet-sentinel");
        assert!(s.resource.is_empty());
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn protocol_matrix() {
        let ep = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317");
        let cases = [
            (None, ExporterKind::OtlpGrpc, false),
            (Some(""), ExporterKind::OtlpGrpc, false),
            (Some("grpc"), ExporterKind::OtlpGrpc, false),
            (Some("GRPC"), ExporterKind::OtlpGrpc, false),
            (Some("http"), ExporterKind::OtlpHttp, false),
            (Some("http/protobuf"), ExporterKind::OtlpHttp, false),
            (Some("HTTP/Protobuf"), ExporterKind::OtlpHttp, false),
            (Some("http/json"), ExporterKind::OtlpGrpc, true),
            (Some("thrift"), ExporterKind::OtlpGrpc, true),
        ];
        for (protocol, want, warns) in cases {
            let mut vars = vec![ep];
            if let Some(p) = protocol {
                vars.push(("OTEL_EXPORTER_OTLP_PROTOCOL", p));
            }
            let s = settings(&vars);
            assert_eq!(s.exporter, want, "{protocol:?}");
            assert_eq!(
                s.warnings.len(),
                usize::from(warns),
                "{protocol:?}: {:?}",
                s.warnings
            );
        }
        // Without an endpoint the protocol does not matter: stdout.
        let s = settings(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http")]);
        assert_eq!(s.exporter, ExporterKind::Stdout);
        let s = settings(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "")]);
        assert_eq!(s.exporter, ExporterKind::Stdout);
        let unknown = settings(&[ep, ("OTEL_EXPORTER_OTLP_PROTOCOL", "thrift")]);
        assert_eq!(
            unknown.warnings,
            ["Unrecognized OTEL_EXPORTER_OTLP_PROTOCOL \"thrift\", using default grpc"]
        );
    }

    #[test]
    fn sampler_matrix() {
        use SamplerKind::*;
        let cases: [(&str, Option<&str>, SamplerKind, usize); 17] = [
            ("", None, ParentBasedTraceIdRatio(1.0), 0),
            ("always_on", None, AlwaysOn, 0),
            ("ALWAYS_ON", None, AlwaysOn, 0),
            ("always_off", None, AlwaysOff, 0),
            ("traceidratio", None, TraceIdRatio(1.0), 0),
            ("traceidratio", Some("0.25"), TraceIdRatio(0.25), 0),
            ("traceidratio", Some("0"), TraceIdRatio(0.0), 0),
            ("traceidratio", Some("1"), TraceIdRatio(1.0), 0),
            ("traceidratio", Some("1.5"), TraceIdRatio(1.0), 1),
            ("traceidratio", Some("-0.1"), TraceIdRatio(1.0), 1),
            ("traceidratio", Some("half"), TraceIdRatio(1.0), 1),
            ("parentbased_always_on", None, ParentBasedAlwaysOn, 0),
            ("parentbased_always_off", None, ParentBasedAlwaysOff, 0),
            (
                "parentbased_traceidratio",
                Some("0.5"),
                ParentBasedTraceIdRatio(0.5),
                0,
            ),
            (
                "parentbased_traceidratio",
                Some("NaN"),
                ParentBasedTraceIdRatio(1.0),
                1,
            ),
            ("jaeger_remote", None, ParentBasedTraceIdRatio(1.0), 1),
            (
                "jaeger_remote",
                Some("0.5"),
                ParentBasedTraceIdRatio(0.5),
                1,
            ),
        ];
        for (name, arg, want, warnings) in cases {
            let mut vars = vec![("OTEL_TRACES_SAMPLER", name)];
            if let Some(a) = arg {
                vars.push(("OTEL_TRACES_SAMPLER_ARG", a));
            }
            let s = settings(&vars);
            assert_eq!(s.sampler, want, "{name} {arg:?}");
            assert_eq!(
                s.warnings.len(),
                warnings,
                "{name} {arg:?}: {:?}",
                s.warnings
            );
        }
        // The argument is only read by the samplers that take one.
        let s = settings(&[
            ("OTEL_TRACES_SAMPLER", "always_on"),
            ("OTEL_TRACES_SAMPLER_ARG", "x"),
        ]);
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn propagator_matrix() {
        use PropagatorKind::*;
        let cases: [(&str, &[PropagatorKind], usize); 7] = [
            ("tracecontext", &[TraceContext], 0),
            ("baggage", &[Baggage], 0),
            ("baggage, tracecontext", &[Baggage, TraceContext], 0),
            ("tracecontext,tracecontext", &[TraceContext], 0),
            ("none", &[], 0),
            ("b3", &[TraceContext, Baggage], 1),
            ("tracecontext,xray", &[TraceContext, Baggage], 1),
        ];
        for (value, want, warnings) in cases {
            let s = settings(&[("OTEL_PROPAGATORS", value)]);
            assert_eq!(s.propagators, want, "{value}");
            assert_eq!(s.warnings.len(), warnings, "{value}");
        }
    }

    #[test]
    fn service_name_and_resource_attributes() {
        let s = settings(&[
            ("OTEL_SERVICE_NAME", "sentinel-a"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=prod, k8s.pod.name=p%2C1,broken,=x,service.name=ignored",
            ),
        ]);
        assert_eq!(s.service_name, "sentinel-a");
        assert_eq!(
            s.resource,
            [
                ("deployment.environment".to_string(), "prod".to_string()),
                ("k8s.pod.name".to_string(), "p,1".to_string()),
                ("service.name".to_string(), "ignored".to_string()),
            ]
        );
        assert_eq!(
            settings(&[("OTEL_SERVICE_NAME", "")]).service_name,
            DEFAULT_SERVICE_NAME
        );
    }
}
