//! Tar shards and TARIDX indexes for hostile tests: every field written as
//! given, checksums right, so a test changes one meaning at a time (a row
//! pointing at another member, a pax name that disagrees, a crash block of
//! millions of lines) and checks the typed error it gets. Used by
//! `tests/tests/hostile_taridx.rs`, the CLI tests and the structure-aware
//! fuzz target `taridx_structured`.
//!
//! ```text
//! index: header (64) | extension block | crash block | rows (32 each)
//! row:   fid u16 | offset u64 | size u64 | extid u16 | crashid u32 | keyhash u64
//! ```

// Test support: fields sit at fixed places; a slice out of range is a
// failed test, not a crash on user input.
#![allow(clippy::indexing_slicing)]

/// A tar stream built header by header.
#[derive(Debug, Default, Clone)]
pub struct Tar {
    /// The bytes so far.
    pub bytes: Vec<u8>,
}

/// A ustar header block for `name` (cut to 100 bytes), `size` and
/// `typeflag`, with a valid checksum.
pub fn header(name: &[u8], size: u64, typeflag: u8) -> [u8; 512] {
    let mut block = [0u8; 512];
    let name = &name[..name.len().min(100)];
    block[..name.len()].copy_from_slice(name);
    block[100..108].copy_from_slice(b"0000644\0");
    block[108..116].copy_from_slice(b"0000000\0");
    block[116..124].copy_from_slice(b"0000000\0");
    let size_field = format!("{:011o}\0", size.min(0o77_777_777_777));
    block[124..136].copy_from_slice(size_field.as_bytes());
    block[136..148].copy_from_slice(b"00000000000\0");
    block[156] = typeflag;
    block[257..263].copy_from_slice(b"ustar\0");
    block[263..265].copy_from_slice(b"00");
    seal(&mut block);
    block
}

/// Writes the checksum of `block` into it.
pub fn seal(block: &mut [u8; 512]) {
    block[148..156].fill(b' ');
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// One pax record, `"<len> <key>=<value>\n"`.
pub fn pax_record(key: &str, value: &[u8]) -> Vec<u8> {
    let body = [b" ", key.as_bytes(), b"=", value, b"\n"].concat();
    let mut length = body.len() + 1;
    while length.to_string().len() + body.len() != length {
        length = length.to_string().len() + body.len();
    }
    [length.to_string().as_bytes(), &body].concat()
}

impl Tar {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where the next block goes.
    pub fn offset(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Appends one raw block.
    pub fn block(&mut self, block: [u8; 512]) -> &mut Self {
        self.bytes.extend_from_slice(&block);
        self
    }

    /// Appends `data`, zero-padded to a block.
    pub fn data(&mut self, data: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(data);
        let pad = (512 - data.len() % 512) % 512;
        self.bytes.extend(std::iter::repeat_n(0, pad));
        self
    }

    /// A regular file; returns the offset of its header.
    pub fn file(&mut self, name: &str, data: &[u8]) -> u64 {
        let offset = self.offset();
        self.block(header(name.as_bytes(), data.len() as u64, b'0'))
            .data(data);
        offset
    }

    /// A pax extended header carrying `records`.
    pub fn pax(&mut self, records: &[(&str, &[u8])]) -> &mut Self {
        let data: Vec<u8> = records
            .iter()
            .flat_map(|(key, value)| pax_record(key, value))
            .collect();
        self.block(header(b"././@PaxHeader", data.len() as u64, b'x'))
            .data(&data)
    }

    /// A GNU long-name record.
    pub fn gnu_long_name(&mut self, name: &str) -> &mut Self {
        let mut data = name.as_bytes().to_vec();
        data.push(0);
        self.block(header(b"././@LongLink", data.len() as u64, b'L'))
            .data(&data)
    }

    /// The two end blocks; the finished bytes.
    pub fn finish(&mut self) -> Vec<u8> {
        self.bytes.extend_from_slice(&[0; 1024]);
        std::mem::take(&mut self.bytes)
    }
}

/// One 32-byte index row, every field as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawRow {
    /// Shard id.
    pub fid: u16,
    /// Offset of the member's header.
    pub offset: u64,
    /// Payload size.
    pub size: u64,
    /// Extension id.
    pub extid: u16,
    /// Crash id.
    pub crashid: u32,
    /// Key hash.
    pub keyhash: u64,
}

/// The header fields of an index that a test may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawHeader {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Distinct keys.
    pub n_stems: u64,
    /// Rows (recomputed unless [`RawIndex::fixed_counts`]).
    pub n_rows: u64,
    /// Extensions.
    pub n_ext: u32,
    /// Crash stems.
    pub n_crash: u32,
    /// Where the crash block starts (recomputed unless [`RawIndex::fixed_offsets`]).
    pub off_crash: u64,
    /// Where the rows start (likewise).
    pub off_arr: u64,
    /// Flags.
    pub flags: u8,
}

