//! PAR4 chunk graphs built from structured input, so that what random
//! bytes almost never produce is reached: chunks shared by several parents,
//! repeated bucket references, keys stored twice or in the wrong bucket,
//! stored hashes that are not their key's, entry offsets that disagree with
//! the entries, LZ4 size prefixes that lie. The file is then read the way
//! every PAR4 reader path reads it (`tests/exercise.rs`), which also checks
//! that whatever a load accepts, a lookup and a stream agree with.
#![no_main]

use arbitrary::Arbitrary;
use binfmt_tests::par4::{
    Builder, ChunkRef, Entry, LZ4, NONE, bucket_with_offsets, bytes, lz4, string, string_hash,
    u64_shard, varint, vec_container,
};

#[path = "../../tests/exercise.rs"]
mod exercise;

/// How a chunk's payload is stored.
#[derive(Arbitrary, Debug)]
enum Stored {
    AsIs,
    Lz4,
    /// LZ4 with the size prefix replaced.
    Lz4Claiming(u32),
}

/// Which earlier node a child reference names (wrapped into range).
#[derive(Arbitrary, Debug)]
struct Child(u16);

#[derive(Arbitrary, Debug)]
enum HashChoice {
    OfKey,
    OfOtherKey(String),
    Raw(u64),
}

#[derive(Arbitrary, Debug)]
struct EntrySpec {
    key: String,
    value: Vec<u8>,
    hash: HashChoice,
    /// Extra bytes after the value that belong to no entry.
    stray: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
enum Node {
    Raw {
        payload: Vec<u8>,
        children: Vec<Child>,
    },
    /// Child references anywhere (after the parent, overlapping, outside).
    RawRefs {
        payload: Vec<u8>,
        refs: Vec<(u64, u64)>,
    },
    VecContainer {
        items: u64,
        runs: Vec<(u32, u32)>,
        children: Vec<Child>,
    },
    U64Shard(Vec<u64>),
    Bucket {
        entries: Vec<EntrySpec>,
        /// Offsets to use instead of the true ones.
        offsets: Option<Vec<u32>>,
    },
    MapContainer {
        count: Option<u32>,
        buckets: Vec<Child>,
    },
    InlineMap(Vec<(String, Vec<u8>)>),
}

#[derive(Arbitrary, Debug)]
struct Graph {
    nodes: Vec<(Node, Stored)>,
}

fn resolve(children: &[Child], refs: &[ChunkRef]) -> Vec<ChunkRef> {
    if refs.is_empty() {
        return Vec::new();
    }
    children
        .iter()
        .map(|Child(index)| refs[usize::from(*index) % refs.len()])
        .collect()
}

fn payload(node: &Node, refs: &[ChunkRef]) -> (Vec<u8>, Vec<ChunkRef>) {
    match node {
        Node::Raw { payload, children } => (payload.clone(), resolve(children, refs)),
        Node::RawRefs { payload, refs } => (payload.clone(), refs.clone()),
        Node::VecContainer {
            items,
            runs,
            children,
        } => (vec_container(*items, runs), resolve(children, refs)),
        Node::U64Shard(items) => (u64_shard(items), Vec::new()),
        Node::Bucket { entries, offsets } => {
            let entries: Vec<Entry> = entries
                .iter()
                .map(|spec| Entry {
                    hash: match &spec.hash {
                        HashChoice::OfKey => string_hash(&spec.key),
                        HashChoice::OfOtherKey(other) => string_hash(other),
                        HashChoice::Raw(hash) => *hash,
                    },
                    bytes: [string(&spec.key), bytes(&spec.value), spec.stray.clone()].concat(),
                })
                .collect();
            let mut true_offsets = Vec::new();
            let mut at = 0u32;
            for entry in &entries {
                true_offsets.push(at);
                at = at.wrapping_add(entry.bytes.len() as u32);
            }
            let offsets = match offsets {
                Some(given) if given.len() == entries.len() => given.clone(),
                _ => true_offsets,
            };
            (bucket_with_offsets(&entries, &offsets), Vec::new())
        }
        Node::MapContainer { count, buckets } => {
            let children = resolve(buckets, refs);
            let count = count.unwrap_or(children.len() as u32);
            (count.to_le_bytes().to_vec(), children)
        }
        Node::InlineMap(entries) => {
            let mut payload = varint(entries.len() as u64);
            for (key, value) in entries {
                payload.extend(string(key));
                payload.extend(bytes(value));
            }
            (payload, Vec::new())
        }
    }
}

libfuzzer_sys::fuzz_target!(|graph: Graph| {
    let mut file = Builder::new();
    let mut refs: Vec<ChunkRef> = Vec::new();
    for (node, stored) in graph.nodes.iter().take(256) {
        let (payload, children) = payload(node, &refs);
        let chunk = match stored {
            Stored::AsIs => file.chunk(&payload, &children, NONE),
            Stored::Lz4 => file.chunk(&lz4(&payload), &children, LZ4),
            Stored::Lz4Claiming(claim) => {
                let mut bytes = lz4(&payload);
                bytes.splice(..4, claim.to_le_bytes());
                file.chunk(&bytes, &children, LZ4)
            }
        };
        refs.push(chunk);
    }
    let Some(root) = refs.last().copied() else {
        return;
    };
    let bytes = file.finish(root);
    let _ = exercise::read_par4_vec(bytes.clone());
    let _ = exercise::read_par4_map(bytes.clone());
    let _ = exercise::read_par4_derived(bytes);
});
