//! A `.pt2` package: a zip whose CPU model is
//! `<package>/data/aotinductor/<model>/<hash>.wrapper.so`, with `<hash>.wrapper_metadata.json`
//! (`AOTI_DEVICE_KEY`, `AOTI_CPU_ISA`, ...), the wrapper source `<hash>.wrapper.cpp` and, for
//! a model with extern kernels, `<hash>.wrapper.json` beside it.
//!
//! Nothing is extracted to disk. The archive is checked as a whole first (`open`): every
//! entry name is a relative path inside the package (no `..`, no absolute or drive path,
//! no NUL or backslash), no entry is a symbolic link, no two entries share a name (the
//! central directory is walked here: the zip crate keeps the last of a duplicated name),
//! and the metadata parses. Entries are read with bounds that do not trust the sizes the
//! archive declares beyond the archive's own length: text entries (stored or deflated)
//! up to `MAX_TEXT`, the model `.so` stored only and exactly its declared size.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom, Write};

use super::json::Json;
use super::{Bad, Result};

/// The largest text entry read (wrapper source, metadata, extern-kernel JSON).
pub const MAX_TEXT: u64 = 64 << 20;
/// The most entries an archive may list.
const MAX_ENTRIES: u64 = 1 << 20;

/// The chosen CPU model of a package.
#[derive(Debug, Clone)]
pub struct Model {
    /// Entry name of the model `.so`.
    pub so: String,
    /// Its size (stored: the bytes in the archive).
    pub so_size: u64,
    /// The wrapper source, or why it is not usable (missing, unreadable).
    pub source: std::result::Result<String, String>,
    /// `key: value` of the metadata's string members.
    pub metadata: Vec<(String, String)>,
    /// The extern-kernel JSON (`<hash>.wrapper.json`), if shipped.
    pub extern_kernels: Option<String>,
}

fn zip_err(what: &str, e: impl std::fmt::Display) -> Bad {
    Bad::io(format!("{what}: {e}"))
}

/// Why an entry name is refused, if it is.
fn bad_name(name: &[u8]) -> Option<&'static str> {
    let Ok(s) = std::str::from_utf8(name) else {
        return Some("is not UTF-8");
    };
    if s.is_empty() {
        return Some("is empty");
    }
    if s.contains('\0') || s.contains('\\') {
        return Some("has a NUL or backslash");
    }
    if s.starts_with('/') || s.as_bytes().get(1) == Some(&b':') {
        return Some("is an absolute path");
    }
    if s.split('/').any(|c| c == "..") {
        return Some("leaves the package (a '..' component)");
    }
    None
}

fn le16(b: &[u8], i: usize) -> u64 {
    u16::from_le_bytes([b[i], b[i + 1]]) as u64
}

fn le32(b: &[u8], i: usize) -> u64 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as u64
}

fn le64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

fn read_at<R: Read + Seek>(r: &mut R, off: u64, n: usize, what: &str) -> Result<Vec<u8>> {
    let mut b = vec![0u8; n];
    r.seek(SeekFrom::Start(off))
        .and_then(|_| r.read_exact(&mut b))
        .map_err(|e| Bad::io(format!("the archive is truncated ({what}): {e}")))?;
    Ok(b)
}

