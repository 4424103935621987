//! `.kafka_cleanshutdown`: written into every live log dir after a clean shutdown (Kafka 3.7+
//! JSON `{"version":0,"brokerEpoch":N}`); its absence at start-up means the logs need recovery.
//! It is removed once the logs are loaded, so a crash after that is not mistaken for a clean stop.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = ".kafka_cleanshutdown";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Marker {
    version: i32,
    #[serde(rename = "brokerEpoch")]
    broker_epoch: i64,
}

/// Writes the marker with the epoch the broker last registered with.
pub fn write(dir: &Path, broker_epoch: i64) -> std::io::Result<()> {
    let json = serde_json::to_vec(&Marker {
        version: 0,
        broker_epoch,
    })
    .map_err(std::io::Error::other)?;
    let mut file = fs::File::create(dir.join(FILE_NAME))?;
    file.write_all(&json)?;
    file.sync_all()
}

/// Whether the last shutdown of this dir was clean; takes the marker away. Returns the
/// recorded broker epoch when the file holds one (older Kafka wrote it empty).
pub fn take(dir: &Path) -> std::io::Result<Option<Option<i64>>> {
    let path = dir.join(FILE_NAME);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    fs::remove_file(&path)?;
    Ok(Some(
        serde_json::from_slice::<Marker>(&bytes).ok().map(|m| m.broker_epoch),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_is_kafkas_json_and_is_consumed_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(take(dir.path()).expect("absent"), None);
        write(dir.path(), 4294967302).expect("write");
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).expect("read");
        assert_eq!(text, r#"{"version":0,"brokerEpoch":4294967302}"#);
        assert_eq!(take(dir.path()).expect("present"), Some(Some(4294967302)));
        assert_eq!(take(dir.path()).expect("gone"), None);
    }

    #[test]
    fn an_empty_marker_from_older_kafka_still_means_clean() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(FILE_NAME), b"").expect("write");
        assert_eq!(take(dir.path()).expect("present"), Some(None));
    }
}
