//! Entry points for the coverage-guided fuzz targets in `fuzz/` (one function per target), and
//! the seed corpus built from inputs kastle itself produces ([`seeds`]).
//!
//! Each function takes arbitrary bytes and runs them through the same decoding path the broker
//! runs on bytes a peer or a file supplied. Any panic (or a broken property asserted here) is a
//! crash; because the entry points live in the library, a crash input reproduces in a plain unit
//! test (`tests.rs` keeps every one found as bytes). Not part of the broker's API.

mod files;
mod records;
mod request;
pub mod seeds;
#[cfg(test)]
mod tests;

pub use files::{config_file, jaas, log_file, zk_model};
pub use records::{decompress, record_batches};
pub use request::{request, request_frames};

/// A target's entry point: any bytes, and a panic is a crash.
pub type Entry = fn(&[u8]);

/// Every target: its name (the `fuzz/fuzz_targets/NAME.rs` file) and its entry point.
pub const TARGETS: &[(&str, Entry)] = &[
    ("request", request),
    ("request_frames", request_frames),
    ("record_batches", record_batches),
    ("decompress", decompress),
    ("zk_model", zk_model),
    ("log_file", log_file),
    ("config_file", config_file),
    ("jaas", jaas),
];

/// The entry point for `name`, if there is such a target.
pub fn target(name: &str) -> Option<Entry> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Splits a selector byte off the input: `(data[0] % choices, rest)`.
fn select(data: &[u8], choices: u8) -> Option<(u8, &[u8])> {
    let (&first, rest) = data.split_first()?;
    Some((first % choices, rest))
}
