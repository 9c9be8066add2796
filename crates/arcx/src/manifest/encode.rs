//! The manifest's encoder: the spec dialect's sections and the arcx-cli
//! dialect's raw manifest (layouts in [`crate::manifest`]).

use binfmt_core::Error;
use binfmt_core::varint;

use super::{Manifest, Strings, block_users};
use crate::format::{Codec, MANIFEST_MAGIC};

fn put(out: &mut Vec<u8>, value: u64) {
    varint::encode_u64(value, out);
}

fn put_strings(out: &mut Vec<u8>, strings: &Strings) {
    put(out, strings.len() as u64);
    for id in 0..strings.len() as u32 {
        let s = strings.get(id);
        put(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
}

/// Chunk ids as the first, then differences (ids are in ascending order).
fn put_deltas(out: &mut Vec<u8>, ids: &[u32]) {
    put(out, ids.len() as u64);
    let mut previous = 0;
    for &id in ids {
        put(out, u64::from(id.wrapping_sub(previous)));
        previous = id;
    }
}

pub(super) fn section(out: &mut Vec<u8>, body: &[u8]) {
    put(out, body.len() as u64);
    out.extend_from_slice(body);
}

impl Manifest {
    /// The spec dialect's manifest body, before compression.
    pub(crate) fn encode_spec_body(&self) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let config = rmp_serde::to_vec_named(&self.config)
            .map_err(|error| Error::corrupt("config section", error.to_string()))?;
        section(&mut out, &config);
        let mut body = Vec::new();
        put_strings(&mut body, &self.strings);
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.files.len() as u64);
        for file in self.files() {
            put(&mut body, u64::from(file.index));
            put(&mut body, u64::from(file.row.dir));
            put(&mut body, u64::from(file.row.name));
            put(&mut body, file.row.size);
            body.extend_from_slice(&file.row.sha256);
            put_deltas(&mut body, file.chunk_ids());
        }
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.chunks.len() as u64);
        let mut file_offsets = vec![0u64; self.files.len()];
        for (chunk_id, chunk) in self.chunks.iter().enumerate() {
            let file_offset = file_offsets.get_mut(chunk.file as usize);
            put(&mut body, u64::from(chunk_id != 0));
            put(&mut body, u64::from(chunk.file));
            put(&mut body, file_offset.as_deref().copied().unwrap_or(0));
            if let Some(offset) = file_offset {
                *offset += u64::from(chunk.size);
            }
            put(&mut body, u64::from(chunk.size));
            put(&mut body, u64::from(chunk.block));
            put(&mut body, u64::from(chunk.offset));
        }
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.blocks.len() as u64);
        let mut previous_offset = 0;
        for (block_id, block) in self.blocks.iter().enumerate() {
            put(&mut body, u64::from(block_id != 0));
            put(&mut body, block.codec.name().len() as u64);
            body.extend_from_slice(block.codec.name().as_bytes());
            put(&mut body, block.offset.wrapping_sub(previous_offset));
            previous_offset = block.offset;
            put(&mut body, u64::from(block.stored_size));
            put(&mut body, u64::from(block.size));
            body.extend_from_slice(&block.checksum.to_le_bytes());
        }
        section(&mut out, &body);

        body.clear();
        put(&mut body, self.files.len() as u64);
        for file in &self.files {
            put(&mut body, u64::from(file.mode));
            varint::encode_i64(file.mtime_ns, &mut body);
            body.push(file.kind.byte());
        }
        section(&mut out, &body);
        Ok(out)
    }

    /// The arcx-cli dialect's raw manifest (`MFv2` ...), before framing.
    pub(crate) fn encode_cli_raw(&self) -> Vec<u8> {
        let mut out = MANIFEST_MAGIC.to_vec();
        out.push(1);
        let mut config = Vec::new();
        put(&mut config, self.config.chunk_size);
        put(&mut config, self.config.small_file_threshold);
        config.push(u8::from(self.config.codec_default == "zstd"));
        put(&mut config, self.config.zstd_level);
        config.push(u8::from(self.config.compression_mode == "balanced"));
        section(&mut out, &config);
        put_strings(&mut out, &self.strings);

        let users = block_users(&self.chunks, self.blocks.len());
        put(&mut out, self.files.len() as u64);
        for file in self.files() {
            put(&mut out, u64::from(file.index));
            put(&mut out, u64::from(file.row.dir));
            put(&mut out, u64::from(file.row.name));
            put(&mut out, file.row.size);
            put(&mut out, u64::from(file.row.mode));
            put(&mut out, u64::try_from(file.row.mtime_ns).unwrap_or(0));
            out.push(file.row.kind.byte());
            out.extend_from_slice(&file.row.sha256);
            put_deltas(&mut out, file.chunk_ids());
            let mut blocks = file.chunks().map(|chunk| chunk.block as usize);
            let packed = file
                .chunks()
                .next()
                .is_some_and(|chunk| users.get(chunk.block as usize).is_some_and(|&n| n > 1));
            if packed || file.row.chunks_len == 0 {
                // The tool's codec hint and pack id for packed small files.
                out.push(0);
                varint::encode_i64(0, &mut out);
            } else {
                let zstd = blocks.any(|block| {
                    self.blocks
                        .get(block)
                        .is_some_and(|b| b.codec == Codec::Zstd)
                });
                out.push(if zstd { 2 } else { 1 });
                varint::encode_i64(-1, &mut out);
            }
        }
        put(&mut out, self.chunks.len() as u64);
        for (chunk_id, chunk) in self.chunks.iter().enumerate() {
            put(&mut out, u64::from(chunk_id != 0));
            put(&mut out, u64::from(chunk.file));
            // The tool's reader slices the block at this offset.
            put(&mut out, u64::from(chunk.offset));
            put(&mut out, u64::from(chunk.size));
            put(&mut out, u64::from(chunk.block));
        }
        put(&mut out, self.blocks.len() as u64);
        let mut previous_offset = 0;
        for (block_id, block) in self.blocks.iter().enumerate() {
            put(&mut out, u64::from(block_id != 0));
            out.push(u8::from(block.codec == Codec::Zstd));
            put(&mut out, block.offset.wrapping_sub(previous_offset));
            previous_offset = block.offset;
            put(&mut out, u64::from(block.stored_size));
            put(&mut out, u64::from(block.size));
            out.extend_from_slice(&u64::from(block.checksum).to_be_bytes());
        }
        out
    }
}
