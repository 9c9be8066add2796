//! A byte-exact builder of tar shards and TARIDX indexes for hostile-input
//! tests: every field is written as given, so a test changes one meaning
//! at a time (a row pointing at another member, a pax name that disagrees,
//! a crash block of millions of lines) and checks the typed error it gets.
//! Shared by `tests/tests/hostile_taridx.rs` and the structure-aware fuzz
//! target, which include this file as a module.

// Not every includer uses every function.
#![allow(dead_code)]

use binfmt_taridx::Row;
use binfmt_taridx::format::{Header, MAGIC};

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

/// Every field of an index, written as given: offsets are computed from
/// the blocks unless set.
#[derive(Debug, Clone)]
pub struct RawIndex {
    /// The header; `off_crash`/`off_arr` are recomputed unless `fixed_offsets`.
    pub header: Header,
    /// Extension block bytes.
    pub ext_block: Vec<u8>,
    /// Crash-stem block bytes.
    pub crash_block: Vec<u8>,
    /// The rows.
    pub rows: Vec<Row>,
    /// Keep the header's offsets instead of computing them.
    pub fixed_offsets: bool,
    /// Keep the header's counts instead of computing them.
    pub fixed_counts: bool,
}

impl RawIndex {
    /// Parses an index this project wrote (panics on anything else: test
    /// code).
    pub fn parse(bytes: &[u8]) -> Self {
        use binfmt_core::layout::FromBytes;
        let header = Header::read_from_bytes(&bytes[..64]).unwrap();
        let off_crash = header.off_crash.get() as usize;
        let off_arr = header.off_arr.get() as usize;
        let rows = bytes[off_arr..]
            .chunks_exact(32)
            .map(|chunk| Row::read_from_bytes(chunk).unwrap())
            .collect();
        Self {
            ext_block: bytes[64..off_crash].to_vec(),
            crash_block: bytes[off_crash..off_arr].to_vec(),
            header,
            rows,
            fixed_offsets: false,
            fixed_counts: true,
        }
    }

    /// The bytes, with offsets (and, unless fixed, row count) as the
    /// blocks and rows make them.
    pub fn bytes(&self) -> Vec<u8> {
        use binfmt_core::layout::{IntoBytes, U64};
        let mut header = self.header.clone();
        assert_eq!(
            header.magic, MAGIC,
            "a test that wants a bad magic patches bytes"
        );
        if !self.fixed_offsets {
            let off_crash = 64 + self.ext_block.len() as u64;
            header.off_crash = U64::new(off_crash);
            header.off_arr = U64::new(off_crash + self.crash_block.len() as u64);
        }
        if !self.fixed_counts {
            header.n_rows = U64::new(self.rows.len() as u64);
        }
        [
            header.as_bytes(),
            &self.ext_block,
            &self.crash_block,
            self.rows.as_bytes(),
        ]
        .concat()
    }
}

/// The index of `shards` (glzn keys), as this project writes it.
pub fn index_of(shards: &[Vec<u8>]) -> Vec<u8> {
    let mut builder = binfmt_taridx::IndexBuilder::new(binfmt_taridx::KeyRule::Glzn);
    for (fid, shard) in shards.iter().enumerate() {
        for member in binfmt_taridx::tar::scan(shard).unwrap() {
            builder.add(fid as u16, member).unwrap();
        }
    }
    builder.to_bytes()
}