/// The entry names of the central directory, in order, duplicates included, with whether
/// each is a symbolic link (Unix mode S_IFLNK in the external attributes).
fn central_names<R: Read + Seek>(r: &mut R) -> Result<Vec<(Vec<u8>, bool)>> {
    let len = r
        .seek(SeekFrom::End(0))
        .map_err(|e| zip_err("seeking the archive", e))?;
    let tail_len = len.min(22 + 65535) as usize;
    let tail = read_at(r, len - tail_len as u64, tail_len, "its end")?;
    let Some(e) = (0..tail_len.saturating_sub(21))
        .rev()
        .find(|&i| tail[i..i + 4] == *b"PK\x05\x06")
    else {
        return Err(Bad::io(
            "not a .pt2 package (zip): no end of central directory",
        ));
    };
    let (mut count, mut size, mut offset) = (
        le16(&tail, e + 10),
        le32(&tail, e + 12),
        le32(&tail, e + 16),
    );
    if count == 0xffff || size == 0xffff_ffff || offset == 0xffff_ffff {
        // Zip64: the locator is the 20 bytes before the end record.
        let eocd = len - tail_len as u64 + e as u64;
        if eocd < 20 {
            return Err(Bad::io("the zip64 locator is missing"));
        }
        let loc = read_at(r, eocd - 20, 20, "the zip64 locator")?;
        if loc[..4] != *b"PK\x06\x07" {
            return Err(Bad::io("the zip64 locator is missing"));
        }
        let rec = read_at(r, le64(&loc, 8), 56, "the zip64 end record")?;
        if rec[..4] != *b"PK\x06\x06" {
            return Err(Bad::io("the zip64 end record is malformed"));
        }
        (count, size, offset) = (le64(&rec, 32), le64(&rec, 40), le64(&rec, 48));
    }
    if count > MAX_ENTRIES || offset.checked_add(size).is_none_or(|end| end > len) {
        return Err(Bad::io(format!(
            "the central directory ({count} entries, {size} bytes at {offset}) does not fit the {len}-byte archive"
        )));
    }
    let cd = read_at(r, offset, size as usize, "the central directory")?;
    let mut names = Vec::new();
    let mut i = 0usize;
    for _ in 0..count {
        if i + 46 > cd.len() || cd[i..i + 4] != *b"PK\x01\x02" {
            return Err(Bad::io("the central directory is malformed"));
        }
        let (n, x, c) = (le16(&cd, i + 28), le16(&cd, i + 30), le16(&cd, i + 32));
        let end = i + 46 + n as usize;
        if end + (x + c) as usize > cd.len() {
            return Err(Bad::io("the central directory is malformed"));
        }
        let unix = cd[i + 5] == 3;
        let mode = le32(&cd, i + 38) >> 16;
        names.push((
            cd[i + 46..end].to_vec(),
            unix && mode & 0o170000 == 0o120000,
        ));
        i = end + (x + c) as usize;
    }
    Ok(names)
}

/// The CPU model of the package read by `r` (`path` names it in messages), with its zip.
pub fn open<R: Read + Seek>(mut r: R, path: &str) -> Result<(zip::ZipArchive<R>, Model)> {
    let with_path = |b: Bad| Bad {
        io: b.io,
        msg: format!("'{path}': {}", b.msg),
    };
    let names = central_names(&mut r).map_err(with_path)?;
    let mut seen = HashSet::new();
    for (name, link) in &names {
        let shown = String::from_utf8_lossy(name);
        if let Some(why) = bad_name(name) {
            return Err(with_path(Bad::invalid(format!("entry '{shown}' {why}"))));
        }
        if *link {
            return Err(with_path(Bad::invalid(format!(
                "entry '{shown}' is a symbolic link"
            ))));
        }
        if !seen.insert(name.as_slice()) {
            return Err(with_path(Bad::invalid(format!(
                "entry '{shown}' appears twice"
            ))));
        }
    }
    r.rewind()
        .map_err(|e| with_path(zip_err("seeking the archive", e)))?;
    let mut zip =
        zip::ZipArchive::new(r).map_err(|e| with_path(zip_err("not a .pt2 package (zip)", e)))?;
    let mut sos: Vec<String> = zip
        .file_names()
        .filter(|n| n.contains("/data/aotinductor/") && n.ends_with(".wrapper.so"))
        .map(str::to_string)
        .collect();
    sos.sort();
    let mut chosen: Option<(String, Vec<(String, String)>)> = None;
    let mut others = Vec::new();
    for so in sos {
        let stem = so.trim_end_matches(".so");
        let meta_name = format!("{stem}_metadata.json");
        let text = match read_text(&mut zip, &meta_name) {
            Ok(Some(t)) => t,
            Ok(None) => {
                return Err(with_path(Bad::invalid(format!(
                    "the model {so} has no metadata entry {meta_name}"
                ))))
            }
            Err(b) => return Err(with_path(b)),
        };
        let meta = Json::parse(&text)
            .map_err(|b| with_path(Bad::invalid(format!("entry {meta_name}: {}", b.msg))))?;
        let Json::Object(members) = meta else {
            return Err(with_path(Bad::invalid(format!(
                "entry {meta_name} is not a JSON object"
            ))));
        };
        let strings: Vec<(String, String)> = members
            .into_iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
            .collect();
        let device = strings
            .iter()
            .find(|(k, _)| k == "AOTI_DEVICE_KEY")
            .map(|(_, v)| v.clone());
        match device.as_deref() {
            Some("cpu") => {
                if chosen.is_none() || so.contains("/data/aotinductor/model/") {
                    chosen = Some((so.clone(), strings));
                }
            }
            Some(d) => others.push(format!("{so} ({d})")),
            None => {
                return Err(with_path(Bad::invalid(format!(
                    "entry {meta_name} has no AOTI_DEVICE_KEY"
                ))))
            }
        }
    }
    let Some((so, metadata)) = chosen else {
        return Err(with_path(Bad::invalid(format!(
            "holds no CPU model (<name>/data/aotinductor/<model>/*.wrapper.so); found: [{}]",
            others.join(", ")
        ))));
    };
    let so_size = {
        let e = zip
            .by_name(&so)
            .map_err(|e| with_path(zip_err(&format!("entry {so}"), e)))?;
        if e.compression() != zip::CompressionMethod::Stored {
            return Err(with_path(Bad::invalid(format!(
                "entry {so} is compressed ({:?}); torch stores the model .so uncompressed",
                e.compression()
            ))));
        }
        if e.compressed_size() != e.size() {
            return Err(with_path(Bad::invalid(format!(
                "entry {so} is stored but declares {} bytes uncompressed and {} stored",
                e.size(),
                e.compressed_size()
            ))));
        }
        e.size()
    };
    let stem = so.trim_end_matches(".so").to_string();
    let cpp = format!("{stem}.cpp");
    let source = match read_text(&mut zip, &cpp) {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(format!("the package has no wrapper source {cpp}")),
        Err(b) => Err(b.msg),
    };
    let extern_kernels = read_text(&mut zip, &format!("{stem}.json")).unwrap_or(None);
    Ok((
        zip,
        Model {
            so,
            so_size,
            source,
            metadata,
            extern_kernels,
        },
    ))
}

