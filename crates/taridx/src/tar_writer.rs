//! Writing tar shards: POSIX ustar members, with a pax extended header
//! (`path`, `size`) before any member whose name does not fit the ustar
//! fields as ASCII, or whose size does not fit 11 octal digits.
//!
//! ```text
//! [pax header 'x' + records]   only when needed
//! ustar header (512)           name/prefix, mode 0644, uid/gid 0, mtime 0, typeflag '0'
//! payload, zero-padded to 512
//! ...
//! two zero blocks
//! ```
//!
//! Everything but the name, size and payload is fixed, so the same members
//! give the same bytes. Names readers or extractors would refuse or read as
//! something else are refused (see [`check_member_name`]).

use std::collections::HashSet;
use std::io::{self, Read, Write};

use crate::error::{Result, TaridxError};
use crate::tar::{BLOCK, BLOCK_SIZE};

/// The largest size the 12-byte octal field holds: 11 digits.
const MAX_OCTAL_SIZE: u64 = 0o77_777_777_777;

/// Refuses a member name that tar readers or extractors would refuse, or
/// read as something else: empty, absolute, a `.`/`..`/empty component, NUL,
/// backslash, or a trailing `/` (tar reads the member as a directory and
/// hides its bytes).
pub fn check_member_name(name: &str) -> Result<()> {
    let refuse = |why| {
        Err(TaridxError::BadName {
            name: name.to_owned(),
            why,
        })
    };
    if name.ends_with('/') && !name.is_empty() {
        return refuse("a trailing '/' makes tar read the member as a directory");
    }
    binfmt_core::extract::check_relative_name(name).or_else(refuse)
}

/// Writes tar members to `out`.
///
/// # Examples
///
/// ```
/// use binfmt_taridx::TarWriter;
///
/// let mut tar = TarWriter::new(Vec::new());
/// tar.append("s/000001.jpg", 5, &b"JFIF!"[..])?;   // any std::io::Read
/// tar.append_bytes("s/000001.cls", b"7")?;
/// let bytes: Vec<u8> = tar.finish()?;
/// assert_eq!(binfmt_taridx::tar::scan(&bytes)?.len(), 2);
/// # Ok::<(), binfmt_taridx::TaridxError>(())
/// ```
#[derive(Debug)]
pub struct TarWriter<W: Write> {
    out: W,
    written: u64,
    names: HashSet<String>,
}

