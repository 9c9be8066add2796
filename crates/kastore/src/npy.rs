//! Reading one-dimensional `.npy` files (numpy's `save`) as kastore arrays.
//!
//! ```text
//! "\x93NUMPY" | major u8 | minor u8 | header length (u16 LE in 1.x, u32 LE in 2.x/3.x)
//! | header: a Python dict literal, e.g. {'descr': '<f8', 'fortran_order': False, 'shape': (3,), }
//! | the elements
//! ```
//!
//! The element type comes from `descr` (`i1`..`u8`, `f4`, `f8`, little- or
//! big-endian; big-endian values are swapped into the little-endian order
//! kastore stores) and the length from `shape`, which must have exactly one
//! dimension. Anything else (more dimensions, a scalar, structured or
//! object dtypes, a data section of the wrong size) is an error.
//!
//! The header is parsed as a strict subset of the Python literal numpy
//! evaluates (`ast.literal_eval`), so that every header read here means
//! what it means to numpy: exactly the keys `descr`, `fortran_order` and
//! `shape`, each once (Python keeps the last of a repeated key; a repeated
//! key is refused), plain quoted strings, `True`/`False`, a tuple of
//! decimal integers, and nothing but whitespace after the closing brace.
//! Anything numpy would read differently or refuse (a comment, an escape,
//! string concatenation, `(3)`, which is the number 3 and not a tuple,
//! trailing text) is refused with a reason.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use binfmt_core::{FileSource, RangeReader, SourceExt};

use crate::error::{KastError, Result};
use crate::format::ItemType;

/// The magic every `.npy` file starts with.
const MAGIC: &[u8] = b"\x93NUMPY";

/// The longest header read, numpy's own default (`np.load`'s
/// `max_header_size`): numpy refuses longer headers unless told to trust
/// the file.
pub const MAX_HEADER: usize = 10_000;

/// The longest prefix of a file that holds the magic, the version, the
/// header length and a header of at most [`MAX_HEADER`] bytes.
const MAX_PREFIX: usize = MAGIC.len() + 2 + 4 + MAX_HEADER;

/// What a `.npy` header says about the elements that follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The element type.
    pub item_type: ItemType,
    /// Whether the elements are stored big-endian (they are swapped when read).
    pub big_endian: bool,
    /// Where the elements start in the file.
    pub data_offset: u64,
    /// The elements' size in bytes (the shape's length × the element size,
    /// which is exactly what follows the header).
    pub data_len: u64,
}

/// Parses the header at the start of `prefix`, the first bytes of a file of
/// `file_len` bytes (at least the whole header, or the whole file when it is
/// shorter; `min(file_len, 10 + 4 + MAX_HEADER)` bytes always suffice), and
/// checks that the elements fill the rest of the file exactly.
pub fn parse_header(prefix: &[u8], file_len: u64) -> std::result::Result<Header, String> {
    let rest = prefix
        .strip_prefix(MAGIC)
        .ok_or("not an .npy file (no \\x93NUMPY magic)")?;
    let (&major, rest) = rest.split_first().ok_or("truncated .npy header")?;
    let (&minor, rest) = rest.split_first().ok_or("truncated .npy header")?;
    let (header_len, rest) = match (major, minor) {
        (1, 0) => {
            let (len, rest) = rest
                .split_first_chunk::<2>()
                .ok_or("truncated .npy header")?;
            (usize::from(u16::from_le_bytes(*len)), rest)
        }
        (2 | 3, 0) => {
            let (len, rest) = rest
                .split_first_chunk::<4>()
                .ok_or("truncated .npy header")?;
            (u32::from_le_bytes(*len) as usize, rest)
        }
        (major, minor) => {
            return Err(format!(
                ".npy format version {major}.{minor} is not 1.0, 2.0 or 3.0"
            ));
        }
    };
    if header_len > MAX_HEADER {
        return Err(format!(
            "the .npy header claims {header_len} bytes, more than the {MAX_HEADER} numpy reads by default"
        ));
    }
    let header = rest.get(..header_len).ok_or_else(|| {
        format!(
            "the .npy header claims {header_len} bytes, the file has {}",
            rest.len()
        )
    })?;
    let data_offset = (prefix.len() - rest.len() + header_len) as u64;
    let fields = parse_dict(header, major <= 2)?;
    let (item_type, big_endian) = element_type(fields.descr)?;
    let len = fields.len;
    let available = file_len.saturating_sub(data_offset);
    let data_len = len
        .checked_mul(item_type.size())
        .filter(|&bytes| bytes == available)
        .ok_or_else(|| {
            format!(
                "shape ({len},) of {item_type} needs {} bytes of data, the file has {available}",
                u128::from(len) * u128::from(item_type.size()),
            )
        })?;
    Ok(Header {
        item_type,
        big_endian: big_endian && item_type.size() > 1,
        data_offset,
        data_len,
    })
}

