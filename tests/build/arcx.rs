//! A byte-exact ARCX writer for hostile tests: every field is written as the
//! bytes the format defines, from values the test chooses, with no checks,
//! so a test can change one meaning at a time (a chunk listed twice, two
//! blocks over the same bytes, a size that does not add up) and keep
//! everything else valid, checksums included.

use sha2::{Digest, Sha256};

/// How a block's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// As is.
    Store,
    /// One zstd frame.
    Zstd,
}

/// A block: its decompressed bytes, and overrides of what the manifest says.
#[derive(Debug, Clone)]
pub struct Block {
    /// The decompressed bytes.
    pub data: Vec<u8>,
    /// How they are stored.
    pub codec: Codec,
    /// The decompressed size the manifest states (default: the data's).
    pub size: Option<u64>,
    /// Point the block's record at another block's bytes instead of writing
    /// its own (the index of that block).
    pub alias_of: Option<usize>,
}

impl Block {
    /// A zstd block of `data`.
    pub fn zstd(data: Vec<u8>) -> Self {
        Self {
            data,
            codec: Codec::Zstd,
            size: None,
            alias_of: None,
        }
    }

    /// A stored block of `data`.
    pub fn store(data: Vec<u8>) -> Self {
        Self {
            codec: Codec::Store,
            ..Self::zstd(data)
        }
    }

    fn stored(&self) -> Vec<u8> {
        match self.codec {
            Codec::Store => self.data.clone(),
            Codec::Zstd => zstd::bulk::compress(&self.data, 3).unwrap_or_default(),
        }
    }
}

/// A chunk record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// The file it says it belongs to.
    pub file: u64,
    /// Where it starts in its file (spec dialect only).
    pub file_offset: u64,
    /// Its size.
    pub size: u64,
    /// Its block.
    pub block: u64,
    /// Where it starts in the block.
    pub block_offset: u64,
}

/// A file record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Directory string index.
    pub dir: u64,
    /// Name string index.
    pub name: u64,
    /// Its stated size.
    pub size: u64,
    /// Its stated SHA-256.
    pub sha256: [u8; 32],
    /// The chunk ids it lists, in order.
    pub chunks: Vec<u64>,
    /// Mode, mtime (ns) and kind byte.
    pub mode: u64,
    /// Modification time, nanoseconds.
    pub mtime_ns: u64,
    /// 0 file, 1 directory, 2 symlink.
    pub kind: u8,
}

/// A whole archive, before it is laid out.
#[derive(Debug, Clone, Default)]
pub struct Archive {
    /// The string table, as stored (UTF-8 unless a test says otherwise).
    pub strings: Vec<Vec<u8>>,
    /// The file table.
    pub files: Vec<File>,
    /// The chunk table.
    pub chunks: Vec<Chunk>,
    /// The blocks.
    pub blocks: Vec<Block>,
    /// The spec footer's total_files (default: the file count).
    pub total_files: Option<u32>,
    /// The header's manifest offset (default: the real one).
    pub header_manifest_offset: Option<u64>,
    /// Zero bytes after the manifest's last table, before compression.
    pub manifest_padding: usize,
}