/// A text entry (stored or deflated), None when the archive has no such entry. Reads at
/// most `MAX_TEXT` bytes whatever the entry declares, and exactly the declared size.
pub fn read_text<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
) -> Result<Option<String>> {
    let Some(i) = zip.index_for_name(name) else {
        return Ok(None);
    };
    let e = zip
        .by_index(i)
        .map_err(|e| zip_err(&format!("entry {name}"), e))?;
    let declared = e.size();
    if declared > MAX_TEXT {
        return Err(Bad::invalid(format!(
            "entry {name} declares {declared} bytes, more than the {MAX_TEXT} read for a text entry"
        )));
    }
    let mut bytes = Vec::with_capacity(declared.min(1 << 20) as usize);
    e.take(declared + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| zip_err(&format!("reading entry {name}"), e))?;
    if bytes.len() as u64 != declared {
        return Err(Bad::io(format!(
            "entry {name} declares {declared} bytes and holds {}",
            bytes.len()
        )));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Bad::invalid(format!("entry {name} is not UTF-8 text")))
}

/// Copies the model `.so` (stored) to `w`: exactly its declared size, verified against the
/// archive (a short entry, a CRC mismatch: IO).
pub fn copy_so<R: Read + Seek, W: Write>(
    zip: &mut zip::ZipArchive<R>,
    model: &Model,
    w: &mut W,
) -> Result<u64> {
    let so = &model.so;
    let e = zip
        .by_name(so)
        .map_err(|e| zip_err(&format!("entry {so}"), e))?;
    let n = std::io::copy(&mut e.take(model.so_size + 1), w)
        .map_err(|e| zip_err(&format!("reading entry {so}"), e))?;
    if n != model.so_size {
        return Err(Bad::io(format!(
            "entry {so} declares {} bytes and holds {n}",
            model.so_size
        )));
    }
    Ok(n)
}

/// The ops a model runs through libtorch's proxy executor, named by its extern-kernel JSON
/// (`{"nodes": [{"node": {"target": "torchvision::nms", ...}}, ...]}`).
pub fn extern_ops(json: &str) -> Result<Vec<String>> {
    let v = Json::parse(json)?;
    let Some(Json::Array(nodes)) = v.get("nodes") else {
        return super::invalid("no \"nodes\" array");
    };
    let mut ops: Vec<String> = nodes
        .iter()
        .filter_map(|n| n.get("node")?.get("target")?.as_str().map(str::to_string))
        .collect();
    ops.dedup();
    Ok(ops)
}
