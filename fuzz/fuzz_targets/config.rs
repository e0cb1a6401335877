//! Config bytes → the config loader on that text → `Rules::compile`, as `sentinel check` does.
//! Nothing may panic, hang or blow up, whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::rules::Rules;
use sentinel::sentinel::config::{ConfigFlags, load_str};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = load_str(text, "fuzz.yaml", &ConfigFlags::default(), &|_| None) {
        let _ = Rules::compile(&config);
    }
});
