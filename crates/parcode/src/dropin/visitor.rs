//! How values become chunks (the drop-in writer API, `parcode::visitor`):
//! [`ParcodeVisitor::visit`] adds a value's chunk, and its children's, to a
//! [`TaskGraph`]. `#[derive(ParcodeObject)]` implements it for structs;
//! this module for primitives, `String`, `Vec<T>`, `HashMap<K, V>` and `&T`.
//!
//! ```text
//! primitive, String      one chunk: bincode of the value
//! Vec<T>                 container (count u64 | shard runs) ─┬─ shard: T::serialize_slice(items)
//!                                                            └─ ... each shard's children: its items' chunkable fields
//! HashMap (plain)        one chunk: bincode of the map (00 00 00 00 when empty)
//! HashMap (map = true)   container (bucket count u32) ─── bucket ... (children: each entry's value's chunkable fields)
//! ```
//!
//! Unlike the reference, shard sizes and the order of map entries depend
//! only on the data, so the file does not depend on the machine or on a
//! `HashMap`'s random iteration order.

use std::collections::HashMap;
use std::hash::Hash;
use std::io::Write;
use std::sync::Arc;

use serde::Serialize;

use crate::dropin::error::ParcodeError;
use crate::dropin::fields;
use crate::dropin::job::ConfiguredJob;
use crate::dropin::job::{JobConfig, SerializationJob};
use crate::raw::format::ChildRef;
use crate::raw::writer::{ChunkGraph as TaskGraph, NodeId as ChunkId};
use crate::typed::map::MapPlan;
use crate::typed::vec::{container_payload, plan_shards};

/// A value that knows how to lay itself out as chunks.
pub trait ParcodeVisitor {
    /// Adds this value's chunk (and its children's) to `graph`, as a child
    /// of `parent_id` when given, written as `config_override` says.
    fn visit<'a>(
        &'a self,
        graph: &mut TaskGraph<'a>,
        parent_id: Option<ChunkId>,
        config_override: Option<JobConfig>,
    );

    /// The job that makes this value's own chunk payload.
    fn create_job<'a>(
        &'a self,
        config_override: Option<JobConfig>,
    ) -> Box<dyn SerializationJob<'a> + 'a>;

    /// Writes the fields that live in the parent's payload (all of the
    /// value, unless a derive says otherwise).
    fn serialize_shallow<W: Write>(&self, writer: &mut W) -> Result<(), ParcodeError>
    where
        Self: Serialize,
    {
        fields::write_local(self, writer)
    }

    /// Writes a shard of items: their count, then each item's shallow form
    /// (all of each item, unless a derive says otherwise).
    fn serialize_slice<W: Write>(slice: &[Self], writer: &mut W) -> Result<(), ParcodeError>
    where
        Self: Sized + Serialize,
    {
        fields::write_local(slice, writer)
    }

    /// Adds the chunks of this value's chunkable fields as children of
    /// `parent_id` (for a value stored inside a shard or bucket).
    fn visit_inlined<'a>(
        &'a self,
        graph: &mut TaskGraph<'a>,
        parent_id: ChunkId,
        config_override: Option<JobConfig>,
    ) {
        let _ = (graph, parent_id, config_override);
    }
}

/// Adds `job`, written as `config` says, as a child of `parent`.
fn add<'a>(
    graph: &mut TaskGraph<'a>,
    job: Box<dyn SerializationJob<'a> + 'a>,
    parent: Option<ChunkId>,
) -> ChunkId {
    let id = graph.add_node(job);
    if let Some(parent) = parent {
        graph.link_parent_child(parent, id);
    }
    id
}

/// `job`, configured when a config is given.
fn configured<'a>(
    job: Box<dyn SerializationJob<'a> + 'a>,
    config: Option<JobConfig>,
) -> Box<dyn SerializationJob<'a> + 'a> {
    match config {
        Some(config) => Box::new(ConfiguredJob::new(job, config)),
        None => job,
    }
}

/// One value's bincode.
struct ValueJob<'a, T: ?Sized>(&'a T);

impl<'a, T: Serialize + Sync + ?Sized> SerializationJob<'a> for ValueJob<'a, T> {
    fn execute(&self, _: &[ChildRef]) -> Result<Vec<u8>, ParcodeError> {
        let mut payload = Vec::new();
        fields::write_local(self.0, &mut payload)?;
        Ok(payload)
    }

    fn estimated_size(&self) -> usize {
        size_of_val(self.0)
    }
}

macro_rules! primitive_visitor {
    ($($t:ty),*) => {$(
        impl ParcodeVisitor for $t {
            fn visit<'a>(
                &'a self,
                graph: &mut TaskGraph<'a>,
                parent_id: Option<ChunkId>,
                config_override: Option<JobConfig>,
            ) {
                let job = self.create_job(config_override);
                add(graph, job, parent_id);
            }

            fn create_job<'a>(
                &'a self,
                config_override: Option<JobConfig>,
            ) -> Box<dyn SerializationJob<'a> + 'a> {
                configured(Box::new(ValueJob(self)), config_override)
            }
        }
    )*};
}

primitive_visitor!(
    u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64, bool, String
);

/// A job whose payload was made when the graph was built (small metadata).
struct ReadyJob(Vec<u8>);

impl SerializationJob<'_> for ReadyJob {
    fn execute(&self, _: &[ChildRef]) -> Result<Vec<u8>, ParcodeError> {
        Ok(self.0.clone())
    }

    fn estimated_size(&self) -> usize {
        self.0.len()
    }
}

