//! The `promptd` binary: everything lives in the library; this only hands over to the CLI.

// mimalloc: indexing a large repository allocates per chunk and per token on several threads,
// where glibc's malloc showed as a sixth of the profile.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    promptd::cli::main()
}
