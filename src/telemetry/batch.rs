//! The batch span processor's `OTEL_BSP_*` settings, read and bounded here instead of by the
//! SDK, which takes any number (a queue of 2^64 slots panics, 10^8 aborts on allocation) and
//! preallocates the whole queue (~360 bytes a slot).
//!
//! Takes the environment lookup; gives [`BatchSettings`] and a warning per value ignored or
//! capped. Invariant: the queue holds at most [`MAX_QUEUE_SIZE`] spans, the export batch is
//! never larger than the queue, and the schedule delay is within [`MAX_DELAY`].
//! (`OTEL_BSP_EXPORT_TIMEOUT` is not read: the SDK's thread-based processor does not use it.)

use opentelemetry_sdk::trace::{BatchConfig, BatchConfigBuilder};
use std::time::Duration;

/// The most spans the queue may hold: 16,384 slots, ~6 MiB preallocated by the SDK (its
/// default is 2,048). A poll of a big fleet with every resource sampled produces more spans
/// than any queue holds; the processor then drops spans, it never blocks the loop.
pub const MAX_QUEUE_SIZE: usize = 16_384;

/// The longest `OTEL_BSP_SCHEDULE_DELAY` taken (one minute).
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// The batch processor's settings, as the SDK names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchSettings {
    /// `OTEL_BSP_MAX_QUEUE_SIZE` (default 2,048).
    pub max_queue_size: usize,
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (default 512; at most the queue size).
    pub max_export_batch_size: usize,
    /// `OTEL_BSP_SCHEDULE_DELAY` in milliseconds (default 5 s).
    pub scheduled_delay: Duration,
}

impl Default for BatchSettings {
    fn default() -> BatchSettings {
        BatchSettings {
            max_queue_size: 2048,
            max_export_batch_size: 512,
            scheduled_delay: Duration::from_millis(5000),
        }
    }
}

impl BatchSettings {
    /// Reads the three variables through `var` (already trimmed). A value that is not a positive
    /// integer is a warning and the default; one above its bound is a warning and the bound.
    pub fn from_env(var: &dyn Fn(&str) -> Option<String>, warnings: &mut Vec<String>) -> Self {
        let mut read = |name: &str, default: u64, max: u64| -> u64 {
            let Some(text) = var(name).filter(|v| !v.is_empty()) else {
                return default;
            };
            match text.parse::<u64>() {
                Ok(n) if n > max => {
                    warnings.push(format!(
                        "{name} value={text:?} is above the limit, using {max}"
                    ));
                    max
                }
                Ok(n) if n > 0 => n,
                _ => {
                    warnings.push(format!(
                        "Invalid {name} value={text:?}, using default: {default}"
                    ));
                    default
                }
            }
        };
        let max_delay = MAX_DELAY.as_millis() as u64;
        let queue = read("OTEL_BSP_MAX_QUEUE_SIZE", 2048, MAX_QUEUE_SIZE as u64) as usize;
        let batch = read("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, MAX_QUEUE_SIZE as u64) as usize;
        let delay = read("OTEL_BSP_SCHEDULE_DELAY", 5000, max_delay);
        BatchSettings {
            max_queue_size: queue,
            // As the SDK does: a batch larger than the queue is the queue.
            max_export_batch_size: batch.min(queue),
            scheduled_delay: Duration::from_millis(delay),
        }
    }

    /// The SDK's configuration, every field set (the SDK's own reading of the environment,
    /// which the builder's default does, is overridden).
    pub fn config(&self) -> BatchConfig {
        BatchConfigBuilder::default()
            .with_max_queue_size(self.max_queue_size)
            .with_max_export_batch_size(self.max_export_batch_size)
            .with_scheduled_delay(self.scheduled_delay)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> (BatchSettings, Vec<String>) {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        let mut warnings = Vec::new();
        let s = BatchSettings::from_env(&|n| map.get(n).map(|v| v.to_string()), &mut warnings);
        (s, warnings)
    }

    #[test]
    fn sizes_are_validated_and_capped() {
        assert_eq!(read(&[]), (BatchSettings::default(), vec![]));
        for huge in [
            "18446744073709551615",
            "100000000",
            "1000000",
            "99999999999999999999999",
        ] {
            let (s, warnings) = read(&[("OTEL_BSP_MAX_QUEUE_SIZE", huge)]);
            assert_eq!(warnings.len(), 1, "{huge}: {warnings:?}");
            let want = if huge.len() > 20 {
                2048
            } else {
                MAX_QUEUE_SIZE
            };
            assert_eq!(s.max_queue_size, want, "{huge}");
        }
        let (s, w) = read(&[
            ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1000"),
            ("OTEL_BSP_SCHEDULE_DELAY", "-5"),
        ]);
        let (long, _) = read(&[("OTEL_BSP_SCHEDULE_DELAY", "999999999")]);
        assert_eq!(long.scheduled_delay, MAX_DELAY);
        assert_eq!(s.max_queue_size, 100);
        assert_eq!(s.max_export_batch_size, 100);
        assert_eq!(s.scheduled_delay, Duration::from_millis(5000));
        assert_eq!(
            w,
            [r#"Invalid OTEL_BSP_SCHEDULE_DELAY value="-5", using default: 5000"#,]
        );
        let (s, w) = read(&[("OTEL_BSP_MAX_QUEUE_SIZE", "0")]);
        assert_eq!((s.max_queue_size, w.len()), (2048, 1));
        // The SDK's configuration is ours, whatever its own reading of the environment says.
        let config = format!("{:?}", s.config());
        assert!(config.contains("max_queue_size: 2048"), "{config}");
    }
}
