#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kastle::fuzz_entry::config_file(data));
