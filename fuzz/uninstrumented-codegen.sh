#!/bin/sh
# RUSTC_WRAPPER for fuzz builds: compiles Cranelift (the `cranelift*` crates and regalloc2)
# without libFuzzer's coverage instrumentation, everything else as cargo-fuzz asks.
#
# Why: in the `cel` target every input that checks goes through Cranelift, and with Cranelift
# instrumented about two thirds of each execution is libFuzzer's bookkeeping of the code
# generator's own edges and comparisons (measured with perf; README "Fuzzing"). Without it the
# target runs several times faster. The property is unchanged — the interpreter and the JIT
# must still agree on every input that checks — and our own lowering (src/cel/jit/) stays
# instrumented, so coverage still guides the fuzzer through what we emit; only guidance by
# Cranelift's internal branches is given up.
#
# Use: RUSTC_WRAPPER=$PWD/fuzz/uninstrumented-codegen.sh cargo fuzz build -s none -O
# Cargo does not rebuild when the wrapper changes: `cargo clean -p cranelift-entity` (in fuzz/,
# with the same --release --target) first, so the Cranelift crates and their dependents rebuild.
rustc="$1"
shift
case " $* " in
*" --crate-name cranelift"* | *" --crate-name regalloc2 "*)
    # Drop the sancov pass and its options; keep every other flag.
    for arg in "$@"; do
        shift
        case "$arg" in
        -Cpasses=sancov-module | -Cllvm-args=-sanitizer-coverage-*) ;;
        *) set -- "$@" "$arg" ;;
        esac
    done
    ;;
esac
exec "$rustc" "$@"
