//! TARIDX folds built from structure, so that what random bytes almost
//! never reach is reachable: shards of regular files, directories, pax
//! records (paths and sizes, consistent or not) and GNU long names; an
//! index built from them, then edited one meaning at a time (rows aliasing
//! one member, overlapping or misaligned offsets, wrong sizes, keys,
//! extensions and crash ids, fids out of range, huge text blocks, lying
//! counts and flags). Every member is read before verify; nothing may
//! panic, and allocations stay within the libFuzzer limits.
#![no_main]

use arbitrary::Arbitrary;
use binfmt_tests::build::taridx as builder;

#[path = "../../tests/exercise.rs"]
mod exercise;

#[derive(Debug, Arbitrary)]
enum Name {
    Short { key: u8, ext: u8 },
    Dotted { key: u8 },
    Long { key: u8, repeat: u8 },
    NonAscii { key: u8 },
    Raw(Vec<u8>),
}

impl Name {
    fn bytes(&self) -> Vec<u8> {
        const EXTS: [&str; 5] = ["jpg", "cls", "seg.png", "", "JSON"];
        match self {
            Self::Short { key, ext } => {
                let ext = EXTS[usize::from(*ext) % EXTS.len()];
                if ext.is_empty() {
                    format!("d{}/{key}", key % 3).into_bytes()
                } else {
                    format!("d{}/{key}.{ext}", key % 3).into_bytes()
                }
            }
            Self::Dotted { key } => format!("./{key}.jpg").into_bytes(),
            Self::Long { key, repeat } => {
                format!("{}{key}.txt", "long/".repeat(usize::from(*repeat) % 60)).into_bytes()
            }
            Self::NonAscii { key } => format!("caf\u{e9}/{key}.\u{65e5}").into_bytes(),
            Self::Raw(bytes) => bytes.iter().take(300).copied().collect(),
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Piece {
    File { name: Name, size: u16 },
    Dir { name: Name },
    Pax { path: Option<Name>, size: Option<u32> },
    LongName { name: Name },
    Raw { typeflag: u8, size: u16 },
}

#[derive(Debug, Arbitrary)]
enum Edit {
    Alias { row: u8, to: u8 },
    Offset { row: u8, delta: i16 },
    Size { row: u8, size: u64 },
    Ext { row: u8, extid: u16 },
    Crash { row: u8, crashid: u32 },
    Key { row: u8, keyhash: u64 },
    Fid { row: u8, fid: u16 },
    Duplicate { row: u8 },
    Drop { row: u8 },
    CrashLines { lines: u32, count: u32 },
    ExtLines { lines: u16, count: u32 },
    Stems(u64),
    Flags(u8),
}

#[derive(Debug, Arbitrary)]
struct Fold {
    shards: Vec<Vec<Piece>>,
    webdataset_keys: bool,
    edits: Vec<Edit>,
}

fn shard(pieces: &[Piece]) -> Vec<u8> {
    let mut tar = builder::Tar::new();
    for piece in pieces.iter().take(64) {
        match piece {
            Piece::File { name, size } => {
                let data = vec![0x5a; usize::from(*size) % 3000];
                tar.block(builder::header(&name.bytes(), data.len() as u64, b'0'))
                    .data(&data);
            }
            Piece::Dir { name } => {
                tar.block(builder::header(&name.bytes(), 0, b'5'));
            }
            Piece::Pax { path, size } => {
                let path = path.as_ref().map(Name::bytes);
                let size = size.map(|size| size.to_string());
                let mut records: Vec<(&str, &[u8])> = Vec::new();
                if let Some(path) = &path {
                    records.push(("path", path));
                }
                if let Some(size) = &size {
                    records.push(("size", size.as_bytes()));
                }
                tar.pax(&records);
            }
            Piece::LongName { name } => {
                tar.gnu_long_name(&String::from_utf8_lossy(&name.bytes()));
            }
            Piece::Raw { typeflag, size } => {
                let data = vec![0; usize::from(*size) % 2048];
                tar.block(builder::header(b"raw", data.len() as u64, *typeflag))
                    .data(&data);
            }
        }
    }
    tar.finish()
}

fn row(rows: &mut [builder::RawRow], at: u8) -> Option<&mut builder::RawRow> {
    let len = rows.len();
    (len > 0).then(|| &mut rows[usize::from(at) % len])
}

libfuzzer_sys::fuzz_target!(|fold: Fold| {
    let shards: Vec<Vec<u8>> = fold.shards.iter().take(4).map(|p| shard(p)).collect();
    let rule = if fold.webdataset_keys {
        binfmt_taridx::KeyRule::WebDataset
    } else {
        binfmt_taridx::KeyRule::Glzn
    };
    let mut index = binfmt_taridx::IndexBuilder::new(rule);
    for (fid, bytes) in shards.iter().enumerate() {
        for member in binfmt_taridx::tar::scan(bytes).unwrap_or_default() {
            let _ = index.add(fid as u16, member);
        }
    }
    // A name the index cannot hold is refused by the builder.
    let Ok(bytes) = index.to_bytes() else {
        return;
    };
    let mut raw = builder::RawIndex::parse(&bytes);
    for edit in fold.edits.iter().take(8) {
        match *edit {
            Edit::Alias { row: a, to } => {
                let len = raw.rows.len();
                if len > 0 {
                    let target = raw.rows[usize::from(to) % len];
                    if let Some(r) = row(&mut raw.rows, a) {
                        r.fid = target.fid;
                        r.offset = target.offset;
                    }
                }
            }
            Edit::Offset { row: at, delta } => {
                if let Some(r) = row(&mut raw.rows, at) {
                    r.offset = r.offset.wrapping_add_signed(i64::from(delta));
                }
            }
            Edit::Size { row: at, size } => {
                if let Some(r) = row(&mut raw.rows, at) {
                    r.size = size;
                }
            }
            Edit::Ext { row: at, extid } => {
                if let Some(r) = row(&mut raw.rows, at) {
                    r.extid = extid;
                }
            }
            Edit::Crash { row: at, crashid } => {
                if let Some(r) = row(&mut raw.rows, at) {
                    r.crashid = crashid;
                }
            }
            Edit::Key { row: at, keyhash } => {
                if let Some(r) = row(&mut raw.rows, at) {
                    r.keyhash = keyhash;
                }
            }
            Edit::Fid { row: at, fid } => {
                if let Some(r) = row(&mut raw.rows, at) {
                    r.fid = fid;
                }
            }
            Edit::Duplicate { row: at } => {
                if let Some(r) = row(&mut raw.rows, at).copied() {
                    raw.rows.push(r);
                }
            }
            Edit::Drop { row: at } => {
                let len = raw.rows.len();
                if len > 0 {
                    raw.rows.remove(usize::from(at) % len);
                }
            }
            Edit::CrashLines { lines, count } => {
                let lines = (lines % (1 << 20)) as usize;
                raw.crash_block = b"\n".repeat(lines);
                raw.header.n_crash = count;
            }
            Edit::ExtLines { lines, count } => {
                raw.ext_block = b"jpg\n".repeat(usize::from(lines));
                raw.header.n_ext = count;
            }
            Edit::Stems(n) => raw.header.n_stems = n,
            Edit::Flags(flags) => raw.header.flags = flags,
        }
    }
    let bytes = raw.bytes();
    let shards = binfmt_taridx::ShardBytes::new(shards);
    let _ = exercise::read_taridx(bytes.clone(), Some(&shards));
    let _ = exercise::read_taridx(bytes, None);
});
