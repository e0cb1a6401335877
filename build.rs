//! Runs LALRPOP on `grammar/cel.lalrpop`; the generated parser lands in OUT_DIR and is never committed.
fn main() {
    println!("cargo:rerun-if-changed=grammar/cel.lalrpop");
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .process()
        .expect("LALRPOP grammar grammar/cel.lalrpop failed to build");
}
