/// The build machine's glibc, as `getconf GNU_LIBC_VERSION` says (`glibc 2.36`): read by the
/// build script, which links with packed relocations from 2.36 on, and by the test that checks
/// it did.
fn glibc_version() -> Option<(u32, u32)> {
    let output = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let (major, minor) = text.trim().strip_prefix("glibc ")?.split_once('.')?;
    let minor = minor.split('.').next()?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}