/// Parses the bytes of a `.npy` file into its element type and the
/// little-endian bytes of its elements (borrowed unless they had to be
/// swapped).
pub fn parse(bytes: &[u8]) -> std::result::Result<(ItemType, Cow<'_, [u8]>), String> {
    let header = parse_header(bytes, bytes.len() as u64)?;
    let data = usize::try_from(header.data_offset)
        .ok()
        .and_then(|start| bytes.get(start..))
        .unwrap_or_default();
    if header.big_endian {
        let mut swapped = data.to_vec();
        swap_elements(&mut swapped, header.item_type.size() as usize);
        return Ok((header.item_type, Cow::Owned(swapped)));
    }
    Ok((header.item_type, Cow::Borrowed(data)))
}

/// An `.npy` file opened for reading by offset (`pread`, never mapped): a
/// file truncated or rewritten underneath fails the read with an error.
#[derive(Debug)]
pub struct NpyFile {
    source: FileSource,
    header: Header,
}

impl NpyFile {
    /// Opens the regular file at `path` (through the input gate) and parses
    /// its header; errors name the file.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let source = FileSource::open(path)?;
        let file_len = binfmt_core::Source::len(&source);
        let prefix_len = file_len.min(MAX_PREFIX as u64);
        let prefix = source.bytes_at(0, prefix_len, "npy header")?;
        let header = parse_header(&prefix, file_len).map_err(|why| KastError::Npy {
            path: path.display().to_string(),
            why,
        })?;
        Ok(Self { source, header })
    }

    /// What the header says.
    pub fn header(&self) -> Header {
        self.header
    }

    /// The elements as little-endian bytes (swapped as they are read when
    /// the file holds them big-endian), read by offset in the caller's
    /// buffer: memory does not grow with the array.
    pub fn reader(&self) -> Result<impl Read + '_> {
        let Header {
            data_offset,
            data_len,
            big_endian,
            item_type,
        } = self.header;
        let inner = self.source.reader(data_offset, data_len, "npy data")?;
        Ok(LittleEndian {
            inner,
            size: if big_endian {
                item_type.size() as usize
            } else {
                1
            },
            pending: [0; 8],
            pending_at: 0,
            pending_end: 0,
        })
    }
}

/// Reads the `.npy` file at `path`: its element type and little-endian
/// element bytes, or an error naming the file.
pub fn read(path: impl AsRef<Path>) -> Result<(ItemType, Vec<u8>)> {
    let path = path.as_ref();
    let file = NpyFile::open(path)?;
    let mut bytes = Vec::new();
    let len = usize::try_from(file.header.data_len).unwrap_or(usize::MAX);
    bytes
        .try_reserve_exact(len)
        .map_err(|_| binfmt_core::Error::io(path, std::io::ErrorKind::OutOfMemory.into()))?;
    file.reader()?
        .read_to_end(&mut bytes)
        .map_err(|error| binfmt_core::Error::io(path, error))?;
    Ok((file.header.item_type, bytes))
}

/// Element bytes read through, each element reversed when `size > 1`.
struct LittleEndian<'a> {
    inner: RangeReader<'a, FileSource>,
    size: usize,
    /// One swapped element not yet handed out (a caller's buffer smaller
    /// than an element).
    pending: [u8; 8],
    pending_at: usize,
    pending_end: usize,
}

