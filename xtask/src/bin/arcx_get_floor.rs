//! The floor of `arcx get` for one small file (`cargo xtask bench arcx`):
//! the least work a process must do to get a file out of an ARCX archive
//! whose layout it already knows. It opens the archive, reads its 40-byte
//! footer and the manifest region, decompresses the manifest (a spec
//! manifest: `MFv2` and one zstd frame), reads and decompresses the file's
//! block, and writes the file's bytes. What the tables say is passed in
//! (found by binfmt beforehand), so nothing is parsed; nothing is checked
//! (no CRC32, no SHA-256): it is the floor, not a reader.
//!
//! ```text
//! arcx_get_floor ARCHIVE MANIFEST_OFFSET MANIFEST_LEN BLOCK_OFFSET BLOCK_STORED BLOCK_SIZE FILE_OFFSET FILE_SIZE OUT
//! ```

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("arcx_get_floor: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [archive, numbers @ .., out] = args.as_slice() else {
        return Err("usage: ARCHIVE MANIFEST_OFFSET MANIFEST_LEN BLOCK_OFFSET BLOCK_STORED BLOCK_SIZE FILE_OFFSET FILE_SIZE OUT".into());
    };
    let numbers = numbers
        .iter()
        .map(|n| n.parse::<u64>())
        .collect::<Result<Vec<_>, _>>()?;
    let [
        manifest_offset,
        manifest_len,
        block_offset,
        block_stored,
        block_size,
        file_offset,
        file_size,
    ] = numbers.as_slice()
    else {
        return Err("seven numbers".into());
    };
    let file = File::open(archive)?;
    let len = file.metadata()?.len();
    let mut footer = [0u8; 40];
    file.read_exact_at(&mut footer, len - 40)?;
    let mut region = vec![0u8; usize::try_from(*manifest_len)?];
    file.read_exact_at(&mut region, *manifest_offset)?;
    let frame = region.get(4..).ok_or("short manifest")?;
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
        .ok_or("manifest frame without a size")?;
    let manifest = zstd::bulk::decompress(frame, usize::try_from(size)?)?;
    let mut stored = vec![0u8; usize::try_from(*block_stored)?];
    file.read_exact_at(&mut stored, block_offset + 4)?;
    let block = zstd::bulk::decompress(&stored, usize::try_from(*block_size)?)?;
    let start = usize::try_from(*file_offset)?;
    let bytes = block
        .get(start..start + usize::try_from(*file_size)?)
        .ok_or("file outside its block")?;
    std::fs::write(out, bytes)?;
    // Keep the manifest's decompression from being optimized away.
    std::hint::black_box(&manifest);
    Ok(())
}
