//! Bytes → the page decoder's JSON grammar (`sentinel::resource::json::value_end`) against
//! serde_json, the JSON every other part of the sentinel reads with
//! (`sentinel::resource::json::check_against_serde` says how). Nothing may panic or hang,
//! whatever the bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sentinel::resource::json::check_against_serde;

fuzz_target!(|data: &[u8]| {
    // Pages reach the grammar as text: it scans UTF-8 only.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(why) = check_against_serde(text) {
        panic!("{why}");
    }
});
