//! Link settings of the `promptd` binary.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Relative relocations packed (DT_RELR, glibc 2.36+, GNU ld 2.38+, lld): a position-
    // independent binary's table of pointers to patch at start shrinks from 1.6 MB to a few KB.
    // An older linker ignores the option with a warning.
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.contains("linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