fn put(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_section(out: &mut Vec<u8>, body: &[u8]) {
    put(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl Archive {
    /// A sound archive of `files` (path without `/`, bytes), all in one
    /// shared zstd block, in order.
    pub fn of(files: &[(&str, &[u8])]) -> Self {
        let mut archive = Self {
            strings: vec![Vec::new()],
            ..Self::default()
        };
        let mut block = Vec::new();
        for (index, (name, bytes)) in files.iter().enumerate() {
            archive.strings.push(name.as_bytes().to_vec());
            archive.chunks.push(Chunk {
                file: index as u64,
                file_offset: 0,
                size: bytes.len() as u64,
                block: 0,
                block_offset: block.len() as u64,
            });
            block.extend_from_slice(bytes);
            archive.files.push(File {
                dir: 0,
                name: index as u64 + 1,
                size: bytes.len() as u64,
                sha256: sha256(bytes),
                chunks: vec![index as u64],
                mode: 0o644,
                mtime_ns: 0,
                kind: 0,
            });
        }
        archive.blocks.push(Block::zstd(block));
        archive
    }

    /// Lays out the blocks after the 80-byte header; returns the data
    /// region and each block's (offset, stored size, CRC32).
    fn data(&self) -> (Vec<u8>, Vec<(u64, u64, u32)>) {
        let mut data = Vec::new();
        let mut placed: Vec<(u64, u64, u32)> = Vec::new();
        for block in &self.blocks {
            if let Some(&alias) = block.alias_of.and_then(|index| placed.get(index)) {
                placed.push(alias);
                continue;
            }
            let stored = block.stored();
            let offset = 80 + data.len() as u64;
            data.extend_from_slice(&(stored.len() as u32).to_le_bytes());
            data.extend_from_slice(&stored);
            placed.push((offset, stored.len() as u64, crc32fast::hash(&stored)));
        }
        (data, placed)
    }

    fn strings_table(&self, out: &mut Vec<u8>) {
        put(out, self.strings.len() as u64);
        for string in &self.strings {
            put(out, string.len() as u64);
            out.extend_from_slice(string);
        }
    }

    fn chunk_list(out: &mut Vec<u8>, ids: &[u64]) {
        put(out, ids.len() as u64);
        let mut previous = 0;
        for &id in ids {
            put(out, id.wrapping_sub(previous));
            previous = id;
        }
    }

    fn block_size(&self, index: usize) -> u64 {
        self.blocks
            .get(index)
            .map_or(0, |block| block.size.unwrap_or(block.data.len() as u64))
    }

    fn header(&self, manifest_offset: u64, index_offset: u64, cli: bool) -> Vec<u8> {
        let mut header = b"ARCX0001".to_vec();
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&1u32.to_le_bytes());
        header.extend_from_slice(
            &self
                .header_manifest_offset
                .unwrap_or(manifest_offset)
                .to_le_bytes(),
        );
        header.extend_from_slice(&80u64.to_le_bytes());
        header.extend_from_slice(&index_offset.to_le_bytes());
        header.extend_from_slice(&[0; 16]);
        if cli {
            header.extend_from_slice(&1u64.to_le_bytes());
            header.extend_from_slice(&0u64.to_le_bytes());
            let crc = u64::from(crc32fast::hash(&header));
            header.extend_from_slice(&crc.to_le_bytes());
        } else {
            header.extend_from_slice(&[0; 24]);
        }
        header
    }

    /// The archive in the spec dialect.
    pub fn spec(&self) -> Vec<u8> {
        let (data, placed) = self.data();
        let mut body = Vec::new();
        let config = [
            0x85, 0xaa, b'c', b'h', b'u', b'n', b'k', b'_', b's', b'i', b'z', b'e', 0xce, 0, 4, 0,
            0,
        ];
        let mut config = config.to_vec();
        for (key, value) in [
            ("small_file_threshold", None),
            ("codec_default", Some("zstd")),
            ("zstd_level", None),
            ("compression_mode", Some("balanced")),
        ] {
            config.push(0xa0 | key.len() as u8);
            config.extend_from_slice(key.as_bytes());
            match value {
                Some(text) => {
                    config.push(0xa0 | text.len() as u8);
                    config.extend_from_slice(text.as_bytes());
                }
                None => config.push(3),
            }
        }
        put_section(&mut body, &config);
        let mut section = Vec::new();
        self.strings_table(&mut section);
        put_section(&mut body, &section);
        section.clear();
        put(&mut section, self.files.len() as u64);
        for (id, file) in self.files.iter().enumerate() {
            put(&mut section, id as u64);
            put(&mut section, file.dir);
            put(&mut section, file.name);
            put(&mut section, file.size);
            section.extend_from_slice(&file.sha256);
            Self::chunk_list(&mut section, &file.chunks);
        }
        put_section(&mut body, &section);
        section.clear();
        put(&mut section, self.chunks.len() as u64);
        for (id, chunk) in self.chunks.iter().enumerate() {
            put(&mut section, u64::from(id != 0));
            put(&mut section, chunk.file);
            put(&mut section, chunk.file_offset);
            put(&mut section, chunk.size);
            put(&mut section, chunk.block);
            put(&mut section, chunk.block_offset);
        }
        put_section(&mut body, &section);
        section.clear();
        put(&mut section, self.blocks.len() as u64);
        let mut previous = 0;
        for (id, (block, &(offset, stored, crc))) in self.blocks.iter().zip(&placed).enumerate() {
            put(&mut section, u64::from(id != 0));
            let codec: &[u8] = match block.codec {
                Codec::Store => b"store",
                Codec::Zstd => b"zstd",
            };
            put(&mut section, codec.len() as u64);
            section.extend_from_slice(codec);
            put(&mut section, offset.wrapping_sub(previous));
            previous = offset;
            put(&mut section, stored);
            put(&mut section, self.block_size(id));
            section.extend_from_slice(&crc.to_le_bytes());
        }
        put_section(&mut body, &section);
        section.clear();
        put(&mut section, self.files.len() as u64);
        for file in &self.files {
            put(&mut section, file.mode);
            put(&mut section, file.mtime_ns << 1);
            section.push(file.kind);
        }
        put_section(&mut body, &section);
        body.resize(body.len() + self.manifest_padding, 0);

        let manifest_offset = 80 + data.len() as u64;
        let region = [
            &b"MFv2"[..],
            &zstd::bulk::compress(&body, 3).unwrap_or_default(),
        ]
        .concat();
        let mut out = self.header(manifest_offset, 0, false);
        out.extend_from_slice(&data);
        out.extend_from_slice(&region);
        out.extend_from_slice(b"ARCXEND1");
        out.extend_from_slice(&manifest_offset.to_le_bytes());
        out.extend_from_slice(&(region.len() as u64).to_le_bytes());
        out.extend_from_slice(
            &self
                .total_files
                .unwrap_or(self.files.len() as u32)
                .to_le_bytes(),
        );
        out.extend_from_slice(&crc32fast::hash(&region).to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out
    }

    /// The archive in the arcx-cli dialect.
    pub fn cli(&self) -> Vec<u8> {
        let (data, placed) = self.data();
        let mut raw = b"MFv2\x01".to_vec();
        put_section(&mut raw, &[0x80, 0x80, 0x10, 0x80, 0x80, 0x10, 1, 3, 1]);
        self.strings_table(&mut raw);
        put(&mut raw, self.files.len() as u64);
        for (id, file) in self.files.iter().enumerate() {
            put(&mut raw, id as u64);
            put(&mut raw, file.dir);
            put(&mut raw, file.name);
            put(&mut raw, file.size);
            put(&mut raw, file.mode);
            put(&mut raw, file.mtime_ns);
            raw.push(file.kind);
            raw.extend_from_slice(&file.sha256);
            Self::chunk_list(&mut raw, &file.chunks);
            raw.push(0);
            put(&mut raw, 0);
        }
        put(&mut raw, self.chunks.len() as u64);
        for (id, chunk) in self.chunks.iter().enumerate() {
            put(&mut raw, u64::from(id != 0));
            put(&mut raw, chunk.file);
            put(&mut raw, chunk.block_offset);
            put(&mut raw, chunk.size);
            put(&mut raw, chunk.block);
        }
        put(&mut raw, self.blocks.len() as u64);
        let mut previous = 0;
        for (id, (block, &(offset, stored, crc))) in self.blocks.iter().zip(&placed).enumerate() {
            put(&mut raw, u64::from(id != 0));
            raw.push(u8::from(block.codec == Codec::Zstd));
            put(&mut raw, offset.wrapping_sub(previous));
            previous = offset;
            put(&mut raw, stored);
            put(&mut raw, self.block_size(id));
            raw.extend_from_slice(&u64::from(crc).to_be_bytes());
        }
        raw.resize(raw.len() + self.manifest_padding, 0);
        let region = [
            &[1u8][..],
            &zstd::bulk::compress(&raw, 3).unwrap_or_default(),
        ]
        .concat();
        let manifest_offset = 80 + data.len() as u64;
        let index_offset = manifest_offset + 4 + region.len() as u64;
        let mut out = self.header(manifest_offset, index_offset, true);
        out.extend_from_slice(&data);
        for _ in 0..2 {
            out.extend_from_slice(&(region.len() as u32).to_le_bytes());
            out.extend_from_slice(&region);
        }
        out.extend_from_slice(b"ARCXEND1");
        out.extend_from_slice(&manifest_offset.to_le_bytes());
        out.extend_from_slice(&index_offset.to_le_bytes());
        out.extend_from_slice(&[0; 16]);
        out
    }
}
