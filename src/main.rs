//! The `promptd` binary: everything lives in the library; this only hands over to the CLI.

// mimalloc: indexing a large repository allocates per chunk and per token on several threads,
// where glibc's malloc showed prominently in profiles.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// No transparent huge pages: mimalloc advises them for its arenas, and an idle server then
/// holds a whole 2 MiB page for every few KiB it touched (most of its anonymous memory).
/// Run as a constructor, before the first allocation maps the first arena.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static NO_TRANSPARENT_HUGE_PAGES: extern "C" fn() = {
    extern "C" fn disable() {
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
    disable
};

fn main() -> std::process::ExitCode {
    promptd::cli::main()
}
