#![no_main]

#[path = "../../tests/fuzz_targets/mod.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::jsonrpc(data));
