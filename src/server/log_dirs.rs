//! Log-dir identity at start-up: create missing dirs, read every `meta.properties`, settle the
//! broker id (configured, stored, or generated from ZooKeeper), refuse dirs that belong to
//! another cluster or broker, and write the identity where it is missing. A dir that cannot be
//! created or read is taken offline (logged), as Kafka does; only when none is left does
//! start-up fail.

use std::path::{Path, PathBuf};

use crate::log::meta_properties::{stored_broker_id, MetaProperties, MetaPropertiesError};

/// The log dirs after the identity check.
#[derive(Debug, Clone)]
pub struct LogDirs {
    pub live: Vec<PathBuf>,
    pub offline: Vec<(PathBuf, String)>,
    /// Identities already on disk, by dir.
    pub found: Vec<(PathBuf, MetaProperties)>,
}

/// Creates the dirs and reads their identities. Bad identities are errors; I/O failures take
/// a dir offline.
pub fn scan(dirs: &[PathBuf]) -> Result<LogDirs, MetaPropertiesError> {
    let mut out = LogDirs {
        live: Vec::new(),
        offline: Vec::new(),
        found: Vec::new(),
    };
    for dir in dirs {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::error!(dir = %dir.display(), error = %e, "log dir is unusable; taking it offline");
            out.offline.push((dir.clone(), e.to_string()));
            continue;
        }
        match MetaProperties::read(dir) {
            Ok(Some(meta)) => out.found.push((dir.clone(), meta)),
            Ok(None) => {}
            Err(MetaPropertiesError::Io { source, .. }) => {
                tracing::error!(dir = %dir.display(), error = %source, "cannot read meta.properties; taking the log dir offline");
                out.offline.push((dir.clone(), source.to_string()));
                continue;
            }
            Err(e) => return Err(e),
        }
        out.live.push(dir.clone());
    }
    Ok(out)
}

impl LogDirs {
    /// The broker id every dir with an identity agrees on.
    pub fn stored_broker_id(&self) -> Result<Option<i32>, MetaPropertiesError> {
        stored_broker_id(&self.found)
    }

    /// Checks every stored identity against (cluster, broker) and writes it into dirs that
    /// have none. A write failure takes that dir offline.
    pub fn settle_identity(&mut self, cluster_id: &str, broker_id: i32) -> Result<(), MetaPropertiesError> {
        for (dir, meta) in &self.found {
            meta.verify(dir, cluster_id, broker_id)?;
        }
        let meta = MetaProperties {
            broker_id,
            cluster_id: cluster_id.to_string(),
        };
        let mut still_live = Vec::with_capacity(self.live.len());
        for dir in std::mem::take(&mut self.live) {
            if self.has_identity(&dir) {
                still_live.push(dir);
                continue;
            }
            match meta.write(&dir) {
                Ok(()) => still_live.push(dir),
                Err(e) => {
                    tracing::error!(dir = %dir.display(), error = %e, "cannot write meta.properties; taking the log dir offline");
                    self.offline.push((dir, e.to_string()));
                }
            }
        }
        self.live = still_live;
        Ok(())
    }

    fn has_identity(&self, dir: &Path) -> bool {
        self.found.iter().any(|(d, _)| d == dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_dirs_get_the_identity_and_existing_ones_are_checked() {
        let root = tempfile::tempdir().expect("tempdir");
        let a = root.path().join("a");
        let b = root.path().join("b");
        let mut dirs = scan(&[a.clone(), b.clone()]).expect("scan");
        assert_eq!(dirs.live.len(), 2);
        dirs.settle_identity("cluster", 7).expect("settle");
        let again = scan(&[a, b]).expect("rescan");
        assert_eq!(again.stored_broker_id().expect("agree"), Some(7));
        let mut again = again;
        let err = again.settle_identity("other", 7).expect_err("wrong cluster");
        assert!(matches!(err, MetaPropertiesError::ClusterMismatch { .. }));
    }

    #[test]
    fn a_dir_that_cannot_be_created_goes_offline() {
        let root = tempfile::tempdir().expect("tempdir");
        let file = root.path().join("not-a-dir");
        std::fs::write(&file, b"x").expect("write");
        let good = root.path().join("good");
        let dirs = scan(&[file.join("sub"), good.clone()]).expect("scan");
        assert_eq!(dirs.live, vec![good]);
        assert_eq!(dirs.offline.len(), 1);
    }
}