impl Read for LittleEndian<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.size == 1 {
            return self.inner.read(buf);
        }
        if self.pending_at < self.pending_end {
            let pending = self.pending.get(self.pending_at..self.pending_end);
            let n = copy_into(pending.unwrap_or_default(), buf);
            self.pending_at += n;
            return Ok(n);
        }
        let whole = buf.len() / self.size * self.size;
        if whole == 0 {
            let size = self.size;
            let element = self.pending.get_mut(..size).unwrap_or_default();
            let got = read_full(&mut self.inner, element)?;
            if got == 0 {
                return Ok(0);
            }
            if got < size {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            element.reverse();
            (self.pending_at, self.pending_end) = (0, size);
            return self.read(buf);
        }
        let target = buf.get_mut(..whole).unwrap_or_default();
        let got = read_full(&mut self.inner, target)?;
        if got % self.size != 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        swap_elements(target.get_mut(..got).unwrap_or_default(), self.size);
        Ok(got)
    }
}

/// Copies what fits; returns how much.
fn copy_into(from: &[u8], to: &mut [u8]) -> usize {
    let n = from.len().min(to.len());
    if let (Some(to), Some(from)) = (to.get_mut(..n), from.get(..n)) {
        to.copy_from_slice(from);
    }
    n
}

/// Reads until `buf` is full or the reader ends; returns the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|rest| !rest.is_empty()) {
        match reader.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

fn swap_elements(bytes: &mut [u8], size: usize) {
    bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
}

/// The element type and byte order of a `descr`.
fn element_type(descr: &str) -> std::result::Result<(ItemType, bool), String> {
    let (endian, code) = descr.split_at(descr.len().min(1));
    let item_type = match code {
        "i1" => ItemType::Int8,
        "u1" => ItemType::Uint8,
        "i2" => ItemType::Int16,
        "u2" => ItemType::Uint16,
        "i4" => ItemType::Int32,
        "u4" => ItemType::Uint32,
        "i8" => ItemType::Int64,
        "u8" => ItemType::Uint64,
        "f4" => ItemType::Float32,
        "f8" => ItemType::Float64,
        _ => return Err(format!("dtype {descr:?} is not one of kastore's ten types")),
    };
    // `|` ("not applicable") is what numpy writes for one-byte types; for a
    // wider one it would mean the reading host's order, which a file cannot
    // promise.
    match endian {
        "<" => Ok((item_type, false)),
        ">" => Ok((item_type, true)),
        "|" if item_type.size() == 1 => Ok((item_type, false)),
        _ => Err(format!(
            "dtype {descr:?} has no byte order kastore can read"
        )),
    }
}

/// The three fields of a header, each given exactly once.
struct Fields<'h> {
    descr: &'h str,
    len: u64,
}

/// A value in the header dict.
enum Value<'h> {
    Text(&'h str),
    Bool,
    Tuple(Vec<u64>),
}

