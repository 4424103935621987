//! What lives in a log dir. For now: the `meta.properties` identity file and the
//! `.kafka_cleanshutdown` marker; segments, indexes, recovery and retention arrive with the
//! log-storage work. This module knows nothing about ZooKeeper.

pub mod clean_shutdown;
pub mod meta_properties;

pub use meta_properties::{MetaProperties, MetaPropertiesError};
