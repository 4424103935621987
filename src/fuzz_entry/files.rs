//! What kastle reads from ZooKeeper and from disk: every znode payload model (and its JSON
//! schema check), checkpoint and producer-snapshot files, `meta.properties`, the clean-shutdown
//! marker, `__consumer_offsets` records, the broker config file, and JAAS text.

use std::path::{Path, PathBuf};

use crate::config::{load, ConfigSources};
use crate::controller::model::LeaderAndIsr;
use crate::coordinator::group::schema::{parse_group_value, parse_key, parse_offset_value};
use crate::log::checkpoint::{LeaderEpochCheckpointFile, OffsetCheckpointFile};
use crate::log::meta_properties::MetaProperties;
use crate::log::{clean_shutdown, producer_snapshot};
use crate::security::jaas::{parse_file, parse_modules};
use crate::types::ZkVersion;
use crate::zk::models::{
    BrokerRegistration, ClusterIdZNode, ConfigChangeNotification, ControllerEpochZNode, ControllerZNode, EntityConfig,
    FeatureZNode, IsrChangeNotification, LogDirEventNotification, PartitionState, PreferredReplicaElection,
    ProducerIdBlock, ReassignPartitions, TopicAssignment, ZNodePayload,
};
use crate::zk::paths::ZNodeKind;
use crate::zk::schema;

/// Decodes `data` as `T`; what decodes must encode and decode back to the same value.
fn round_trip<T: ZNodePayload + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(value) = T::decode(data) {
        let again = T::decode(&value.encode()).expect("an encoded payload decodes");
        assert_eq!(again, value, "{} payload does not round-trip", T::WHAT);
    }
}

/// The first byte picks a znode model; the rest is its payload. Every payload is also checked
/// against the schema of the znode kind the byte picks.
pub fn zk_model(data: &[u8]) {
    let Some((choice, payload)) = super::select(data, 14) else {
        return;
    };
    match choice {
        0 => round_trip::<BrokerRegistration>(payload),
        1 => round_trip::<ControllerZNode>(payload),
        2 => round_trip::<ControllerEpochZNode>(payload),
        3 => round_trip::<ClusterIdZNode>(payload),
        4 => round_trip::<TopicAssignment>(payload),
        5 => {
            round_trip::<PartitionState>(payload);
            if let Ok(state) = LeaderAndIsr::from_znode(payload, ZkVersion(0)) {
                LeaderAndIsr::from_znode(&state.to_znode(0), ZkVersion(0)).expect("written state decodes");
            }
        }
        6 => round_trip::<IsrChangeNotification>(payload),
        7 => round_trip::<LogDirEventNotification>(payload),
        8 => round_trip::<ReassignPartitions>(payload),
        9 => round_trip::<PreferredReplicaElection>(payload),
        10 => round_trip::<EntityConfig>(payload),
        11 => round_trip::<ConfigChangeNotification>(payload),
        12 => round_trip::<ProducerIdBlock>(payload),
        _ => round_trip::<FeatureZNode>(payload),
    }
    let kind = ZNodeKind::ALL[usize::from(data[0]) % ZNodeKind::ALL.len()];
    let _ = schema::validate(kind, payload);
}

/// A scratch directory of this process for file-reading targets (the readers take paths).
fn scratch_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kastle-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch dir for fuzzed files");
        dir
    })
}

fn write_scratch(name: &str, data: &[u8]) -> PathBuf {
    let path = scratch_dir().join(name);
    std::fs::write(&path, data).expect("writing a fuzzed file");
    path
}

/// The first byte picks a file kind; the rest is the file's contents.
pub fn log_file(data: &[u8]) {
    let Some((choice, contents)) = super::select(data, 8) else {
        return;
    };
    match choice {
        0 => {
            let _ = OffsetCheckpointFile::new(write_scratch("offsets.checkpoint", contents)).read();
        }
        1 => {
            let _ = LeaderEpochCheckpointFile::new(write_scratch("leader-epoch-checkpoint", contents)).read();
        }
        2 => {
            if let Ok(entries) = producer_snapshot::decode(contents) {
                let again = producer_snapshot::decode(&producer_snapshot::encode(entries.iter()));
                assert_eq!(
                    again.map(|e| e.len()).ok(),
                    Some(entries.len()),
                    "snapshot does not round-trip"
                );
            }
        }
        3 => {
            write_scratch("meta.properties", contents);
            let _ = MetaProperties::read(scratch_dir());
        }
        4 => {
            write_scratch(".kafka_cleanshutdown", contents);
            let _ = clean_shutdown::take(scratch_dir());
        }
        5 => {
            let _ = parse_key(contents);
        }
        6 => {
            let _ = parse_offset_value(contents);
        }
        _ => {
            let _ = parse_group_value(contents);
        }
    }
}

/// The first byte picks YAML or `server.properties`; the rest is the `--config` file, loaded and
/// validated as at start-up.
pub fn config_file(data: &[u8]) {
    let Some((choice, contents)) = super::select(data, 2) else {
        return;
    };
    let name = if choice == 0 {
        "server.yaml"
    } else {
        "server.properties"
    };
    let sources = ConfigSources {
        file: Some(write_scratch(name, contents)),
        ..ConfigSources::default()
    };
    let _ = load(&sources);
}

/// JAAS text, both as an inline `sasl.jaas.config` value and as a sectioned file.
pub fn jaas(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(modules) = parse_modules(text) {
        for module in &modules {
            module.simple_name();
        }
    }
    let _ = parse_file(text);
}
