//! Coordinators that live on the leaders of internal topics: the group coordinator on
//! `__consumer_offsets`.

pub mod group;
