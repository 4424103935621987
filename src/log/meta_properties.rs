//! `meta.properties`: the identity of a log dir, in Kafka's ZK-mode format (`version=0`,
//! `broker.id`, `cluster.id`). A dir that names another cluster or broker must not be used,
//! or a broker pointed at the wrong ZooKeeper (or given someone else's disk) would serve and
//! replicate data that is not its own.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// File name inside each log dir.
pub const FILE_NAME: &str = "meta.properties";

/// The identity recorded in a log dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    pub broker_id: i32,
    pub cluster_id: String,
}

/// Problems with a dir's `meta.properties`.
#[derive(Debug, thiserror::Error)]
pub enum MetaPropertiesError {
    #[error("cannot access {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} is malformed: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error(
        "the cluster id {zk_cluster_id} in ZooKeeper does not match cluster.id={stored} in {}: this \
         broker is trying to join the wrong cluster (is zookeeper.connect, or its chroot, right?)",
        path.display()
    )]
    ClusterMismatch {
        path: PathBuf,
        stored: String,
        zk_cluster_id: String,
    },
    #[error(
        "broker.id {configured} does not match broker.id={stored} stored in {}: if you moved your \
         data, configure broker.id={stored}; to create a new broker, empty the log dirs (log.dirs)",
        path.display()
    )]
    BrokerMismatch {
        path: PathBuf,
        stored: i32,
        configured: i32,
    },
    #[error("log dirs disagree about broker.id: {} says {first}, {} says {second}", first_path.display(), second_path.display())]
    InconsistentBrokerIds {
        first_path: PathBuf,
        first: i32,
        second_path: PathBuf,
        second: i32,
    },
}

impl MetaProperties {
    /// Reads `dir/meta.properties`; `Ok(None)` when the file does not exist.
    pub fn read(dir: &Path) -> Result<Option<MetaProperties>, MetaPropertiesError> {
        let path = dir.join(FILE_NAME);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(MetaPropertiesError::Io { path, source }),
        };
        let props = parse_simple_properties(&text);
        let malformed = |reason: String| MetaPropertiesError::Malformed {
            path: path.clone(),
            reason,
        };
        match props.get("version").map(String::as_str) {
            Some("0") => {}
            Some(v) => {
                return Err(malformed(format!(
                    "version={v} (a KRaft-mode dir?); kastle reads version=0"
                )))
            }
            None => return Err(malformed("no version".into())),
        }
        let broker_id = props
            .get("broker.id")
            .ok_or_else(|| malformed("no broker.id".into()))?
            .parse()
            .map_err(|e| malformed(format!("broker.id: {e}")))?;
        let cluster_id = props
            .get("cluster.id")
            .cloned()
            .ok_or_else(|| malformed("no cluster.id".into()))?;
        Ok(Some(MetaProperties { broker_id, cluster_id }))
    }

    /// Writes `dir/meta.properties` atomically (temp file, fsync, rename).
    pub fn write(&self, dir: &Path) -> Result<(), MetaPropertiesError> {
        let path = dir.join(FILE_NAME);
        let tmp = dir.join(format!("{FILE_NAME}.tmp"));
        let io = |source| MetaPropertiesError::Io {
            path: path.clone(),
            source,
        };
        let text = format!(
            "#\n#Written by kastle\nversion=0\nbroker.id={}\ncluster.id={}\n",
            self.broker_id, self.cluster_id
        );
        let mut file = fs::File::create(&tmp).map_err(io)?;
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        fs::rename(&tmp, &path).map_err(io)?;
        Ok(())
    }

    /// Checks a stored identity against the cluster and broker this process is.
    pub fn verify(&self, dir: &Path, cluster_id: &str, broker_id: i32) -> Result<(), MetaPropertiesError> {
        let path = dir.join(FILE_NAME);
        if self.cluster_id != cluster_id {
            return Err(MetaPropertiesError::ClusterMismatch {
                path,
                stored: self.cluster_id.clone(),
                zk_cluster_id: cluster_id.to_string(),
            });
        }
        if self.broker_id != broker_id {
            return Err(MetaPropertiesError::BrokerMismatch {
                path,
                stored: self.broker_id,
                configured: broker_id,
            });
        }
        Ok(())
    }
}

/// The one broker id every dir that has a `meta.properties` agrees on, if any.
pub fn stored_broker_id(found: &[(PathBuf, MetaProperties)]) -> Result<Option<i32>, MetaPropertiesError> {
    let Some((first_path, first)) = found.first() else {
        return Ok(None);
    };
    for (path, meta) in &found[1..] {
        if meta.broker_id != first.broker_id {
            return Err(MetaPropertiesError::InconsistentBrokerIds {
                first_path: first_path.clone(),
                first: first.broker_id,
                second_path: path.clone(),
                second: meta.broker_id,
            });
        }
    }
    Ok(Some(first.broker_id))
}

/// `key=value` lines with `#`/`!` comments: all `meta.properties` ever holds.
fn parse_simple_properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| l.split_once(['=', ':']))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_identity_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let meta = MetaProperties {
            broker_id: 3,
            cluster_id: "Wt3qTl4hQUC3fp1Z2bHeVA".into(),
        };
        meta.write(dir.path()).expect("write");
        assert_eq!(MetaProperties::read(dir.path()).expect("read"), Some(meta));
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).expect("text");
        assert!(text.contains("version=0\nbroker.id=3\ncluster.id=Wt3qTl4hQUC3fp1Z2bHeVA"));
    }

    #[test]
    fn a_dir_of_another_cluster_is_refused_with_dir_and_ids() {
        let dir = tempfile::tempdir().expect("tempdir");
        let meta = MetaProperties {
            broker_id: 1,
            cluster_id: "other-cluster".into(),
        };
        let err = meta.verify(dir.path(), "this-cluster", 1).expect_err("mismatch");
        let msg = err.to_string();
        assert!(msg.contains("other-cluster") && msg.contains("this-cluster"), "{msg}");
        assert!(msg.contains(&dir.path().display().to_string()), "{msg}");
    }

    #[test]
    fn a_dir_of_another_broker_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let meta = MetaProperties {
            broker_id: 2,
            cluster_id: "c".into(),
        };
        let msg = meta.verify(dir.path(), "c", 1).expect_err("mismatch").to_string();
        assert!(msg.contains("broker.id 1") && msg.contains("broker.id=2"), "{msg}");
    }

    #[test]
    fn kraft_and_garbled_files_are_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(FILE_NAME), "version=1\nnode.id=1\ncluster.id=x\n").expect("write");
        assert!(matches!(
            MetaProperties::read(dir.path()),
            Err(MetaPropertiesError::Malformed { .. })
        ));
        fs::write(dir.path().join(FILE_NAME), "version=0\nbroker.id=x\ncluster.id=x\n").expect("write");
        assert!(matches!(
            MetaProperties::read(dir.path()),
            Err(MetaPropertiesError::Malformed { .. })
        ));
        assert_eq!(MetaProperties::read(&dir.path().join("missing")).expect("absent"), None);
    }

    #[test]
    fn dirs_must_agree_on_the_broker_id() {
        let a = (
            PathBuf::from("/a"),
            MetaProperties {
                broker_id: 1,
                cluster_id: "c".into(),
            },
        );
        let b = (
            PathBuf::from("/b"),
            MetaProperties {
                broker_id: 2,
                cluster_id: "c".into(),
            },
        );
        assert_eq!(stored_broker_id(std::slice::from_ref(&a)).expect("one"), Some(1));
        assert!(stored_broker_id(&[a, b]).is_err());
        assert_eq!(stored_broker_id(&[]).expect("none"), None);
    }
}
