//! Page bytes → the daemon's page decoder → every resource decided by the default rules, as the
//! daemon does with a list page. Nothing may panic, hang or blow up, whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::cel::time::parse_timestamp;
use sentinel::decision::Scratch;
use sentinel::rules::Rules;
use sentinel::sentinel::api::decode_page;
use std::sync::{Arc, OnceLock};

fuzz_target!(|data: &[u8]| {
    static RULES: OnceLock<Rules> = OnceLock::new();
    let rules = RULES.get_or_init(|| Rules::defaults().expect("the default rules compile"));
    let Ok(page) = decode_page(data) else {
        return;
    };
    let now = parse_timestamp("2025-10-21T12:00:00Z").expect("a valid timestamp");
    let mut scratch = Scratch::default();
    for resource in page.items {
        let resource = Arc::new(resource);
        let _ = rules.decision.evaluate(&resource, now, &mut scratch);
    }
});
