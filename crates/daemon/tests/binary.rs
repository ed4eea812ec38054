//! How `codarisd` is linked: with packed relative relocations wherever the build machine's
//! glibc can load them (see `build.rs`), so an idle daemon does not keep 1.5 MB of them.

use std::process::Command;

include!("../build/glibc.rs");

#[test]
fn the_daemon_carries_its_relocations_packed_where_glibc_loads_them() {
    let Some(version) = glibc_version() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "`getconf GNU_LIBC_VERSION` names no glibc on CI"
        );
        return;
    };
    let daemon = env!("CARGO_BIN_EXE_codarisd");
    let sections = Command::new("readelf")
        .args(["--section-headers", "--wide", daemon])
        .output()
        .expect("readelf (binutils) runs");
    assert!(sections.status.success(), "readelf failed on {daemon}");
    let sections = String::from_utf8_lossy(&sections.stdout);
    let packed = sections.contains(".relr.dyn");
    assert_eq!(
        packed,
        version >= (2, 36),
        "glibc {version:?}: packed relative relocations {}",
        if packed { "present" } else { "absent" }
    );
    // And it still starts: the loader applies them.
    let help = Command::new(daemon).arg("--version").output().unwrap();
    assert!(help.status.success(), "{help:?}");
}