/// Parses the header dict. `long_ints`: version 1 and 2 headers may carry
/// Python 2's `3L`, which numpy strips before evaluating.
fn parse_dict(header: &[u8], long_ints: bool) -> std::result::Result<Fields<'_>, String> {
    if !header.is_ascii() {
        return Err("the .npy header is not ASCII text".into());
    }
    let mut parser = Parser {
        text: header,
        at: 0,
        long_ints,
    };
    // `ast.literal_eval` strips leading spaces and tabs only.
    while matches!(parser.peek(), Some(b' ' | b'\t')) {
        parser.at += 1;
    }
    parser.expect(b'{')?;
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    loop {
        parser.space();
        if parser.eat(b'}') {
            break;
        }
        let key = parser.text()?;
        parser.space();
        parser.expect(b':')?;
        parser.space();
        let slot = match key {
            "descr" => &mut descr,
            "fortran_order" => &mut fortran_order,
            "shape" => &mut shape,
            other => {
                return Err(format!(
                    "the .npy header has a key {other:?}: numpy's has exactly 'descr', 'fortran_order' and 'shape'"
                ));
            }
        };
        if slot.is_some() {
            return Err(format!(
                "the .npy header gives '{key}' twice (numpy would keep the last, a reader of the first would disagree)"
            ));
        }
        *slot = Some(parser.value()?);
        parser.space();
        if parser.eat(b'}') {
            break;
        }
        parser.expect(b',')?;
    }
    // numpy pads the header with spaces and ends it with a newline.
    while matches!(parser.peek(), Some(b' ' | b'\t' | b'\n')) {
        parser.at += 1;
    }
    if parser.at != header.len() {
        return Err(format!(
            "the .npy header has text after its dict at byte {}",
            parser.at
        ));
    }
    let descr = match descr {
        Some(Value::Text(descr)) => descr,
        Some(_) => return Err(
            "the .npy 'descr' is not a dtype string (structured or object arrays cannot be stored)"
                .into(),
        ),
        None => return Err("the .npy header has no 'descr'".into()),
    };
    match fortran_order {
        Some(Value::Bool) => {}
        Some(_) => return Err("the .npy 'fortran_order' is not True or False".into()),
        None => return Err("the .npy header has no 'fortran_order'".into()),
    }
    let len = match shape {
        Some(Value::Tuple(dims)) => match dims.as_slice() {
            [len] => *len,
            dims => {
                return Err(format!(
                    "the array has {} dimensions: only one-dimensional arrays can be stored",
                    dims.len()
                ));
            }
        },
        Some(_) => return Err("the .npy 'shape' is not a tuple".into()),
        None => return Err("the .npy header has no 'shape'".into()),
    };
    Ok(Fields { descr, len })
}

/// A cursor over the header's bytes.
struct Parser<'h> {
    text: &'h [u8],
    at: usize,
    long_ints: bool,
}