/// A shard of a vector: `T::serialize_slice` of its items.
struct ShardJob<'a, T>(&'a [T]);

impl<'a, T: ParcodeVisitor + Serialize + Sync> SerializationJob<'a> for ShardJob<'a, T> {
    fn execute(&self, _: &[ChildRef]) -> Result<Vec<u8>, ParcodeError> {
        let mut payload = Vec::new();
        T::serialize_slice(self.0, &mut payload)?;
        Ok(payload)
    }

    fn estimated_size(&self) -> usize {
        size_of_val(self.0)
    }
}

impl<T: ParcodeVisitor + Serialize + Sync> ParcodeVisitor for Vec<T> {
    fn visit<'a>(
        &'a self,
        graph: &mut TaskGraph<'a>,
        parent_id: Option<ChunkId>,
        config_override: Option<JobConfig>,
    ) {
        let plan = plan_shards(self);
        let container = match container_payload(self.len(), plan.shard_len) {
            Ok(payload) => configured(Box::new(ReadyJob(payload)), config_override),
            Err(error) => {
                graph.fail(error);
                return;
            }
        };
        let id = add(graph, container, parent_id);
        // The vector's config reaches its container and shards, not its
        // items' own chunks (which carry their own attributes).
        for shard in self.chunks(plan.shard_len) {
            let shard_id = add(
                graph,
                configured(Box::new(ShardJob(shard)), config_override),
                Some(id),
            );
            for item in shard {
                item.visit_inlined(graph, shard_id, None);
            }
        }
    }

    fn create_job<'a>(
        &'a self,
        config_override: Option<JobConfig>,
    ) -> Box<dyn SerializationJob<'a> + 'a> {
        // A container without shards: what a vector is when not visited.
        let payload = container_payload(0, 1).unwrap_or_default();
        configured(Box::new(ReadyJob(payload)), config_override)
    }
}

/// One map layout's payload, made from a shared plan when the file is written.
struct MapJob<'a, K, V> {
    plan: Arc<MapPlan<'a, K, V>>,
    /// A bucket, or the whole map inline.
    bucket: Option<usize>,
}

impl<'a, K, V> SerializationJob<'a> for MapJob<'a, K, V>
where
    K: Serialize + Hash + Sync,
    V: Serialize + Sync,
{
    fn execute(&self, _: &[ChildRef]) -> Result<Vec<u8>, ParcodeError> {
        Ok(match self.bucket {
            Some(bucket) => self.plan.bucket_payload(bucket)?,
            None => self.plan.inline_payload()?,
        })
    }

    fn estimated_size(&self) -> usize {
        self.plan.len() * (size_of::<K>() + size_of::<V>() + 12)
    }
}

impl<K, V> ParcodeVisitor for HashMap<K, V>
where
    K: Serialize + Hash + Eq + Sync,
    V: Serialize + Sync + ParcodeVisitor,
{
    fn visit<'a>(
        &'a self,
        graph: &mut TaskGraph<'a>,
        parent_id: Option<ChunkId>,
        config_override: Option<JobConfig>,
    ) {
        if !config_override.is_some_and(|config| config.is_map) {
            let job = if self.is_empty() {
                // The reference's empty map: a container with no buckets.
                configured(Box::new(ReadyJob(vec![0; 4])), config_override)
            } else {
                self.create_job(config_override)
            };
            add(graph, job, parent_id);
            return;
        }
        let plan = match MapPlan::buckets(self) {
            Ok(plan) => Arc::new(plan),
            Err(error) => {
                graph.fail(error);
                return;
            }
        };
        let count = plan.bucket_count() as u32;
        let container = configured(
            Box::new(ReadyJob(count.to_le_bytes().to_vec())),
            config_override,
        );
        let id = add(graph, container, parent_id);
        for bucket in 0..plan.bucket_count() {
            let job = MapJob {
                plan: Arc::clone(&plan),
                bucket: Some(bucket),
            };
            let bucket_id = add(graph, configured(Box::new(job), config_override), Some(id));
            // Each entry's value's chunkable fields, in the bucket's order.
            for (_, value) in plan.bucket_entries(bucket) {
                value.visit_inlined(graph, bucket_id, None);
            }
        }
    }

    fn create_job<'a>(
        &'a self,
        config_override: Option<JobConfig>,
    ) -> Box<dyn SerializationJob<'a> + 'a> {
        let job: Box<dyn SerializationJob<'a> + 'a> = match MapPlan::inline(self) {
            Ok(plan) => Box::new(MapJob {
                plan: Arc::new(plan),
                bucket: None,
            }),
            Err(error) => Box::new(FailedJob(error.to_string())),
        };
        configured(job, config_override)
    }
}

/// A job that could not be planned: it fails when executed.
struct FailedJob(String);

impl SerializationJob<'_> for FailedJob {
    fn execute(&self, _: &[ChildRef]) -> Result<Vec<u8>, ParcodeError> {
        Err(ParcodeError::Serialization(self.0.clone()))
    }

    fn estimated_size(&self) -> usize {
        0
    }
}

impl<T: ParcodeVisitor> ParcodeVisitor for &T {
    fn visit<'a>(
        &'a self,
        graph: &mut TaskGraph<'a>,
        parent_id: Option<ChunkId>,
        config_override: Option<JobConfig>,
    ) {
        (**self).visit(graph, parent_id, config_override);
    }

    fn create_job<'a>(
        &'a self,
        config_override: Option<JobConfig>,
    ) -> Box<dyn SerializationJob<'a> + 'a> {
        (**self).create_job(config_override)
    }
}
