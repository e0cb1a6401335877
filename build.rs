//! Runs LALRPOP on `grammar/cel.lalrpop` (the generated parser lands in OUT_DIR and is never
//! committed) and records the commit and build date for `sentinel version`.
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    println!("cargo:rerun-if-changed=grammar/cel.lalrpop");
    println!("cargo:rerun-if-changed=.git/HEAD");
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .process()
        .expect("LALRPOP grammar grammar/cel.lalrpop failed to build");

    // A container build has no .git; the Dockerfile passes the commit in SENTINEL_COMMIT.
    println!("cargo:rerun-if-env-changed=SENTINEL_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let given = std::env::var("SENTINEL_COMMIT")
        .ok()
        .filter(|c| !c.is_empty());
    let commit = given
        .or_else(|| {
            Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SENTINEL_COMMIT={commit}");
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    println!(
        "cargo:rustc-env=SENTINEL_BUILD_DATE={}",
        civil_date(secs / 86_400)
    );
}

/// Days since 1970-01-01 to `YYYY-MM-DD` (Howard Hinnant's civil-from-days).
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