/// Every field of an index, written as given: offsets are computed from
/// the blocks unless fixed.
#[derive(Debug, Clone, Default)]
pub struct RawIndex {
    /// The header.
    pub header: RawHeader,
    /// Extension block bytes.
    pub ext_block: Vec<u8>,
    /// Crash-stem block bytes.
    pub crash_block: Vec<u8>,
    /// The rows.
    pub rows: Vec<RawRow>,
    /// Keep the header's offsets instead of computing them.
    pub fixed_offsets: bool,
    /// Keep the header's row count instead of counting the rows.
    pub fixed_counts: bool,
}

fn le<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

impl RawIndex {
    /// Parses an index (panics on anything shorter than its header: test
    /// code).
    pub fn parse(bytes: &[u8]) -> Self {
        let u16_at = |at| u16::from_le_bytes(le(bytes, at));
        let u32_at = |at| u32::from_le_bytes(le(bytes, at));
        let u64_at = |at| u64::from_le_bytes(le(bytes, at));
        let header = RawHeader {
            major: u16_at(8),
            minor: u16_at(10),
            n_stems: u64_at(16),
            n_rows: u64_at(24),
            n_ext: u32_at(32),
            n_crash: u32_at(36),
            off_crash: u64_at(40),
            off_arr: u64_at(48),
            flags: bytes[56],
        };
        let (off_crash, off_arr) = (header.off_crash as usize, header.off_arr as usize);
        let rows = bytes[off_arr..]
            .chunks_exact(32)
            .map(|row| RawRow {
                fid: u16::from_le_bytes(le(row, 0)),
                offset: u64::from_le_bytes(le(row, 2)),
                size: u64::from_le_bytes(le(row, 10)),
                extid: u16::from_le_bytes(le(row, 18)),
                crashid: u32::from_le_bytes(le(row, 20)),
                keyhash: u64::from_le_bytes(le(row, 24)),
            })
            .collect();
        Self {
            ext_block: bytes[64..off_crash].to_vec(),
            crash_block: bytes[off_crash..off_arr].to_vec(),
            header,
            rows,
            fixed_offsets: false,
            fixed_counts: false,
        }
    }

    /// The bytes: magic, sizes 32/64, the header's fields, offsets and row
    /// count as the blocks and rows make them unless fixed.
    pub fn bytes(&self) -> Vec<u8> {
        let mut h = self.header;
        if !self.fixed_offsets {
            h.off_crash = 64 + self.ext_block.len() as u64;
            h.off_arr = h.off_crash + self.crash_block.len() as u64;
        }
        if !self.fixed_counts {
            h.n_rows = self.rows.len() as u64;
        }
        let mut out = b"TARIDX\0\0".to_vec();
        out.extend_from_slice(&h.major.to_le_bytes());
        out.extend_from_slice(&h.minor.to_le_bytes());
        out.extend_from_slice(&32u16.to_le_bytes());
        out.extend_from_slice(&64u16.to_le_bytes());
        out.extend_from_slice(&h.n_stems.to_le_bytes());
        out.extend_from_slice(&h.n_rows.to_le_bytes());
        out.extend_from_slice(&h.n_ext.to_le_bytes());
        out.extend_from_slice(&h.n_crash.to_le_bytes());
        out.extend_from_slice(&h.off_crash.to_le_bytes());
        out.extend_from_slice(&h.off_arr.to_le_bytes());
        out.push(h.flags);
        out.extend_from_slice(&[0; 7]);
        out.extend_from_slice(&self.ext_block);
        out.extend_from_slice(&self.crash_block);
        for row in &self.rows {
            out.extend_from_slice(&row.fid.to_le_bytes());
            out.extend_from_slice(&row.offset.to_le_bytes());
            out.extend_from_slice(&row.size.to_le_bytes());
            out.extend_from_slice(&row.extid.to_le_bytes());
            out.extend_from_slice(&row.crashid.to_le_bytes());
            out.extend_from_slice(&row.keyhash.to_le_bytes());
        }
        out
    }
}
