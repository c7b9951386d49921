//! Link settings of the `promptd` binary, and its tree-sitter grammars (`build/grammars.rs`).

#[path = "build/grammars.rs"]
mod grammars;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    grammars::build();
    // Relative relocations packed (DT_RELR, glibc 2.36+, GNU ld 2.38+, lld): a position-
    // independent binary's table of pointers to patch at start shrinks from 1.6 MB to a few KB.
    // An older linker ignores the option with a warning.
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.contains("linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    // The functions a server runs to start and answer its first requests, placed together at
    // the front of `.text` (LLD, the default linker of x86_64 Linux builds): an idle server then
    // maps a few contiguous pages of code instead of a 64 KB fault-around window per scattered
    // function. The linker driver (`build/cc-ordered`) finds the functions ThinLTO renamed
    // since the list was written; names the build no longer has are skipped
    // (`scripts/order-symbols` rewrites the list from a recorded session).
    println!("cargo:rerun-if-changed=build/symbol-order.txt");
    if target.starts_with("x86_64") && target.contains("linux-gnu") {
        // Release builds only (debug links stay fast, and their layout does not matter).
        if std::env::var("PROFILE").as_deref() != Ok("release") {
            return;
        }
        // Identical functions folded into one (LLD): generic code instantiated for types of the
        // same layout is emitted once per type.
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
        let order = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
            .join("build/symbol-order.txt");
        if order.is_file() {
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}
