//! The drop-in API: the names and signatures of `parcode` 0.6.1, over the
//! typed layer (`typed`) and the raw chunk tree (`raw`).
//!
//! ```text
//! api        Parcode, ParcodeOptions ──▶ file, inspector, visitor, native
//! file       ParcodeFile (a ParFile) ──▶ native, promise
//! inspector  DebugReport ──▶ file
//! visitor    ParcodeVisitor (writing) ──▶ job, fields
//! promise    ParcodeLazyRef, promises (lazy reading) ──▶ native, fields
//! native     ParcodeNative, ParcodeItem (eager reading) ──▶ fields
//! job        SerializationJob, JobConfig, TaskGraph::add_node
//! fields     the derive's field helpers
//! compressor Compressor
//! error      ParcodeError (wraps ParError)
//! ```

#![forbid(unsafe_code)]

pub mod api;
pub mod compressor;
pub mod error;
pub mod fields;
pub mod file;
pub mod inspector;
pub mod job;
pub mod native;
pub mod promise;
pub mod visitor;