impl<'h> Parser<'h> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn expect(&mut self, byte: u8) -> std::result::Result<(), String> {
        if self.eat(byte) {
            return Ok(());
        }
        Err(match self.peek() {
            Some(found) => format!(
                "the .npy header has {:?} at byte {} where {:?} belongs",
                char::from(found),
                self.at,
                char::from(byte)
            ),
            None => format!("the .npy header ends where {:?} belongs", char::from(byte)),
        })
    }

    /// Whitespace inside the braces (Python joins the lines there).
    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n')) {
            self.at += 1;
        }
    }

    /// A quoted string without escapes.
    fn text(&mut self) -> std::result::Result<&'h str, String> {
        let quote = self
            .peek()
            .filter(|quote| matches!(quote, b'\'' | b'"'))
            .ok_or_else(|| format!("the .npy header has no quoted string at byte {}", self.at))?;
        let start = self.at + 1;
        let len = self
            .text
            .get(start..)
            .and_then(|rest| rest.iter().position(|&byte| byte == quote))
            .ok_or("the .npy header has an unterminated string")?;
        let inside = self.text.get(start..start + len).unwrap_or_default();
        if inside.iter().any(|&byte| matches!(byte, b'\\' | b'\n')) {
            return Err("the .npy header has a string with an escape or a line break".into());
        }
        self.at = start + len + 1;
        let next = self.text.get(self.at..).and_then(|rest| {
            rest.iter()
                .find(|byte| !matches!(byte, b' ' | b'\t' | b'\n'))
        });
        if matches!(next, Some(b'\'' | b'"')) {
            return Err("the .npy header has adjacent strings (Python joins them)".into());
        }
        // ASCII was checked for the whole header.
        std::str::from_utf8(inside).map_err(|_| "the .npy header is not ASCII text".into())
    }

    fn value(&mut self) -> std::result::Result<Value<'h>, String> {
        match self.peek() {
            Some(b'\'' | b'"') => self.text().map(Value::Text),
            Some(b'(') => self.tuple().map(Value::Tuple),
            Some(b'T' | b'F') => {
                let word = self.word();
                if word == b"True" || word == b"False" {
                    Ok(Value::Bool)
                } else {
                    Err(format!(
                        "the .npy header has {:?} where a value belongs",
                        String::from_utf8_lossy(word)
                    ))
                }
            }
            _ => Err(format!(
                "the .npy header has no value it can read at byte {}",
                self.at
            )),
        }
    }

    /// Letters, digits and underscores from here.
    fn word(&mut self) -> &'h [u8] {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
        {
            self.at += 1;
        }
        self.text.get(start..self.at).unwrap_or_default()
    }

    /// `()`, `(N,)`, `(N, M)`, `(N, M,)`: a tuple of decimal integers. `(N)`
    /// is the number N to Python, not a tuple, and is refused.
    fn tuple(&mut self) -> std::result::Result<Vec<u64>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        self.space();
        if self.eat(b')') {
            return Ok(dims);
        }
        loop {
            dims.push(self.integer()?);
            self.space();
            if self.eat(b')') {
                if dims.len() == 1 {
                    return Err(
                        "the .npy shape (N) has no comma: Python reads it as a number, not a tuple"
                            .into(),
                    );
                }
                return Ok(dims);
            }
            self.expect(b',')?;
            self.space();
            if self.eat(b')') {
                return Ok(dims);
            }
            if dims.len() >= 64 {
                return Err("the .npy shape has more than 64 dimensions".into());
            }
        }
    }

    /// A decimal integer as Python writes one (no sign, no leading zero, no
    /// underscores), `L`-suffixed in version 1 and 2 headers.
    fn integer(&mut self) -> std::result::Result<u64, String> {
        let start = self.at;
        let word = self.word();
        let digits = match word.split_last() {
            Some((b'L' | b'l', digits)) if self.long_ints => digits,
            _ => word,
        };
        let plain = !digits.is_empty()
            && digits.iter().all(u8::is_ascii_digit)
            && (digits == b"0" || !digits.starts_with(b"0"));
        let text = std::str::from_utf8(digits).unwrap_or_default();
        match text.parse::<u64>() {
            Ok(value) if plain => Ok(value),
            _ => Err(format!(
                "the .npy shape has {:?} at byte {start}, not a length",
                String::from_utf8_lossy(word)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn one_dimensional_arrays_of_every_type() {
        let file = npy("<i4", "(2,)", &[1, 0, 0, 0, 2, 0, 0, 0]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!(
            (item_type, &*data),
            (ItemType::Int32, &[1, 0, 0, 0, 2, 0, 0, 0][..])
        );
        let file = npy("|u1", "(3,)", &[7, 8, 9]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!((item_type, &*data), (ItemType::Uint8, &[7, 8, 9][..]));
        let file = npy(">u2", "(1,)", &[1, 2]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!((item_type, &*data), (ItemType::Uint16, &[2, 1][..]));
        let file = npy("<f8", "(0,)", &[]);
        let (item_type, data) = parse(&file).unwrap();
        assert_eq!((item_type, data.len()), (ItemType::Float64, 0));
    }

    /// A file with `header` (padded as numpy pads) at format `version`.
    fn with_header(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let mut header = header.to_owned();
        let prefix = if version == 1 { 10 } else { 12 };
        while (prefix + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[version, 0]);
        if version == 1 {
            bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        } else {
            bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
        }
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    /// Headers numpy reads as the same one-dimensional array: each is
    /// `np.load`ed by numpy 2.x as 2 int32 values (checked by hand).
    #[test]
    fn every_spelling_numpy_reads_the_same_way_is_read() {
        let data = [1, 0, 0, 0, 2, 0, 0, 0];
        for (version, header) in [
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
            ),
            (1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)}"),
            (
                3,
                "{\"shape\": (2,), \"fortran_order\": True, \"descr\": \"<i4\"}",
            ),
            (2, "{'descr':'<i4','fortran_order':False,'shape':( 2 , )}"),
            (
                1,
                "  {'descr': '<i4',\n 'fortran_order': False,\n\t'shape': (2,)}",
            ),
            // Python 2's long integers, which numpy strips in 1.0 and 2.0 headers.
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2L,), }",
            ),
        ] {
            let file = with_header(version, header, &data);
            let (item_type, read) = parse(&file).unwrap_or_else(|why| panic!("{header}: {why}"));
            assert_eq!(
                (item_type, &*read),
                (ItemType::Int32, &data[..]),
                "{header}"
            );
        }
    }

    /// Headers numpy reads differently from a naive reader, or refuses:
    /// each is refused, with the reason.
    #[test]
    fn ambiguous_headers_are_refused() {
        let data = [0u8; 8];
        for (version, header, fragment) in [
            // numpy keeps the last of a repeated key: '<f8', 1 element.
            (
                1,
                "{'descr': '<i4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                "'descr' twice",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'shape': (1,), }",
                "'shape' twice",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'fortran_order': True, 'shape': (2,)}",
                "twice",
            ),
            // numpy refuses any other key.
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                "key \"x\"",
            ),
            (1, "{'descr': '<i4', 'shape': (2,)}", "no 'fortran_order'"),
            // Text after the dict: a syntax error to numpy.
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), } 'shape': (1,)",
                "after its dict",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }}",
                "after its dict",
            ),
            // (2) is the number 2, not a tuple: numpy refuses it.
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2), }",
                "no comma",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (,2), }",
                "not a length",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,,), }",
                "not a length",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': [2], }",
                "no value",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (02,), }",
                "not a length",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2_0,), }",
                "not a length",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (-2,), }",
                "not a length",
            ),
            (
                3,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2L,), }",
                "not a length",
            ),
            // A comment could hide a key from one reader and not the other.
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, # 'shape': (1,)\n 'shape': (2,)}",
                "no quoted string",
            ),
            // Escapes and joined strings change the text Python sees.
            (
                1,
                "{'descr': '<\\x69\\x34', 'fortran_order': False, 'shape': (2,)}",
                "escape",
            ),
            (
                1,
                "{'descr': '<' 'i4', 'fortran_order': False, 'shape': (2,)}",
                "adjacent",
            ),
            (
                1,
                "{'descr': u'<i4', 'fortran_order': False, 'shape': (2,)}",
                "no value",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': Falsey, 'shape': (2,)}",
                "\"Falsey\"",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': 0, 'shape': (2,)}",
                "no value",
            ),
            (
                1,
                "{'descr': ['<i4'], 'fortran_order': False, 'shape': (2,)}",
                "no value",
            ),
            // '|' on a wide type would be the reading host's byte order.
            (
                1,
                "{'descr': '|i4', 'fortran_order': False, 'shape': (2,)}",
                "no byte order",
            ),
            (
                1,
                "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'é': 1}",
                "not ASCII",
            ),
        ] {
            let error = parse(&with_header(version, header, &data)).unwrap_err();
            assert!(error.contains(fragment), "{header}: {error}");
        }
        // Versions numpy does not know, and headers longer than it reads.
        let mut minor = with_header(
            1,
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2,)}",
            &data,
        );
        minor[7] = 1;
        assert!(parse(&minor).unwrap_err().contains("1.1"));
        let long = format!(
            "{{'descr': '<i4', 'fortran_order': False, 'shape': (2,)}}{}",
            " ".repeat(MAX_HEADER)
        );
        assert!(
            parse(&with_header(2, &long, &data))
                .unwrap_err()
                .contains("10000")
        );
    }

    #[test]
    fn anything_else_is_refused_with_a_reason() {
        for (bytes, fragment) in [
            (npy("<i4", "(2, 2)", &[0; 16]), "only one-dimensional"),
            (npy("<i4", "()", &[0; 4]), "only one-dimensional"),
            (
                npy("<c16", "(1,)", &[0; 16]),
                "not one of kastore's ten types",
            ),
            (npy("<i4", "(3,)", &[0; 8]), "needs 12 bytes"),
            (b"PK\x03\x04".to_vec(), "not an .npy file"),
        ] {
            let error = parse(&bytes).unwrap_err();
            assert!(error.contains(fragment), "{error}");
        }
    }
}
