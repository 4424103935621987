//! Every seed runs through its target without a crash, and every crash the fuzzers found stays
//! here as bytes, with the fix it led to.

use super::{seeds, target, TARGETS};

#[test]
fn every_seed_runs_through_its_target() {
    let seeds = seeds::all();
    for (name, _) in TARGETS {
        assert!(
            seeds.iter().filter(|(t, _, _)| t == name).count() >= 2,
            "target {name} has fewer than 2 seeds"
        );
    }
    for (name, file, bytes) in &seeds {
        let run = target(name).expect("every seed names a target");
        run(bytes);
        let _ = file;
    }
}

#[test]
fn request_seeds_cover_every_served_api_and_version() {
    let seeds = seeds::all();
    for &(api_key, min, max) in crate::network::api_versions::SUPPORTED {
        for version in min..=max {
            let name = format!("{api_key:?}-v{version}");
            assert!(
                seeds.iter().any(|(t, n, _)| *t == "request" && *n == name),
                "no request seed {name}"
            );
        }
    }
}

#[test]
fn znode_and_file_seeds_are_valid_inputs() {
    use crate::zk::models::*;
    for (target, name, bytes) in seeds::all() {
        if target == "zk_model" {
            let payload = &bytes[1..];
            let ok = match bytes[0] {
                0 => BrokerRegistration::decode(payload).is_ok(),
                1 => ControllerZNode::decode(payload).is_ok(),
                2 => ControllerEpochZNode::decode(payload).is_ok(),
                3 => ClusterIdZNode::decode(payload).is_ok(),
                4 => TopicAssignment::decode(payload).is_ok(),
                5 => PartitionState::decode(payload).is_ok(),
                6 => IsrChangeNotification::decode(payload).is_ok(),
                7 => LogDirEventNotification::decode(payload).is_ok(),
                8 => ReassignPartitions::decode(payload).is_ok(),
                9 => PreferredReplicaElection::decode(payload).is_ok(),
                10 => EntityConfig::decode(payload).is_ok(),
                11 => ConfigChangeNotification::decode(payload).is_ok(),
                12 => ProducerIdBlock::decode(payload).is_ok(),
                _ => FeatureZNode::decode(payload).is_ok(),
            };
            assert!(ok, "seed {name} does not decode");
        }
        if target == "record_batches" {
            let headers = crate::protocol::validate_batches(&bytes, usize::MAX);
            assert!(headers.is_ok(), "seed {name} is not a valid batch: {headers:?}");
        }
    }
}

/// Not a check: how scripts/fuzz writes the seed corpus (`DIR/TARGET/NAME`) with a normal build,
/// since the instrumented fuzz build cannot run a plain `main`.
#[test]
#[ignore = "writes the seed corpus into $KASTLE_FUZZ_SEEDS for scripts/fuzz"]
fn write_seed_corpus() {
    let dir = std::path::PathBuf::from(std::env::var_os("KASTLE_FUZZ_SEEDS").expect("KASTLE_FUZZ_SEEDS names a dir"));
    let seeds = seeds::all();
    for (target, name, bytes) in &seeds {
        let target_dir = dir.join(target);
        std::fs::create_dir_all(&target_dir).expect("creating a corpus dir");
        std::fs::write(target_dir.join(name), bytes).expect("writing a seed");
    }
    println!("wrote {} seeds under {}", seeds.len(), dir.display());
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Found by `record_batches` in its first CI-length run ("recompressed batches are invalid"),
/// when the targets were built with `--cfg fuzzing`. It does not reproduce in the shipped build
/// (this test pins that): the cfg changes dependencies (miniz_oxide, for one, skips its checksum
/// check under it), so scripts/fuzz no longer passes it and the fuzzed code is the shipped code.
#[test]
fn crash_recompressed_garbage_records() {
    let input = hex(concat!(
        "0000000000000000000000500000000002f761c4ec00020000000200000000000000000000000000000000ffffffff",
        "ffffffffffffffffffffffffff000000031d70140000000000500000000002f70002046b320100100000040104763300"
    ));
    super::record_batches(&input);
}

/// The second `record_batches` crash, in the shipped build: re-coding a snappy batch whose
/// inflated records do not decode wrote a batch produce validation refuses. Fixed in
/// `recompress.rs` (the inflated records are checked before re-coding). Caveat: this input
/// crashes the release fuzz build but not this debug test build (not yet traced why), so the
/// fix was proved by the fuzz target (a crash within 1,231 inputs before, none after).
#[test]
fn crash_recompressed_undecodable_records() {
    let input = hex(concat!(
        "0000000000000000000000500000000002f761c4ec00020000000200000000000000000000000000000000ffffffff",
        "ffffffffffffffffffffffffff000000031d70140010000002046b320100100000040104763300100000040104763300"
    ));
    super::record_batches(&input);
}