impl<W: Write> TarWriter<W> {
    /// A tar stream on `out`.
    pub fn new(out: W) -> Self {
        Self {
            out,
            written: 0,
            names: HashSet::new(),
        }
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The bytes a member of `size` bytes named `name` will take, headers
    /// and padding included.
    pub fn member_len(name: &str, size: u64) -> u64 {
        let payload = size.next_multiple_of(BLOCK);
        match pax_records(name, size) {
            Some(records) => {
                BLOCK + (records.len() as u64).next_multiple_of(BLOCK) + BLOCK + payload
            }
            None => BLOCK + payload,
        }
    }

    /// Appends a regular file of `size` bytes read from `data`, which must
    /// give exactly that many bytes. Returns the offset of the member's own
    /// header (after any pax header), where an index row points.
    pub fn append(&mut self, name: &str, size: u64, mut data: impl Read) -> Result<u64> {
        check_member_name(name)?;
        if !self.names.insert(name.to_owned()) {
            return Err(TaridxError::DuplicateName {
                name: name.to_owned(),
            });
        }
        let (name_field, prefix_field) = match pax_records(name, size) {
            Some(records) => {
                let mut header = header(b"PaxHeader", b"", records.len() as u64, b'x');
                seal(&mut header);
                self.block(&header)?;
                self.payload(&mut records.as_slice(), records.len() as u64, name)?;
                // The ustar fields hold a placeholder; readers take the pax path.
                (placeholder(name), Vec::new())
            }
            None => split_ustar(name).unwrap_or_else(|| (name.as_bytes().to_vec(), Vec::new())),
        };
        let mut member = header(&name_field, &prefix_field, size.min(MAX_OCTAL_SIZE), b'0');
        if size > MAX_OCTAL_SIZE {
            // The pax `size` record carries the real size.
            if let Some(field) = member.get_mut(124..136) {
                field.copy_from_slice(b"00000000000\0");
            }
        }
        seal(&mut member);
        let offset = self.written;
        self.block(&member)?;
        self.payload(&mut data, size, name)?;
        Ok(offset)
    }

    /// [`TarWriter::append`] from a slice.
    pub fn append_bytes(&mut self, name: &str, data: &[u8]) -> Result<u64> {
        self.append(name, data.len() as u64, data)
    }

    /// Writes the two zero blocks that end an archive and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.write(&[0; 2 * BLOCK_SIZE])?;
        Ok(self.out)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(|error| binfmt_core::Error::io("<tar output>", error))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn block(&mut self, block: &[u8; BLOCK_SIZE]) -> Result<()> {
        self.write(block)
    }

    /// Copies exactly `size` bytes from `data`, then the padding.
    fn payload(&mut self, data: &mut impl Read, size: u64, name: &str) -> Result<()> {
        let mut buffer = vec![0u8; 64 << 10];
        let mut left = size;
        while left > 0 {
            let want = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(buffer.len());
            let chunk = buffer.get_mut(..want).unwrap_or_default();
            let n = read_some(data, chunk)?;
            if n == 0 {
                return Err(TaridxError::SizeMismatch {
                    name: name.to_owned(),
                    declared: size,
                    actual: size - left,
                });
            }
            self.write(chunk.get(..n).unwrap_or_default())?;
            left -= n as u64;
        }
        if read_some(data, &mut [0u8; 1])? != 0 {
            return Err(TaridxError::SizeMismatch {
                name: name.to_owned(),
                declared: size,
                actual: size + 1,
            });
        }
        let padding = size.next_multiple_of(BLOCK) - size;
        self.write([0; BLOCK_SIZE].get(..padding as usize).unwrap_or_default())
    }
}

fn read_some(data: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    loop {
        match data.read(buf) {
            Ok(n) => return Ok(n),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(TaridxError::from_io(error, "<member input>")),
        }
    }
}

/// The pax records a member needs, if any: `path` when the name is not
/// ASCII or does not fit the ustar fields, `size` when it does not fit 11
/// octal digits.
fn pax_records(name: &str, size: u64) -> Option<Vec<u8>> {
    let mut records = Vec::new();
    if !name.is_ascii() || split_ustar(name).is_none() {
        records.extend(record("path", name.as_bytes()));
    }
    if size > MAX_OCTAL_SIZE {
        records.extend(record("size", size.to_string().as_bytes()));
    }
    (!records.is_empty()).then_some(records)
}

/// One pax record, `"<len> <key>=<value>\n"`, where `<len>` counts itself.
fn record(key: &str, value: &[u8]) -> Vec<u8> {
    let body = [b" ", key.as_bytes(), b"=", value, b"\n"].concat();
    let mut length = body.len() + 1;
    while length.to_string().len() + body.len() != length {
        length = length.to_string().len() + body.len();
    }
    [length.to_string().as_bytes(), &body].concat()
}

/// Splits an ASCII name into ustar name (≤ 100 bytes) and prefix (≤ 155
/// bytes) at a `/`, if it fits.
fn split_ustar(name: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    if !name.is_ascii() {
        return None;
    }
    if name.len() <= 100 {
        return Some((name.as_bytes().to_vec(), Vec::new()));
    }
    name.match_indices('/')
        .map(|(at, _)| at)
        .find(|&at| at <= 155 && name.len() - at - 1 <= 100 && at > 0)
        .map(|at| {
            (
                name.as_bytes().get(at + 1..).unwrap_or_default().to_vec(),
                name.as_bytes().get(..at).unwrap_or_default().to_vec(),
            )
        })
}

/// The ustar name of a member whose real name is in a pax record: its ASCII
/// characters, cut to 100 bytes.
fn placeholder(name: &str) -> Vec<u8> {
    let ascii: Vec<u8> = name.bytes().filter(u8::is_ascii).collect();
    let start = ascii.len().saturating_sub(100);
    ascii.get(start..).unwrap_or_default().to_vec()
}

fn header(name: &[u8], prefix: &[u8], size: u64, typeflag: u8) -> [u8; BLOCK_SIZE] {
    let mut block = [0u8; BLOCK_SIZE];
    let mut put = |range: std::ops::Range<usize>, bytes: &[u8]| {
        if let Some(field) = block.get_mut(range.start..range.start + bytes.len().min(range.len()))
        {
            field.copy_from_slice(bytes.get(..field.len()).unwrap_or_default());
        }
    };
    put(0..100, name);
    put(100..108, b"0000644\0");
    put(108..116, b"0000000\0");
    put(116..124, b"0000000\0");
    put(124..136, format!("{size:011o}\0").as_bytes());
    put(136..148, b"00000000000\0");
    put(156..157, &[typeflag]);
    put(257..263, b"ustar\0");
    put(263..265, b"00");
    put(345..500, prefix);
    block
}

/// Writes the header checksum (`"%06o\0 "`, as GNU tar does).
fn seal(block: &mut [u8; BLOCK_SIZE]) {
    if let Some(field) = block.get_mut(148..156) {
        field.fill(b' ');
    }
    let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
    if let Some(field) = block.get_mut(148..156) {
        field.copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tar::scan;

    #[test]
    fn members_read_back_with_their_names_and_sizes() {
        let long = format!("{}/{}", "d".repeat(120), "f".repeat(90));
        let very_long = "x/".repeat(200) + "end.bin";
        let members: Vec<(String, Vec<u8>)> = vec![
            ("plain.txt".into(), b"hello".to_vec()),
            ("empty".into(), Vec::new()),
            ("exact.bin".into(), vec![7; 512]),
            (long.clone(), b"prefixed".to_vec()),
            (very_long.clone(), b"pax path".to_vec()),
            (
                "caf\u{e9}/\u{65e5}\u{672c}.txt".into(),
                "ünï".as_bytes().to_vec(),
            ),
        ];
        let mut writer = TarWriter::new(Vec::new());
        for (name, data) in &members {
            let before = writer.written();
            writer.append_bytes(name, data).unwrap();
            assert_eq!(
                writer.written() - before,
                TarWriter::<Vec<u8>>::member_len(name, data.len() as u64),
                "{name}"
            );
        }
        let bytes = writer.finish().unwrap();
        assert_eq!(bytes.len() % 512, 0);
        let scanned = scan(&bytes).unwrap();
        assert_eq!(scanned.len(), members.len());
        for (member, (name, data)) in scanned.iter().zip(&members) {
            assert_eq!(String::from_utf8(member.name.clone()).unwrap(), *name);
            assert_eq!(member.size, data.len() as u64);
            let start = (member.offset + 512) as usize;
            assert_eq!(&bytes[start..start + data.len()], data.as_slice());
        }
    }

    #[test]
    fn the_same_members_give_the_same_bytes() {
        let write = || {
            let mut writer = TarWriter::new(Vec::new());
            writer.append_bytes("a/b.txt", b"x").unwrap();
            writer.finish().unwrap()
        };
        assert_eq!(write(), write());
    }

    #[test]
    fn pax_record_lengths_count_themselves() {
        assert_eq!(record("path", b"abc"), b"12 path=abc\n");
        let long = record("path", &[b'a'; 95]);
        assert_eq!(
            long.len().to_string().as_bytes(),
            &long[..long.iter().position(|&b| b == b' ').unwrap()]
        );
    }
}
