//! Links `codarisd` with packed relative relocations (`-z pack-relative-relocs`, DT_RELR) when
//! the C library it will run on loads them (glibc 2.36 and later).
//!
//! `codarisd` is position-independent, so each of its pointers to itself is a relocation the
//! loader reads and applies at every start: 1.5 MB of them in the usual format, read into the
//! daemon's memory and kept there for as long as it runs (about 2 of its 20 MiB when idle).
//! Packed, the same relocations take 19 KB. An older glibc cannot load a packed binary at all,
//! so the flag is given only when the build machine's glibc is new enough and the binary is
//! built for that same machine.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/glibc.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    if glibc_version().is_some_and(|version| version >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

include!("build/glibc.rs");
