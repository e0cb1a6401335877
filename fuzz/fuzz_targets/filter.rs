//! Fuzz target: rule texts through the server-filter derivation, which must be sound: a
//! resource the rules publish is never left out by the derived search. The oracle and the
//! input format are `rules::filter::check_soundness_of_input`'s, which the regression test over
//! tests/data/regressions/filter runs too.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = sentinel::rules::filter::check_soundness_of_input(data) {
        panic!("{why}");
    }
});
